"""SLDP's split margin: a valid upper (1 - delta) quantile of a sum of n discrete-Laplace noises.

Why a new margin.  Thm 4.1's delta is P(T > tau + 1): the protocol splits the user's ideal
region U*, which needs a child holding fewer than Q users to pass n_hat >= Q + Delta, i.e. the
sum of the n(parent) report noises of that child to exceed Delta.  Alg. 2 line 14's
Delta = b (sqrt(2 n x) + 6 x), x = ln 1/delta, is only sqrt(x) standard deviations of that
sum (sd = b sqrt(2 n)) plus a constant, so for large n its tail tends to P(Z >= sqrt(x)),
which exceeds delta below delta ~ 0.03 (exact tails, FFT: 2.3 delta at delta = 1e-3,
n = 2e4; 120 delta at delta = 1e-6, n = 2e6).  ``split_margin`` instead returns the smallest
Delta with P(sum of n noises >= Delta) <= delta, up to a documented slack of a few percent.

The bound (proof sketch).  A report's noise is STEP * Z, Z discrete Laplace with
P(Z = k) ∝ p^|k|, p = e^(-1/t), t the sampler's exact scale (``dp.sampling.exact_scale``).

1. Coupling.  Z = floor(E1) - floor(E2) for E1, E2 iid exponential with mean t (P(floor(E) >= k)
   = p^k, and the difference of two iid geometric variables is discrete Laplace).  So
   Z = L - D with L = E1 - E2 ~ Laplace(t) and D = frac(E1) - frac(E2) in (-1, 1), E D = 0.
   For a sum of n terms, P(sum Z >= m) <= P(sum L >= m - u) + P(-sum D >= u), and Hoeffding
   bounds the second term by exp(-u^2 / (2 n)) (n independent terms of range 2): with
   u = sqrt(2 n ln(1 / delta_2)) it is delta_2 = delta / 1000 (u is at most 3 % of Delta at
   eps <= 12).
2. The continuous part.  sum L / t = G1 - G2 with G1, G2 iid Gamma(n, 1), so
   P(G1 - G2 >= c) = E Qn(c + G2), Qn the regularised upper incomplete gamma function
   (decreasing).  Splitting G2's range [g_0, g_K] (+- 10 sd) into K = 1024 equal bins and taking
   Qn at each bin's left edge, with the exact bin masses (``scipy.special.gammainc``), gives an
   upper Riemann-Stieltjes sum: an upper bound (the mass below g_0 is counted with Qn(c),
   above g_K with Qn(c + g_K)).  Its excess over the exact tail is about 14 z / K of it (z the
   quantile in sds): 4 % at z = 3, i.e. Delta is at most ~0.01 sd too large.  Bisection finds
   the smallest c (to 1e-5 relative, rounded up) with the bound <= delta_1 =
   (delta - delta_2)(1 - 1e-3) - 1e-12, the allowance absorbing float rounding (sums of 1026
   terms of incomplete-gamma values, each with relative error far below 1e-12).
3. Monotone in n.  A sum of discrete Laplace variables is symmetric and log-concave, hence
   unimodal, so P(|S + xi| <= r) <= P(|S| <= r) for any independent symmetric xi (Anderson's
   inequality on Z); by symmetry P(S_{n+1} >= m) >= P(S_n >= m) for m >= 1.  The margin for n
   is therefore the bound computed at the next point of a grid (every integer to 64, then
   ratios 1.02, at most 1 % wider), so each process computes at most a few hundred quantiles.

Floats limit delta: at 1e-9 or below the rounding allowance is no longer small, so it is refused.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from scipy.special import gammainc, gammaincc

from ..dp.sampling import exact_scale

BINS = 1024
HOEFFDING_SHARE = 1e-3  # delta_2 / delta: the discretisation term's share of delta
MIN_DELTA = 1e-9  # exclusive
_GRID_EXACT = 64  # every n up to this is its own grid point
_GRID_RATIO = 1.02
_CACHE: dict[tuple[float, int], float] = {}  # (delta_1, grid n) -> c: standardised quantile


class LaplaceSumTail:
    """Upper bounds on P(G1 - G2 >= c), G1, G2 iid Gamma(n, 1) (a sum of n Laplace(1)), for a
    fixed vector of n: the bin masses of G2 are computed once, each ``bound(c)`` costs one
    incomplete-gamma evaluation per bin (step 2 of the module docstring)."""

    def __init__(self, n):
        n = np.asarray(n, dtype=float)[..., None]
        sd = np.sqrt(n)
        lo, self.hi = np.maximum(n - 10 * sd - 10, 0.0), n + 10 * sd + 10
        self.n, self.edges = n, lo + (self.hi - lo) * np.linspace(0.0, 1.0, BINS + 1)
        # bin masses from whichever tail function is small there (no cancellation)
        cdf_low, cdf_high = gammainc(n, self.edges), gammaincc(n, self.edges)
        self.mass = np.where(self.edges[..., :-1] < n, np.diff(cdf_low, axis=-1), -np.diff(cdf_high, axis=-1))
        self.below, self.above = cdf_low[..., 0], cdf_high[..., -1]

    def bound(self, c) -> np.ndarray:
        c = np.asarray(c, dtype=float)[..., None]
        tails = gammaincc(self.n, c + self.edges[..., :-1])
        bound = (
            (self.mass * tails).sum(axis=-1)
            + self.below * gammaincc(self.n, c)[..., 0]
            + self.above * gammaincc(self.n, c + self.hi)[..., 0]
        )
        return np.minimum(bound, 1.0)


def _grid_point(n: np.ndarray) -> np.ndarray:
    """The smallest grid point >= n (n >= 1)."""
    k = np.ceil(np.log(np.maximum(n, 1) / _GRID_EXACT) / math.log(_GRID_RATIO) - 1e-9)
    return np.where(n <= _GRID_EXACT, n, np.ceil(_GRID_EXACT * _GRID_RATIO ** np.maximum(k, 0))).astype(np.int64)


def _standardised_quantiles(ns: np.ndarray, delta_1: float) -> np.ndarray:
    """Smallest c (to 1e-5 relative, rounded up) with the tail bound at (n, c) <= delta_1, per n."""
    tail = LaplaceSumTail(ns)
    x = math.log(1 / delta_1)
    # a Bernstein-type upper end (the bound is far below delta_1 there, checked) and a lower end
    # below the normal quantile (if the bound already holds there, the result is merely not smallest)
    hi = 2 * (np.sqrt(2 * ns * x) + x) + 1
    lo = np.maximum(0.8 * np.sqrt(2 * ns) * NormalDist().inv_cdf(1 - delta_1) - 1, 0.0)
    if not (tail.bound(hi) <= delta_1).all():
        raise AssertionError("split margin: the bracket's upper end is not above the quantile")
    while ((hi - lo) > 1e-5 * hi).any():
        mid = (lo + hi) / 2
        ok = tail.bound(mid) <= delta_1
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    return hi


def split_margin(n_parent, scale: float, delta: float, step: float) -> np.ndarray:
    """Delta for parents of n_parent active users whose reports carry discrete Laplace noise of
    scale ``scale`` (b) on the grid ``step``: P(sum of n_parent noises >= Delta) <= delta."""
    if not MIN_DELTA < delta < 1:
        raise ValueError(f"delta must be in ({MIN_DELTA:g}, 1), got {delta}")
    n = np.asarray(n_parent, dtype=np.int64)
    grid = _grid_point(np.maximum(n, 1))
    delta_2 = HOEFFDING_SHARE * delta
    delta_1 = (delta - delta_2) * (1 - 1e-3) - 1e-12
    missing = np.array(sorted({int(g) for g in np.unique(grid) if (delta_1, int(g)) not in _CACHE}), dtype=np.int64)
    if missing.size:
        for g, c in zip(missing, _standardised_quantiles(missing.astype(float), delta_1), strict=True):
            _CACHE[(delta_1, int(g))] = float(c)
    c = np.array([_CACHE[(delta_1, int(g))] for g in grid.ravel()]).reshape(grid.shape)
    t = exact_scale(scale / step)  # steps; the sampler's exact scale
    u = np.sqrt(2 * grid * math.log(1 / delta_2))  # steps; Hoeffding for the rounding
    return np.where(n > 0, step * (t * c + u), 0.0)
