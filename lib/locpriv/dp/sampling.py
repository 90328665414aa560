"""Exact discrete Laplace sampling (Canonne, Kamath & Steinke 2020, Alg. 1 and 2), vectorised.

Why not ``x + rng.laplace(...)``: doubles near x + noise are spaced unevenly, so the
set of doubles a continuous sampler can output depends on x, and an output set of
probability > 0 under x can have probability exactly 0 under a neighbour x′: pure
ε-DP fails outright (Mironov 2012).  Discrete Laplace noise on integers has full
support Z whatever the input, and the sampler below is *exact*: it uses only
uniform integers from the seeded generator (``Generator.integers``, which is
unbiased) and integer comparisons, no floating point, so the output law is the
discrete Laplace law exactly, P(k) ∝ exp(−|k| / scale).

Scales are rationals t / s with s = 2^16 and t = floor(scale · 2^16) + 2, i.e.
the requested scale rounded *up* by at most 2^-15: callers pass scale = Δ / ε
computed in one float division (relative error <= 2^-53, absolute error below
2^-16 while scale < 2^36), so t / s > Δ / ε and the achieved ε = Δ s / t is
strictly below the requested one.  ``exact_scale`` returns t / s.

Everything is vectorised over elements: Python loops run over rejection rounds
(a few dozen at most; a round accepts each element with probability >= e^-1 / 2), never over users.
The number of draws taken from ``rng`` depends on the sampled values, but the
whole stream is a function of the generator's seed, so the output is reproducible.
"""

from __future__ import annotations

import numpy as np

DENOMINATOR = 2 ** 16
MAX_SCALE = 2.0 ** 36


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


def _uniform(high, size: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform integers on {0, …, high − 1}: Generator.integers (unbiased) with a scalar bound in
    32 bits where it fits (twice as fast as 64; uint32 values mix with int64 exactly), else 64 bits."""
    if np.ndim(high) == 0 and high <= 2 ** 32:
        return rng.integers(0, high, size=size, dtype=np.uint32)
    return rng.integers(0, high, size=size, dtype=np.int64)


def bernoulli_exp(num: np.ndarray, den: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli(exp(−num/den)) per element for integers 0 <= num <= den (CKS 2020 Alg. 1, γ <= 1).

    Draw A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the first A_k = 0; return 1 iff that k is
    odd.  P(first zero at k) = γ^(k−1)/(k−1)! − γ^k/k!, so P(k odd) = Σ_j (−γ)^j / j! = e^−γ.
    Bernoulli(num / (den k)) is an integer comparison with a uniform integer in [0, den k).
    """
    num = np.asarray(num, dtype=np.int64).ravel()
    den = np.asarray(den, dtype=np.int64)
    # one denominator for all: a scalar bound, far faster in Generator.integers than an array bound
    shared = den.size == 1 or bool((den == den.flat[0]).all())
    den = int(den.flat[0]) if shared else np.broadcast_to(den, num.shape).ravel()
    out = np.zeros(num.size, dtype=bool)
    idx = np.arange(num.size)
    k = 1
    while idx.size:
        a = _uniform(den * k if shared else den[idx] * k, idx.size, rng) < num[idx]
        out[idx[~a]] = k % 2 == 1
        idx = idx[a]
        k += 1
    return out


def geometric_exp1(n: int, rng: np.random.Generator) -> np.ndarray:
    """V with P(V = v) = (1 − e^−1) e^−v: successes of Bernoulli(e^−1) before the first failure."""
    v = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        idx = idx[bernoulli_exp(np.ones(idx.size, dtype=np.int64), 1, rng)]
        v[idx] += 1
    return v


def discrete_laplace(scale, rng: np.random.Generator, size=None) -> np.ndarray:
    """Integers Z with P(Z = k) ∝ exp(−|k| / exact_scale(scale)) (CKS 2020 Alg. 2), int64.

    ``scale`` is a number or an array (one scale per element); ``size`` the output shape
    (default: the shape of ``scale``).
    """
    t_all = _rational(scale)
    shape = np.shape(t_all) if size is None else (size if isinstance(size, tuple) else (int(size),))
    t_all = np.broadcast_to(t_all, shape).ravel()
    out = np.zeros(t_all.size, dtype=np.int64)
    pending = np.arange(t_all.size)
    # one scale for all (the usual case): scalar bounds, far faster in Generator.integers
    shared = t_all.size > 0 and bool((t_all == t_all[0]).all())
    while pending.size:
        t = int(t_all[0]) if shared else t_all[pending]
        u = _uniform(t, pending.size, rng)                  # U uniform on {0, …, t − 1}
        ok = bernoulli_exp(u, t, rng)                       # accept U w.p. e^(−U/t), else retry
        t = t if shared else t[ok]
        x = u[ok].astype(np.int64) + t * geometric_exp1(int(ok.sum()), rng)  # X: P(X = x) ∝ e^(−x/t)
        y = x // DENOMINATOR                                # Y = floor(X / s): P(Y = y) ∝ e^(−y s/t)
        negative = rng.integers(0, 2, y.size).astype(bool)
        keep = ~(negative & (y == 0))                       # +0 and −0 are one value: halve its weight
        done = pending[ok]
        out[done[keep]] = np.where(negative[keep], -y[keep], y[keep])
        pending = np.concatenate([pending[~ok], done[~keep]])
    return out.reshape(shape)
