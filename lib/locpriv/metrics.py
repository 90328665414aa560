"""Utility and privacy metrics, one tidy row per (run, metric)."""

from __future__ import annotations

import numpy as np

from .domain import Grid
from .sldp.range_queries import mean_relative_error


def spearman(estimate: np.ndarray, truth: np.ndarray) -> float:
    """Rank correlation over grid cells ([RFF-KDE] §4.2.1).

    A constant surface has no ranks to correlate (scipy returns NaN); we define
    its Spearman as 0, the value of an uninformative estimate.
    """
    a, b = np.ravel(estimate), np.ravel(truth)
    if np.isnan(a).any() or np.isnan(b).any():
        return float("nan")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    # scipy.stats.spearmanr computes the same, but importing scipy.stats costs every metrics job ~0.5 s
    return float(np.corrcoef(average_ranks(a), average_ranks(b))[0, 1])


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their mean rank (scipy.stats.rankdata's 'average')."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # start of each tie group
    size = np.diff(np.r_[first, values.size])
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(first + (size + 1) / 2.0, size)
    return ranks


def ise(estimate: np.ndarray, truth: np.ndarray, cell_area: float) -> float:
    """Integrated squared error on the grid (Riemann sum)."""
    return float(np.sum((estimate - truth) ** 2) * cell_area)


def _interval_fraction(lo: np.ndarray, hi: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Fraction of each grid cell's side (regular centres) inside each interval: (n, len(centres))."""
    half = (centres[1] - centres[0]) / 2
    inside = np.minimum(hi[:, None], centres + half) - np.maximum(lo[:, None], centres - half)
    return np.clip(inside, 0.0, None) / (2 * half)


def range_masses(density: np.ndarray, grid: Grid, queries: np.ndarray) -> np.ndarray:
    """Probability mass of each rectangle (xmin, xmax, ymin, ymax) under a density on the grid.

    The density is taken constant on each grid cell (what a density on the grid states),
    so a query's mass is one separable product of the cells' overlap fractions.
    """
    fx = _interval_fraction(queries[:, 0], queries[:, 1], grid.x)
    fy = _interval_fraction(queries[:, 2], queries[:, 3], grid.y)
    return np.einsum("ip,pq,iq->i", fx, density, fy) * grid.cell_area


def range_mre(estimate: np.ndarray, truth: np.ndarray, grid: Grid, queries: np.ndarray, n: int) -> float:
    """Mean relative error of the workload's counts for n users (Kroshnin & Suvorikova 2025, §5.2:
    smoothing tau = 10 max(1, 1e-4 n)), answered on the estimate and on the truth surface."""
    return mean_relative_error(n * range_masses(estimate, grid, queries), n * range_masses(truth, grid, queries), n)


def _top_k_share(values: np.ndarray, k: int) -> np.ndarray:
    """Each cell's share of a top-k selection, ties at the k-th value sharing the remaining places.

    A constant surface gives every cell k / cells: the chance level, not an arbitrary pick.
    """
    flat = np.ravel(values)
    kth = np.partition(flat, flat.size - k)[flat.size - k]
    above, tied = flat > kth, flat == kth
    return np.where(above, 1.0, np.where(tied, (k - above.sum()) / tied.sum(), 0.0))


def hotspot_recall(estimate: np.ndarray, truth: np.ndarray, k: int) -> float:
    """Overlap of the estimate's top-k cells with the truth's top-k, as a fraction of k."""
    if not 0 < k <= np.size(truth):
        raise ValueError(f"utility.hotspot_k must be in [1, {np.size(truth)}] (grid cells), got {k}")
    return float(np.sum(_top_k_share(estimate, k) * _top_k_share(truth, k)) / k)
