"""Heatmap accuracy metrics on normalised maps ([DDP-Heatmaps] §6.1; reference metrics.py).

Both maps are normalised as the reference ``normalize`` does: negative entries
clipped to 0, then divided by the sum, so each sums to 1.

* ``mse``: mean over pixels of (a − b)^2 (reference: sklearn mean_squared_error).
* ``l1_elementwise``: Σ_pixels |a − b|, the total-variation-style L1 distance of
  two distributions (in [0, 2]).  The reference reports
  ``np.linalg.norm(true − test, ord=1)`` on the 2-D array, which is the matrix
  1-norm (largest column sum of |a − b|), not this; ``l1_matrix_norm`` gives it
  for comparison with the paper's numbers.
* ``mape``, ``smape``, ``maape``: the reference definitions, against the truth
  with its zero pixels replaced by its smallest positive value and renormalised
  ("no_zeros_norm"), since they divide by the truth:
  MAPE = mean |t − x| / t, sMAPE = 2 mean |t − x| / (t + x),
  MAAPE = mean arctan(|t − x| / t).
"""

from __future__ import annotations

import numpy as np


def normalise(image) -> np.ndarray:
    arr = np.clip(np.asarray(image, dtype=float), 0, None)
    total = arr.sum()
    if not total > 0:
        raise ValueError("cannot normalise a map with no positive mass")
    return arr / total


def _pair(estimate, truth):
    estimate, truth = np.asarray(estimate), np.asarray(truth)
    if estimate.shape != truth.shape:
        raise ValueError(f"maps differ in shape: estimate {estimate.shape}, truth {truth.shape}")
    return normalise(estimate), normalise(truth)


def _no_zeros(truth: np.ndarray) -> np.ndarray:
    filled = np.where(truth > 0, truth, truth[truth > 0].min())
    return filled / filled.sum()


def mse(estimate, truth) -> float:
    a, b = _pair(estimate, truth)
    return float(np.mean((a - b) ** 2))


def l1_elementwise(estimate, truth) -> float:
    a, b = _pair(estimate, truth)
    return float(np.abs(a - b).sum())


def l1_matrix_norm(estimate, truth) -> float:
    """What the reference code calls L1: the induced matrix 1-norm of the difference."""
    a, b = _pair(estimate, truth)
    return float(np.linalg.norm(b - a, ord=1))


def mape(estimate, truth) -> float:
    a, b = _pair(estimate, truth)
    t = _no_zeros(b)
    return float(np.mean(np.abs(t - a) / t))


def smape(estimate, truth) -> float:
    a, b = _pair(estimate, truth)
    t = _no_zeros(b)
    return float(2 * np.mean(np.abs(t - a) / (t + a)))


def maape(estimate, truth) -> float:
    a, b = _pair(estimate, truth)
    t = _no_zeros(b)
    return float(np.mean(np.arctan(np.abs(t - a) / t)))


def all_metrics(estimate, truth) -> dict[str, float]:
    return {
        name: fn(estimate, truth)
        for name, fn in [
            ("mse", mse),
            ("l1_elementwise", l1_elementwise),
            ("l1_matrix_norm", l1_matrix_norm),
            ("mape", mape),
            ("smape", smape),
            ("maape", maape),
        ]
    }
