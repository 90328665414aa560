"""Exact discrete Laplace sampling at float speed, and a fixed-work (timing-safe) mode.

Why not ``x + rng.laplace(...)``: doubles near x + noise are spaced unevenly, so the
set of doubles a continuous sampler can output depends on x, and an output set of
probability > 0 under x can have probability exactly 0 under a neighbour x′: pure
ε-DP fails outright (Mironov 2012).  Discrete Laplace noise on integers has full
support Z whatever the input; the sampler below draws it *exactly*.

Scales are rationals σ = t / s with s = 2^16 and t = floor(scale · 2^16) + 2, i.e.
the requested scale rounded *up* by at most 2^-15: callers pass scale = Δ / ε
computed in one float division (relative error <= 2^-53, absolute error below
2^-16 while scale < 2^36), so t / s > Δ / ε and the achieved ε = Δ s / t is
strictly below the requested one.  ``exact_scale`` returns t / s.

The law, by inversion.  With p = exp(−1/σ), Z = ±M has P(Z = k) = (1 − p)/(1 + p) p^|k|
when the magnitude M has the tail τ_K = P(M >= K) = c p^K for K >= 1 (c = 2/(1 + p),
τ_0 = 1) and the sign is a fair coin independent of M (M = 0 takes either sign:
P(Z = 0) = 1 − τ_1 = (1 − p)/(1 + p), and P(Z = ±k) = (τ_k − τ_{k+1})/2).  For U
uniform on [0, 1), M = #{K >= 1 : U < τ_K} has exactly that tail.  Each draw takes
one 64-bit word from ``rng``: its top bit is the sign, the other 63 are the leading
bits W of U = (W + V)/2^63, V in [0, 1) the later bits, drawn only when needed.

Exact at float speed (the fast path, default).  A float guess K̂ from log U, then two
*certified* comparisons decide U < τ_K̂ and U >= τ_{K̂+1} from W alone.  The
thresholds are products of c and powers p^(2^j) read from small tables, each the
correctly rounded double of a value known to relative 2^-70 (``_law``: ``decimal``'s
correctly rounded exp, then fixed-point integer squaring), and every float operation
is IEEE-754 correctly rounded: so the computed threshold is within relative error
(1 + 2^-53)^(2n) − 1 of the true one, n bounding both the count of constants and of
roundings, whatever numpy's log did (the log only guesses).  The comparisons keep a
margin η = (2n + 8) 2^-53 beyond that bound, so a comparison that passes is true of
the real numbers.  Where either fails (the guess was off, or U is within η of a
threshold: probability about 4 η σ per draw, 2.5e-10 at σ = 10^4), the element goes
to an exact slow path:
the same inversion with ``decimal`` bounds of τ_K of growing precision against U
refined by further 64-bit words, until the comparison is decided (τ_K is
transcendental, so U ≠ τ_K and this ends with probability 1).  The law is therefore
exactly the discrete Laplace law; floating point only decides how fast.  Thresholds
below 2^-1022 (underflow) are never used to certify: a certified "U < τ" needs the
computed τ >= 2^-62, and "U >= τ" is certified against a τ that, if it underflowed,
is below 2^-900 <= U (W >= 1).

Work and reproducibility.  Every element costs one word and a fixed sequence of
vector operations; the slow path is rare.  Words are drawn chunk by chunk in element
order and the slow path runs after all chunks, so the stream is a function of the
seed, the scales and the shape only.  The bytes differ from the Canonne–Kamath–Steinke
(2020) rejection sampler used before (same law, different use of the stream).

Timing-safe mode (``timing_safe=True``).  The fast path's rare slow path runs only
on certain uniforms, and its table reads hit addresses that depend on K̂: an observer
of one user's response time learns (a little) about the noise.  The CKS sampler
before it ran ≈ |noise| / σ rounds, which a response time reveals outright
(issue 28: ε lower bound 8.03 from report + CPU time, 0.98 from the report).  With
``timing_safe=True`` each draw does fixed work: one word, then a bitwise search for
M from the top bit down, K ← K + 2^j iff U < τ_{K + 2^j}, each τ the running product
c p^K 2^63 times p^(2^j) — B steps of the same vector operations for every element
(B set by the scale), no data-dependent loop, branch, table address or slow path.
The comparisons are float comparisons without a slow path, so the output law is the
exact law except when U falls within the rounding margin of a threshold it is
compared with, or below 2^-52 (where all deep-tail thresholds, the truncation at
2^B − 1 and the unresolved uniforms lie).  ``timing_safe_tv`` bounds the probability
of that event per draw, i.e. the total-variation distance to the exact law (about
2 η′ σ: 7.9e-15 at σ = 2, 9.3e-11 at σ = 10^4, 1.3e-3 at the largest scale 2^36).  An
ε-DP mechanism whose noise comes from this mode is (ε, δ)-DP with
δ = (1 + e^ε) Σ tv over the draws of one report (``timing_safe_delta``), and the
response time adds nothing: it is a function of the scales and shapes only.
Residual channels outside this model: the CPU's own data-dependent timing
(subnormal operands, which occur only for σ < 1/700, and cache state).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

import numpy as np

DENOMINATOR = 2**16
MAX_SCALE = 2.0**36
UNIT = 2.0**-53  # unit roundoff of a double
CHUNK = 1 << 15  # elements per vector pass: temporaries stay in L2 (best of 2^13..2^20)
TOP = 2.0**63  # U's leading word W counts units of 2^-63
MAX_TABLE_BITS = 13  # the largest table, 2^13 doubles, fits in L2
FIXED = 192  # fractional bits of the fixed-point powers of p
TAIL_CUT = 2.0**-52  # timing-safe mode concedes every uniform below this (see timing_safe_tv)
_MASK63 = np.uint64(2**63 - 1)


def _rational(scale) -> np.ndarray:
    scale = np.asarray(scale, dtype=float)
    if not (np.isfinite(scale).all() and (scale > 0).all() and (scale < MAX_SCALE).all()):
        raise ValueError(f"discrete Laplace scale must be in (0, 2^36), got {scale}")
    return np.floor(scale * DENOMINATOR).astype(np.int64) + 2


def exact_scale(scale) -> np.ndarray | float:
    """The scale actually used for a requested ``scale`` (t / 2^16 >= scale)."""
    t = _rational(scale)
    out = t / DENOMINATOR
    return float(out) if out.ndim == 0 else out


class _Law(NamedTuple):
    """Constants of the scale t / 2^16: the guess's slope and offset, the magnitude bits B
    (every guess is < 2^B), c 2^63 and P_j = p^(2^j) as correctly rounded doubles."""

    sigma: float
    offset: float
    bits: int
    c_top: float
    powers: np.ndarray
    p: float


# P_j for j < 56: the tables read P_j up to j = b L <= B + 12 <= 54 (B <= 42 below the largest scale)
POWERS = 56


@lru_cache(maxsize=1 << 14)
def _law(t: int) -> _Law:
    """p = exp(−s/t) from ``decimal`` (correctly rounded at 60 digits: relative error < 10^-57 while
    p >= 2^-70), then the powers as 192-bit fixed-point integers: a squaring q² >> 192 doubles the
    relative error and adds at most 2^-192 absolute, so while a power is >= 2^-70 (the only ones a
    certified threshold uses) its relative error stays below 2^48 (10^-57 + 2^-122) < 2^-70;
    Python's int / int division rounds them to doubles correctly."""
    sigma = t / DENOMINATOR  # exact: t < 2^53
    with localcontext() as ctx:
        ctx.prec = 60
        p = (-(Decimal(DENOMINATOR) / Decimal(t))).exp()
        fixed = int((p * (1 << FIXED)).to_integral_value())
    one = 1 << FIXED
    c_top = (one << 64) / (one + fixed)  # 2 / (1 + p) 2^63, correctly rounded
    log_c = math.log(c_top / TOP)
    # the largest guess is sigma (ln c + 64 ln 2) (W = 0); slack for the float log
    kmax = int(sigma * (log_c + 64 * math.log(2)) * (1 + 2.0**-30)) + 2
    bits = kmax.bit_length()
    powers = np.zeros(POWERS)
    q = fixed
    # beyond bits + 4 the powers are below 2^-1024: zero is their double (and never certifies)
    for j in range(min(bits + 5, POWERS)):
        powers[j] = q / one
        q = (q * q) >> FIXED
    return _Law(sigma, log_c + 63 * math.log(2), bits, c_top, powers, fixed / one)


def clear_law_cache() -> None:
    """Forget every cached law: the cold start of a new process (perf/bench_sampling.py times it)."""
    _law.cache_clear()


def words(rng: np.random.Generator, n: int) -> np.ndarray:
    """n uniform 64-bit words (numpy's full-range path returns the bit generator's raw words)."""
    return rng.integers(0, 2**64 - 1, size=n, endpoint=True, dtype=np.uint64)


class _LazyUniform:
    """U = (W + V) / 2^63 with W known and the bits of V drawn from ``rng`` only as needed."""

    def __init__(self, leading: int, rng: np.random.Generator):
        self.num, self.bits, self._rng = leading, 63, rng

    def below(self, bounds) -> bool:
        """U < x exactly, for a real x != U given by ``bounds(digits)`` -> (lo, hi), lo <= x <= hi,
        an interval that shrinks as ``digits`` grows: refine U or x until the interval decides."""
        digits = 40
        lo, hi = bounds(digits)
        while True:
            if Fraction(self.num + 1, 1 << self.bits) <= lo:
                return True
            if Fraction(self.num, 1 << self.bits) >= hi:
                return False
            if Fraction(1, 1 << self.bits) > hi - lo:  # U is the coarser: 64 more bits
                self.num = (self.num << 64) | int(words(self._rng, 1)[0])
                self.bits += 64
            else:
                digits *= 2
                lo, hi = bounds(digits)


def _decimal_bounds(value: Decimal, relative: Fraction) -> tuple[Fraction, Fraction]:
    v = Fraction(value)
    return v * (1 - relative), v * (1 + relative)


def _tail_bounds(t: int, k: int):
    """bounds(digits) of τ_k = 2 exp(−k s/t) / (1 + exp(−s/t)), k >= 1.  Every decimal operation is
    correctly rounded (relative error <= 5·10^-digits); rounding the exponents a = k s/t and s/t
    moves the exponentials by relative a·5·10^-digits: (a + s/t + 10)·10^(1−digits) covers all."""

    def bounds(digits: int):
        with localcontext() as ctx:
            ctx.prec = digits
            one = (-(Decimal(DENOMINATOR) / Decimal(t))).exp()
            value = 2 * (-(Decimal(k * DENOMINATOR) / Decimal(t))).exp() / (1 + one)
        slack = math.ceil((k + 1) * DENOMINATOR / t) + 10
        return _decimal_bounds(value, Fraction(slack, 10 ** (digits - 1)))

    return bounds


def _exp_bounds(m: int):
    """bounds(digits) of exp(−m) (one correctly rounded decimal operation)."""

    def bounds(digits: int):
        with localcontext() as ctx:
            ctx.prec = digits
            value = Decimal(-m).exp()
        return _decimal_bounds(value, Fraction(1, 10 ** (digits - 1)))

    return bounds


def _exact_magnitude(leading: int, guess: int, t: int, rng: np.random.Generator) -> int:
    """M = #{K >= 1 : U < τ_K} by exact comparisons, walking from the guess (the slow path)."""
    u = _LazyUniform(leading, rng)
    k = guess
    while k > 0 and not u.below(_tail_bounds(t, k)):
        k -= 1
    while u.below(_tail_bounds(t, k + 1)):
        k += 1
    return k


def _margin(factors: int) -> float:
    """η for thresholds built from ``factors`` correctly rounded constants and as many roundings:
    their relative error is <= (1 + 2^-53)^(2 factors) − 1 < 2.0001 factors 2^-53; the comparisons
    add at most 4 roundings.  A multiple of 2^-52, so 1 − η and 1 + η are exact doubles."""
    return math.ceil((2 * factors + 8) / 2) * 2.0**-52


def _levels(bits: int, n: int, scales: int) -> tuple[int, int]:
    """(b, L): magnitudes split into L digits of b bits, b L >= bits.  One scale: the fewest levels
    with tables of at most 2^13 entries.  Many scales: tables small against the elements they serve."""
    if scales == 1:
        levels = -(-bits // MAX_TABLE_BITS)
        return -(-bits // levels), levels
    b = max(1, min(MAX_TABLE_BITS, bits, int(math.log2(max(n / (4 * scales), 2)))))
    return b, -(-bits // b)


def _power_table(powers: np.ndarray, b: int, level: int) -> np.ndarray:
    """p^(d 2^(b level)) for d = 0 … 2^b, per scale (rows), each a product of popcount(d) powers."""
    table = np.ones((len(powers), 2**b + 1))
    for i in range(b):
        table[:, 2**i : 2 ** (i + 1)] = table[:, : 2**i] * powers[:, [b * level + i]]
    table[:, 2**b] = powers[:, b * (level + 1)]
    return table


class _Constants(NamedTuple):
    """What a call needs about its distinct scales, cached: per scale (rows) σ, the guess offset,
    c 2^63 and the powers P_j; the magnitude bits B over all of them."""

    sigma: np.ndarray
    offset: np.ndarray
    c_top: np.ndarray
    powers: np.ndarray
    bits: int


@lru_cache(maxsize=64)
def _constants(ts: tuple[int, ...]) -> _Constants:
    laws = [_law(t) for t in ts]
    return _Constants(
        np.array([law.sigma for law in laws]),
        np.array([law.offset for law in laws]),
        np.array([law.c_top for law in laws]),
        np.stack([law.powers for law in laws]),
        max(law.bits for law in laws),
    )


@lru_cache(maxsize=64)
def _fast_tables(ts: tuple[int, ...], b: int, levels: int, eta: float):
    """(lo0, hi0, higher) of the fast path with margin η, flattened per scale row: the level-0
    thresholds for U < τ_K and U >= τ_(K+1) and the higher levels' powers (``_fast_magnitudes``)."""
    const = _constants(ts)
    lower = _power_table(const.powers, b, 0)
    lo0 = (const.c_top * (1 - eta))[:, None] * lower[:, :-1]  # c 2^63 (1 − η) p^d: certifies U < τ_K
    hi0 = (const.c_top * (1 + eta))[:, None] * lower[:, 1:]  # c 2^63 (1 + η) p^(d+1): U >= τ_(K+1)
    higher = tuple(_power_table(const.powers, b, level)[:, :-1].ravel() for level in range(1, levels))
    return lo0.ravel(), hi0.ravel(), higher


class _Scales:
    """The distinct scales t of one call, their constants, and each element's row (None: one scale)."""

    def __init__(self, t_all: np.ndarray):
        if t_all.size == 0 or bool((t_all == t_all[0]).all()):
            self.t = (int(t_all[0]) if t_all.size else 2,)
            self.index = None
        else:
            distinct, self.index = _distinct(t_all)
            self.t = tuple(distinct.tolist())
        self.const = _constants(self.t)

    def per_element(self, values: np.ndarray, where: slice):
        return values[0] if self.index is None else values[self.index[where]]


def _distinct(t_all: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(t_all, return_inverse=True) without sorting all of t_all when few values occur
    (a scale per coordinate): the distinct values of a sample, checked to cover every element."""
    sample = np.unique(t_all[:: max(1, t_all.size // 4096)])
    if sample.size <= 64:
        index = np.minimum(np.searchsorted(sample, t_all), sample.size - 1)
        if (sample[index] == t_all).all():
            return sample, index
    return np.unique(t_all, return_inverse=True)


def discrete_laplace(scale, rng: np.random.Generator, size=None, *, timing_safe: bool = False) -> np.ndarray:
    """Integers Z with P(Z = k) ∝ exp(−|k| / exact_scale(scale)), int64 (see the module docstring).

    ``scale`` is a number or an array (one scale per element); ``size`` the output shape
    (default: the shape of ``scale``).  ``timing_safe=True``: fixed work per draw, the law
    within total variation ``timing_safe_tv(scale)`` of the exact one per draw.
    """
    t_all = _rational(scale)
    shape = np.shape(t_all) if size is None else (size if isinstance(size, tuple) else (int(size),))
    t_all = np.broadcast_to(t_all, shape).ravel()
    n = t_all.size
    scales = _Scales(t_all)
    out = np.empty(n, dtype=np.int64)
    if timing_safe:
        _fixed_work_magnitudes(scales, rng, out)
        return out.reshape(shape)
    slow = _fast_magnitudes(scales, rng, out)
    for i, leading, guess, negative in zip(*slow, strict=True):  # after every chunk: the stream order is fixed
        t = scales.t[0 if scales.index is None else scales.index[i]]
        magnitude = _exact_magnitude(int(leading), int(guess), t, rng)
        out[i] = -magnitude if negative else magnitude
    return out.reshape(shape)


def _split(words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sign, W, W as a double) of each word: the top bit is the sign, the other 63 lead U."""
    leading = words & _MASK63
    return words > _MASK63, leading, leading.astype(np.float64)


def _fast_magnitudes(scales: _Scales, rng: np.random.Generator, out: np.ndarray):
    """Signed draws into ``out``; returns (index, W, guess, sign) of the elements left to the slow path."""
    n = out.size
    const = scales.const
    b, levels = _levels(const.bits, n, len(scales.t))
    # thresholds from <= b L + 1 constants and b L + L + 1 roundings (module docstring)
    lo0, hi0, higher = _fast_tables(scales.t, b, levels, _margin(b * levels + levels + 2))
    digit = (1 << b) - 1
    slow = []
    for start in range(0, n, CHUNK):
        part = slice(start, min(start + CHUNK, n))
        negative, leading, w = _split(words(rng, part.stop - start))
        guess = (
            scales.per_element(const.sigma, part) * (scales.per_element(const.offset, part) - np.log(w + 0.5))
        ).astype(np.int64)
        base = 0 if scales.index is None else scales.index[part] << b
        d = (guess & digit) + base
        lo, hi = lo0[d], hi0[d]
        for level, table in enumerate(higher, start=1):
            factor = table[((guess >> (b * level)) & digit) + base]
            lo *= factor
            hi *= factor
        # U < τ_K: (W + 1) 2^-63 <= τ_K;  U >= τ_(K+1): W 2^-63 >= τ_(K+1) (strict: W = 0 never certifies)
        certified = (w + 2.0 <= lo) & (w > hi)
        out[part] = np.where(negative, -guess, guess)
        if not certified.all():
            left = np.flatnonzero(~certified)
            slow.append((left + start, leading[left], guess[left], negative[left]))
    if not slow:
        return (), (), (), ()
    return tuple(np.concatenate(column) for column in zip(*slow, strict=True))


def _fixed_work_magnitudes(scales: _Scales, rng: np.random.Generator, out: np.ndarray) -> None:
    """Signed draws into ``out`` by the bitwise search: the same B steps for every element."""
    n = out.size
    const = scales.const
    for start in range(0, n, CHUNK):
        part = slice(start, min(start + CHUNK, n))
        negative, _, w = _split(words(rng, part.stop - start))
        running = np.broadcast_to(scales.per_element(const.c_top, part), w.shape).copy()
        magnitude = np.zeros(w.shape)
        for j in reversed(range(const.bits)):
            candidate = running * scales.per_element(const.powers[:, j], part)
            take = (w < candidate).astype(np.float64)  # U < τ_(K + 2^j), up to rounding
            # an arithmetic select (exact: one term is multiplied by 0, the other by 1), no branch
            running = take * candidate + (1.0 - take) * running
            magnitude += take * 2.0**j
        out[part] = (1 - 2 * negative.astype(np.int64)) * magnitude.astype(np.int64)


def timing_safe_tv(scale) -> np.ndarray | float:
    """Per draw of ``discrete_laplace(scale, timing_safe=True)``: a bound on the total-variation
    distance of its law from the exact discrete Laplace law.

    The bitwise search returns the exact inversion M unless one of its comparisons is wrong or M
    exceeds its range.  A comparison with τ_K is computed from at most B + 1 correctly rounded
    constants and B roundings, and W rounded to a double: it can be wrong only if U 2^63 lies in
    [τ_K 2^63 (1 − η′) − 2, τ_K 2^63 (1 + η′) + 2], η′ = (2B + 4) 2^-53, probability
    2 η′ τ_K + 2^-61.  Summed over the K1 thresholds above TAIL_CUT (Σ_{K>=1} τ_K = 2p / (1 − p²)),
    plus U < TAIL_CUT (1 + η′) + 2^-62, which holds every window below, the truncation at
    2^B > K_max (τ_(2^B) < 2^-64) and the uniforms W = 0.
    """
    t = _rational(scale)
    flat = [_timing_safe_tv(int(x)) for x in t.ravel()]
    return flat[0] if t.ndim == 0 else np.array(flat).reshape(t.shape)


@lru_cache(maxsize=1 << 14)
def _timing_safe_tv(t: int) -> float:
    law = _law(t)
    eta = (2 * law.bits + 4) * UNIT
    p = law.p
    c = law.c_top / TOP
    above_cut = math.floor(law.sigma * math.log(c / TAIL_CUT)) + 1 if c > TAIL_CUT else 0
    tail_sum = 2 * p / (1 - p * p) if p < 1 else float("inf")
    bound = 2 * eta * tail_sum + above_cut * 2.0**-61 + TAIL_CUT * (1 + eta) + 2.0**-62
    return bound * (1 + 1e-6)  # the float evaluation of this bound, rounded up generously


def timing_safe_delta(scales, epsilon: float) -> float:
    """δ of an ε-DP release whose noise is one timing-safe draw per entry of ``scales`` (the
    draws of ONE report): δ = (1 + e^ε) Σ tv.  If every output law is within total variation
    tv of the exact mechanism's, P'(S) <= P(S) + tv <= e^ε P(S′) + tv <= e^ε (P'(S′) + tv) + tv;
    the response time is a function of the public scales and shapes, so it adds nothing."""
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon}")
    return float((1 + math.exp(epsilon)) * np.sum(timing_safe_tv(scales)))


# timing_safe coins decide U < e^-m by one float comparison: wrong only if U 2^63 is within
# 2 + 4 ulps of e^-m 2^63 (m <= 64: <= 4 2^-53 e^-1 + 2^-61) or U < e^-64 < 2^-92 (m > 64)
BERNOULLI_TIMING_SAFE_TV = 2.0**-51


def bernoulli_exp_integer(m, rng: np.random.Generator, timing_safe: bool = False) -> np.ndarray:
    """Bernoulli(exp(−m)) per element of the integers m >= 0, exactly: U < e^-m certified against
    correctly rounded e^-m 2^63 (margin 12 ulps) from the 63 leading bits of one word, the rare
    undecided U (within the margin, or W = 0) by ``_LazyUniform`` against decimal bounds.
    ``timing_safe``: the float comparison decides every draw (one word, fixed work), each within
    total variation BERNOULLI_TIMING_SAFE_TV of exact."""
    m = np.asarray(m, dtype=np.int64).ravel()
    if (m < 0).any():
        raise ValueError("bernoulli_exp_integer needs integers m >= 0")
    _, leading, w = _split(words(rng, m.size))
    exp_top = _EXP_TOP[np.minimum(m, _EXP_TOP.size - 1)]
    if timing_safe:
        return (w < exp_top) | (m == 0)
    eta = _margin(2)
    # beyond the table (m > 64) e^-64 is an upper bound of e^-m, and "yes" needs e^-64 2^63 >= 2: never
    yes = (w + 2.0 <= exp_top * (1 - eta)) | (m == 0)
    no = w > exp_top * (1 + eta)
    out = yes.copy()
    for i in np.flatnonzero(~(yes | no)):
        out[i] = _LazyUniform(int(leading[i]), rng).below(_exp_bounds(int(m[i])))
    return out


def _exp_table(size: int) -> np.ndarray:
    with localcontext() as ctx:
        ctx.prec = 40
        return np.array([float(Decimal(-m).exp()) * TOP for m in range(size)])


_EXP_TOP = _exp_table(65)
