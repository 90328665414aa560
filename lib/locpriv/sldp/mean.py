"""Mean estimation of f(x) = ||x||^2 (seed 001 Ex. 2.1, 2.2, 3.1).

SLDP (Ex. 3.1): user i adds Lap(Delta_i,f / eps) with Delta_i,f the oscillation of
f over its privacy region (the partition cell it ended in); central DP (Ex. 2.1):
the exact mean plus Lap(Delta_f / (N eps)); LDP (Ex. 2.2): every user adds
Lap(Delta_f / eps).  Delta_f is the oscillation of f over the whole domain.
"""

from __future__ import annotations

import numpy as np

from ..quadtree import cell_box


def squared_norm_oscillation(boxes: np.ndarray) -> np.ndarray:
    """max - min of ||x||^2 over axis-aligned boxes (K, 4) = (xmin, xmax, ymin, ymax)."""
    lo = boxes[:, [0, 2]]
    hi = boxes[:, [1, 3]]
    far = np.maximum(np.abs(lo), np.abs(hi))
    near = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    return (far ** 2).sum(axis=1) - (near ** 2).sum(axis=1)


def sldp_mean(points: np.ndarray, user_cell, box, epsilon: float, rng: np.random.Generator) -> float:
    """Ex. 3.1 with regions from the protocol's ``user_cell`` (user order = points order)."""
    regions = cell_box(user_cell["level"].to_numpy(), user_cell["code"].to_numpy(), box)
    scale = squared_norm_oscillation(regions) / epsilon
    return float(np.mean((points ** 2).sum(axis=1) + rng.laplace(0.0, 1.0, len(points)) * scale))


def ldp_mean(points: np.ndarray, box, epsilon: float, rng: np.random.Generator) -> float:
    osc = squared_norm_oscillation(np.asarray([box], dtype=float))[0]
    return float(np.mean((points ** 2).sum(axis=1) + rng.laplace(0.0, osc / epsilon, len(points))))


def central_mean(points: np.ndarray, box, epsilon: float, rng: np.random.Generator) -> float:
    osc = squared_norm_oscillation(np.asarray([box], dtype=float))[0]
    return float(np.mean((points ** 2).sum(axis=1)) + rng.laplace(0.0, osc / (len(points) * epsilon)))
