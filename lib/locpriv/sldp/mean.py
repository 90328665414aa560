"""Mean estimation of f(x) = ||x||^2 (Kroshnin & Suvorikova 2025, Ex. 2.1, 2.2, 3.1).

SLDP (Ex. 3.1): user i releases f(x_i) with Laplace noise of scale Delta_i,f / eps,
Delta_i,f the oscillation of f over its privacy region (the partition cell it ended
in; the region is public to the server); central DP (Ex. 2.1): the exact mean plus
Laplace(Delta_f / (N eps)); LDP (Ex. 2.2): every user adds Laplace(Delta_f / eps).
Delta_f is the oscillation of f over the whole domain.

Every release is Mironov-safe (``locpriv.dp.grid``): a user's f(x) is clamped to the
public range [min f, max f] over its region (a public map), snapped to a power-of-two
grid (<= range / 1024) and released with exact discrete Laplace noise of scale
top / eps grid steps, top = range / step: eps-LDP among locations in the region
(``dp.grid``'s proof).  The central mean is snapped to a grid of step <= Delta_f /
(1024 N) and noised with the rounded sensitivity (``dp.grid.rounded_sensitivity``):
eps-DP when one user is replaced (N public).
"""

from __future__ import annotations

import numpy as np

from ..dp.grid import grid_step, release_bounded, release_on_grid, rounded_sensitivity
from ..quadtree import cell_box


def squared_norm_range(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) of ||x||^2 over axis-aligned boxes (K, 4) = (xmin, xmax, ymin, ymax)."""
    lo = boxes[:, [0, 2]]
    hi = boxes[:, [1, 3]]
    far = np.maximum(np.abs(lo), np.abs(hi))
    near = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    return (near**2).sum(axis=1), (far**2).sum(axis=1)


def squared_norm_oscillation(boxes: np.ndarray) -> np.ndarray:
    """max - min of ||x||^2 over the boxes."""
    low, high = squared_norm_range(boxes)
    return high - low


def release(values: np.ndarray, lo, hi, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Each user's eps-LDP report of its value in its public range [lo, hi] (arrays allowed)."""
    return release_bounded(values, lo, hi, epsilon, rng)


def sldp_mean(points: np.ndarray, user_cell, box, epsilon: float, rng: np.random.Generator) -> float:
    """Ex. 3.1 with regions from the protocol's ``user_cell`` (user order = points order)."""
    regions = cell_box(user_cell["level"].to_numpy(), user_cell["code"].to_numpy(), box)
    low, high = squared_norm_range(regions)
    return float(np.mean(release((points**2).sum(axis=1), low, high, epsilon, rng)))


def ldp_mean(points: np.ndarray, box, epsilon: float, rng: np.random.Generator) -> float:
    low, high = squared_norm_range(np.asarray([box], dtype=float))
    return float(np.mean(release((points**2).sum(axis=1), low[0], high[0], epsilon, rng)))


def central_mean(points: np.ndarray, box, epsilon: float, rng: np.random.Generator) -> float:
    low, high = squared_norm_range(np.asarray([box], dtype=float))
    n = len(points)
    sensitivity = (high[0] - low[0]) / n  # replacing one user moves the mean by at most this
    step = grid_step(sensitivity)
    k = np.rint((np.mean((points**2).sum(axis=1)) - low[0]) / step)
    return float(release_on_grid(k, low[0], step, rounded_sensitivity(sensitivity, step), epsilon, rng))
