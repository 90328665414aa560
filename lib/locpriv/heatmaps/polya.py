"""Distributed discrete Laplace noise for secure aggregation ([DDP-Heatmaps] §4, Alg. 1, Thm 4.2).

Pólya(r, a) is the negative binomial law P(k) = Γ(k + r) / (k! Γ(r)) a^k (1 − a)^r,
k >= 0 (Definition 4.1; the extraction lost the formula, reconstructed from the
Gamma–Poisson recipe the text keeps: λ ~ Gamma(shape r, scale a / (1 − a)),
k ~ Poisson(λ)).  Pólya laws with the same a add their r, so n clients each adding
X_i − Y_i with X_i, Y_i ~ Pólya(1/n, a) give a sum X − Y with X, Y ~ Pólya(1, a),
i.e. geometric: X − Y is discrete Laplace, P(z) ∝ a^|z|, which is ε-DP for
sensitivity Δ when a = exp(−ε / Δ) (Ghosh et al. 2012; Goryczka & Xiong 2015 Thm 5.1).

Secure aggregation works modulo m: every client reduces its noisy integer vector
mod m and the server sums mod m; since (Σ v_i) mod m = (Σ (v_i mod m)) mod m the
reduction is post-processing of the discrete-Laplace sum and costs no privacy,
only accuracy when the true sum leaves [−m/2, m/2) (overflow).

Dropouts (§4, "DP shard size"): clients plan for at least n_dp = ⌈n (1 − ρ)⌉
survivors of a shard of n and draw Pólya(1/n_dp, a) shares.  With k >= n_dp
survivors the aggregate noise is discrete Laplace plus more independent noise
(still ε-DP, by post-processing); with k < n_dp it is the difference of two
Pólya(k/n_dp, a), whose privacy loss ``achieved_epsilon`` computes exactly.

Timing.  numpy's Gamma–Poisson draw does noise-dependent work (its Poisson for λ < 10
multiplies uniforms until their product drops below e^−λ: one word per unit of the
draw), so a device that answers one sub-query reveals its share through its response
time (tests/privacy/test_timing_mode.py measures it).  ``client_shares(timing_safe=True)``
draws each Pólya by inversion with fixed work (``fixed_work_polya``): one 64-bit word
and the same K comparisons against the public CDF table, whatever the value.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from functools import lru_cache

import numpy as np

from ..dp.sampling import words

# the truncation of the fixed-work inversion: every CDF threshold below 1 - 2^-64 is compared
TAIL = Decimal(2) ** -64


def _alpha(epsilon: float, sensitivity: float) -> float:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity}")
    return math.exp(-epsilon / sensitivity)


def dp_shard_size(shard_size: int, dropout_rate: float) -> int:
    """Survivors the noise is provisioned for: ⌈n (1 − ρ)⌉ (at least 1)."""
    if not 0 <= dropout_rate < 1:
        raise ValueError(f"dropout_rate must be in [0, 1), got {dropout_rate}")
    if shard_size < 1:
        raise ValueError(f"shard_size must be >= 1, got {shard_size}")
    return max(1, math.ceil(shard_size * (1 - dropout_rate)))


def polya(r, alpha: float, size, rng: np.random.Generator) -> np.ndarray:
    """Pólya(r, alpha) draws via the Gamma–Poisson mixture (r may be an array)."""
    lam = rng.gamma(shape=r, scale=alpha / (1 - alpha), size=size)
    return rng.poisson(lam)


@lru_cache(maxsize=256)
def _thresholds(r: float, alpha: float) -> np.ndarray:
    """T_k = ceil(F(k) 2^63) for k = 0 .. K − 1, F the Pólya(r, alpha) CDF, K the least with
    1 − F(K − 1) <= 2^-64 (uint64).  F from the pmf recursion P(0) = (1 − a)^r,
    P(k + 1) = P(k) a (k + r) / (k + 1) in 50-digit decimals (error far below 2^-100)."""
    with localcontext() as ctx:
        ctx.prec = 50
        a, rr = Decimal(alpha), Decimal(r)
        p = (1 - a) ** rr
        cdf, out, k = p, [], 0
        while True:
            out.append(int((cdf * 2**63).to_integral_value(rounding="ROUND_CEILING")))
            if 1 - cdf <= TAIL:
                return np.array(out, dtype=np.uint64)
            p = p * a * (k + rr) / (k + 1)
            cdf += p
            k += 1


def fixed_work_polya(r: float, alpha: float, size, rng: np.random.Generator) -> np.ndarray:
    """Pólya(r, alpha) draws by inversion with the same work for every draw: one word W (63 bits of U)
    and X = #{k < K : W >= T_k}, all K comparisons done (``_thresholds``; no data-dependent loop,
    branch or table address).  Within total variation ``polya_timing_tv(r, alpha)`` of exact."""
    thresholds = _thresholds(float(r), float(alpha))
    shape = size if isinstance(size, tuple) else (int(size),)
    w = words(rng, math.prod(shape)) >> np.uint64(1)
    out = np.empty(w.size, dtype=np.int64)
    step = max(1, (1 << 22) // thresholds.size)  # bound the (draws x K) comparison block
    for i in range(0, w.size, step):
        out[i : i + step] = (w[i : i + step, None] >= thresholds[None, :]).sum(axis=1)
    return out.reshape(shape)


def polya_timing_tv(r: float, alpha: float) -> float:
    """Total variation of one ``fixed_work_polya`` draw from Pólya(r, alpha).  U = (W + V) / 2^63,
    W the word's 63 bits: W >= T_k implies U >= F(k); W < T_k − 1 implies U < F(k); only W = T_k − 1
    is undecided (probability 2^-63 per threshold), and U >= F(K − 1) answers K where the true draw
    may exceed it (probability <= 2^-64)."""
    return _thresholds(float(r), float(alpha)).size * 2.0**-63 + 2.0**-64


def fixed_work_delta(
    max_loss: float, min_round_epsilon: float, rounds: int, shard_size: int, max_dim: int, sensitivity: float = 1.0
) -> float:
    """The delta a run whose clients draw their shares by ``fixed_work_polya`` adds to its epsilon.

    Bound, from public quantities only: at most ``rounds`` sub-queries, each with noise at
    epsilon_t >= ``min_round_epsilon`` and a privacy loss of at most ``max_loss`` under the
    record's relation (epsilon_t add/remove, 2 epsilon_t replace-one: pass the total), over a
    vector of at most ``max_dim`` entries, shards of at most ``shard_size`` clients.
    Proof sketch: in sub-query t the target's shard sum is a function of
    its <= shard_size x max_dim shares (X - Y each), every one within total variation 2 tv of exact,
    tv = ``polya_timing_tv``; so the released sum is within eta_t = 2 shard_size max_dim tv of the exact
    mechanism's, which is e_t-DP (e_t <= max_loss), and a mechanism within eta of an e_t-DP one
    is (e_t, (1 + e^e_t) eta)-DP (P'(S|x) <= P(S|x) + eta <= e^e_t P(S|x') + eta <=
    e^e_t P'(S|x') + (1 + e^e_t) eta).  Other shards' sums have the same law under both
    neighbours.  Adaptive basic composition sums the deltas.  tv is largest for the heaviest tail:
    Pólya(r, a) with r = 1 / n_dp <= 1 is stochastically below Pólya(1, a) (Pólya laws add their r)
    and a = e^(-epsilon_t / sensitivity) <= e^(-min_round_epsilon / sensitivity), so the table of
    Pólya(1, e^(-min_round_epsilon / sensitivity)) is the longest and bounds every tv.  Capped at 1.
    """
    tv = polya_timing_tv(1.0, _alpha(min_round_epsilon, sensitivity))
    return min(1.0, rounds * (1 + math.exp(min(max_loss, 700.0))) * 2 * shard_size * max_dim * tv)


def client_shares(
    n_clients: int,
    dim: int,
    epsilon: float,
    sensitivity: float,
    n_dp: int,
    rng: np.random.Generator,
    timing_safe: bool = False,
) -> np.ndarray:
    """Each client's integer noise share X_i − Y_i, Pólya(1/n_dp, a) each: shape (n_clients, dim).

    ``timing_safe``: by ``fixed_work_polya`` (the same work per draw; each share within total
    variation 2 ``polya_timing_tv`` per entry of exact)."""
    a = _alpha(epsilon, sensitivity)
    shape = (n_clients, dim)
    draw = fixed_work_polya if timing_safe else polya
    return draw(1.0 / n_dp, a, shape, rng) - draw(1.0 / n_dp, a, shape, rng)


def aggregate_noise(
    n_survivors: int, dim: int, epsilon: float, sensitivity: float, n_dp: int, rng: np.random.Generator
) -> np.ndarray:
    """The exact law of the sum of n_survivors shares: Pólya(k/n_dp, a) − Pólya(k/n_dp, a).

    Equal in distribution to ``client_shares(...).sum(0)`` at the cost of one
    draw per entry instead of one per client and entry (for 10^6-user runs).
    """
    a = _alpha(epsilon, sensitivity)
    r = n_survivors / n_dp
    return polya(r, a, dim, rng) - polya(r, a, dim, rng)


def reduce_mod(values: np.ndarray, modulus: int) -> np.ndarray:
    """Client side: entries in [0, m)."""
    return np.mod(values, modulus)


def secure_sum(reduced: np.ndarray, modulus: int) -> np.ndarray:
    """Server side: the sum over clients (axis 0) mod m, mapped back to [−m/2, m/2)."""
    total = np.mod(reduced.sum(axis=0, dtype=np.int64), modulus)
    return np.where(total >= modulus // 2, total - modulus, total)


def difference_pmf(r: float, alpha: float, support: int) -> np.ndarray:
    """P(X − Y = z) for z in [−support, support], X, Y iid Pólya(r, alpha)."""
    from scipy import stats  # ~0.5 s to import: not at the top, every heatmap job imports this module

    k = np.arange(2 * support + 1)
    p = stats.nbinom.pmf(k, r, 1 - alpha)
    full = np.convolve(p, p[::-1])  # index j <-> z = j − 2 support
    return full[support : 3 * support + 1]


def achieved_epsilon(n_survivors: int, n_dp: int, epsilon: float, sensitivity: int, tail: float = 1e-12) -> float:
    """Pure-DP level the shard's aggregate noise actually gives (sensitivity Δ, integer).

    ε when k >= n_dp (see module doc); otherwise max_z |log p(z) − log p(z + Δ)| of the
    Pólya(k/n_dp) difference, evaluated where its mass is above ``tail`` (beyond,
    the ratio tends to a^−Δ, i.e. ε itself, so the maximum is attained inside).
    """
    if n_survivors < 1:
        return math.inf  # nothing but the true sum reaches the server
    if n_survivors >= n_dp:
        return float(epsilon)
    a = _alpha(epsilon, sensitivity)
    r = n_survivors / n_dp
    from scipy import stats

    support = int(stats.nbinom.isf(tail, r, 1 - a)) + int(sensitivity) + 1
    pmf = difference_pmf(r, a, support)
    d = int(sensitivity)
    with np.errstate(divide="ignore"):
        ratio = np.abs(np.log(pmf[:-d]) - np.log(pmf[d:]))
    keep = (pmf[:-d] > tail) & (pmf[d:] > tail)
    return float(max(epsilon, ratio[keep].max()))


def achieved_epsilon_bound(n_survivors: int, n_dp: int, epsilon: float, sensitivity: int) -> float:
    """Closed-form upper bound on ``achieved_epsilon`` for k < n_dp: ε + Δ log(n_dp / k).

    Proof sketch.  X, Y iid Pólya(r, a), r = k / n_dp <= 1, P(j) ∝ Γ(j + r) / j! a^j, so
    P(j + 1) / P(j) = a (j + r) / (j + 1) ∈ [a r, a].  For z >= 0 every term of
    p(z) = Σ_y P(z + y) P(y) has z + y >= 0, hence p(z + 1) / p(z) ∈ [a r, a]; p is
    symmetric, so for z < 0 the ratio is the inverse of one at −z − 1 >= 0.  Thus
    |log p(z + 1) − log p(z)| <= −log(a r) = ε/Δ + log(1/r) for all z, and an input change
    of L1 norm <= Δ (spread over independent entries) moves the log-likelihood by at
    most Δ (ε/Δ + log(1/r)).  Cheap at any ε (no convolution), so tiny per-round
    budgets get a finite, valid level instead of NaN.
    """
    if n_survivors < 1:
        return math.inf
    if n_survivors >= n_dp:
        return float(epsilon)
    return float(epsilon + sensitivity * math.log(n_dp / n_survivors))


def sharded_aggregate_noise(
    survivors, n_dp, dim: int, epsilon: float, sensitivity: float, rng: np.random.Generator
) -> np.ndarray:
    """Sum over shards j of ``aggregate_noise(survivors[j], dim, ..., n_dp[j])``, vectorised.

    Pólya laws with a common a add their r (Definition 4.1), so the sum of the
    shards' Pólya(k_j/n_dp_j, a) − Pólya(k_j/n_dp_j, a) is exactly
    Pólya(R, a) − Pólya(R, a) with R = Σ_j k_j/n_dp_j: one draw per entry
    however many shards (the flat baseline has 4^10 entries x 100 shards).
    """
    survivors = np.asarray(survivors, dtype=float)
    n_dp = np.asarray(n_dp, dtype=float)
    total_r = float(np.sum(survivors / n_dp))
    if total_r <= 0:
        return np.zeros(dim, dtype=np.int64)
    a = _alpha(epsilon, sensitivity)
    return polya(total_r, a, dim, rng) - polya(total_r, a, dim, rng)
