"""Laplace local DP over a public box (Farokhi 2020, Theorem 1), released on a public grid.

Farokhi's mechanism reports x + n with Laplace noise per coordinate of scale
b_j = q (x̄_j − x̲_j) / ε for q-dimensional data in the public box
[x̲_1, x̄_1] × … × [x̲_q, x̄_q].  Sampled on doubles it is not ε-DP (Mironov 2012:
the reachable doubles depend on x), so each coordinate is released with
``dp.grid.release_bounded`` at ε / q: x_j snapped to the power-of-two grid of step
Λ_j = ``grid_steps`` (at most width_j / 1024), plus exact discrete Laplace noise of
scale top_j q / ε grid steps, top_j = width_j / Λ_j — the discrete twin of b_j.

Guarantee: ε-LDP for any two inputs in the box (basic composition of the q
coordinates, each ε/q-LDP by ``dp.grid``'s proof); ``epsilon_spent`` is the exact
value, strictly below ε because the sampler rounds its scale up.  Points outside
the box break the bound, so they are an input error here; the location branch
clamps them to the box first (a public, data-independent map) and counts them.
"""

from __future__ import annotations

import math

import numpy as np

from .dp.grid import finite, grid_step, release_bounded, snap
from .dp.sampling import exact_scale
from .dp.sampling import timing_safe_delta as timing_safe_delta_of


def _checked(bounds: np.ndarray, epsilon: float) -> np.ndarray:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    bounds = np.asarray(bounds, dtype=float).reshape(-1, 2)
    if not (bounds[:, 1] > bounds[:, 0]).all():
        raise ValueError(f"every bound needs upper > lower, got {bounds.tolist()}")
    return bounds


def grid_steps(bounds: np.ndarray) -> np.ndarray:
    """Λ_j, the public grid step of each coordinate (bounds of shape (q, 2))."""
    bounds = np.asarray(bounds, dtype=float).reshape(-1, 2)
    return np.asarray(grid_step(bounds[:, 1] - bounds[:, 0]), dtype=float).reshape(-1)


def _steps_and_scales(bounds, epsilon):
    bounds = _checked(bounds, epsilon)
    step = grid_steps(bounds)
    top = np.rint((bounds[:, 1] - bounds[:, 0]) / step)
    return step, top, np.asarray(exact_scale(top / (epsilon / len(bounds))), dtype=float).reshape(-1)


def scales(bounds: np.ndarray, epsilon: float) -> np.ndarray:
    """The noise scale per coordinate in data units (≈ b_j = q width_j / ε; the deconvolution's b)."""
    step, _, scale = _steps_and_scales(bounds, epsilon)
    return step * scale


def noise_variance(bounds: np.ndarray, epsilon: float) -> np.ndarray:
    """Variance per coordinate of a report around the snapped input, in data units squared.

    The noise is Λ_j K with K discrete Laplace of scale t_j (P(k) ∝ exp(−|k| / t_j)), whose
    variance is 2 e^(−1/t) / (1 − e^(−1/t))² (the two-sided geometric law), i.e. 2 b_j² up to a
    relative O(1 / t_j²) (t_j >= 1024 q / ε steps here) with b_j = Λ_j t_j = ``scales``.
    """
    step, _, scale = _steps_and_scales(bounds, epsilon)
    r = np.exp(-1.0 / scale)
    return step**2 * 2.0 * r / (1.0 - r) ** 2


def epsilon_spent(bounds: np.ndarray, epsilon: float) -> float:
    """The exact ε of the released reports: Σ_j top_j / scale_j (< epsilon)."""
    _, top, scale = _steps_and_scales(bounds, epsilon)
    return float(np.sum(top / scale))


def discretisation(bounds: np.ndarray) -> str:
    step = grid_steps(bounds)
    return (
        "each coordinate snapped to the public grid of step "
        + ", ".join(f"{s:g}" for s in step)
        + " (power of two, <= box side / 1024) and released as grid point + exact discrete Laplace "
        "noise (Canonne, Kamath & Steinke 2020); the reports lie on the same grid"
    )


def timing_safe_delta(epsilon: float, q: int = 2) -> float:
    """δ of one report drawn with ``timing_safe=True``, valid for every box: its q draws at the largest
    scale any box gives (``grid_step`` keeps top_j = width_j / Λ_j <= 2048 grid steps), since the
    per-draw total-variation bound ``dp.sampling.timing_safe_tv`` grows with the scale."""
    _checked(np.zeros((q, 2)) + [0.0, 1.0], epsilon)  # noqa: RUF005 -- numpy broadcast, not list concatenation
    return timing_safe_delta_of(np.full(q, exact_scale(2048 * q / epsilon)), epsilon)  # scale top / (ε / q)


def randomize(
    values: np.ndarray,
    bounds: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    names: tuple[str, ...] | None = None,
    timing_safe: bool = False,
) -> np.ndarray:
    """Noisy reports of values (n, q) (or (n,) for q = 1) in the public bounds (q, 2); ``timing_safe``:
    fixed work per draw (``dp.sampling``), (ε, ``timing_safe_delta``)-LDP whatever the response time shows."""
    values = finite(values, "values to randomize")
    flat = values.reshape(len(values), -1)
    bounds = _checked(bounds, epsilon)
    outside = (flat < bounds[:, 0]) | (flat > bounds[:, 1])
    if outside.any():
        j = int(np.flatnonzero(outside.any(axis=0))[0])
        name = names[j] if names else f"coordinate {j}"
        raise ValueError(
            f"{int(outside[:, j].sum())} values of {name} lie outside its public bounds "
            f"{bounds[j].tolist()}; declare bounds that contain the data (Theorem 1 needs them)"
        )
    out = release_bounded(flat, bounds[:, 0], bounds[:, 1], epsilon / len(bounds), rng, timing_safe=timing_safe)
    return out.reshape(values.shape)


def noise_steps(reports: np.ndarray, values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The discrete Laplace noise each report carries, in grid steps (n, q): its grid index minus the
    snapped value's, i.e. ``randomize`` inverted given the true values (in the bounds)."""
    bounds = np.asarray(bounds, dtype=float)
    step = grid_steps(bounds)
    top = np.rint((bounds[:, 1] - bounds[:, 0]) / step)
    reports = np.asarray(reports, dtype=float).reshape(len(reports), -1)
    own = snap(np.asarray(values, dtype=float).reshape(reports.shape), bounds[:, 0], step, top)
    return np.rint((reports - bounds[:, 0]) / step).astype(np.int64) - own
