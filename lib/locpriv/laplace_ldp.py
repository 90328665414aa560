"""Laplace local DP over a public box (seed 004, Theorem 1).

Each user reports x + n with independent Laplace noise per coordinate of scale
b_j = q (x̄_j − x̲_j) / ε for q-dimensional data in the public box
[x̲_1, x̄_1] × … × [x̲_q, x̄_q]: moving x inside the box changes the report's
log-density by at most Σ_j (x̄_j − x̲_j) / b_j = ε, so the mechanism is ε-LDP.
Points outside the box break the bound, so they are an input error here; the
location branch clamps them to the box first (a public, data-independent map)
and counts them.
"""

from __future__ import annotations

import math

import numpy as np


def scales(bounds: np.ndarray, epsilon: float) -> np.ndarray:
    """b_j = q (x̄_j − x̲_j) / ε for bounds of shape (q, 2)."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    bounds = np.asarray(bounds, dtype=float).reshape(-1, 2)
    width = bounds[:, 1] - bounds[:, 0]
    if not (width > 0).all():
        raise ValueError(f"every bound needs upper > lower, got {bounds.tolist()}")
    return len(bounds) * width / epsilon


def randomize(values: np.ndarray, bounds: np.ndarray, epsilon: float, rng: np.random.Generator,
              names: tuple[str, ...] | None = None) -> np.ndarray:
    """Noisy reports of values (n, q) (or (n,) for q = 1) in the public bounds (q, 2)."""
    values = np.asarray(values, dtype=float)
    flat = values.reshape(len(values), -1)
    bounds = np.asarray(bounds, dtype=float).reshape(-1, 2)
    outside = (flat < bounds[:, 0]) | (flat > bounds[:, 1])
    if outside.any():
        j = int(np.flatnonzero(outside.any(axis=0))[0])
        name = names[j] if names else f"coordinate {j}"
        raise ValueError(f"{int(outside[:, j].sum())} values of {name} lie outside its public bounds "
                         f"{bounds[j].tolist()}; declare bounds that contain the data (Theorem 1 needs them)")
    b = scales(bounds, epsilon)
    return (flat + rng.laplace(0.0, 1.0, flat.shape) * b).reshape(values.shape)
