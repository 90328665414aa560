"""Utility and privacy metrics, one tidy row per (run, metric)."""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr


def spearman(estimate: np.ndarray, truth: np.ndarray) -> float:
    """Rank correlation over grid cells (seed 000 §4.2.1).

    A constant surface has no ranks to correlate (scipy returns NaN); we define
    its Spearman as 0, the value of an uninformative estimate.
    """
    a, b = np.ravel(estimate), np.ravel(truth)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(spearmanr(a, b).statistic)


def ise(estimate: np.ndarray, truth: np.ndarray, cell_area: float) -> float:
    """Integrated squared error on the grid (Riemann sum)."""
    return float(np.sum((estimate - truth) ** 2) * cell_area)
