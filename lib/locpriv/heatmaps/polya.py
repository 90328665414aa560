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
"""

from __future__ import annotations

import math

import numpy as np


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


def client_shares(
    n_clients: int, dim: int, epsilon: float, sensitivity: float, n_dp: int, rng: np.random.Generator
) -> np.ndarray:
    """Each client's integer noise share X_i − Y_i, Pólya(1/n_dp, a) each: shape (n_clients, dim)."""
    a = _alpha(epsilon, sensitivity)
    shape = (n_clients, dim)
    return polya(1.0 / n_dp, a, shape, rng) - polya(1.0 / n_dp, a, shape, rng)


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
