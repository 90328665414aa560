"""Releasing bounded real values on a public power-of-two grid with exact discrete Laplace noise.

A value v in the public interval [lo, hi] is snapped to the grid lo + Λ k,
k = clip(rint((v − lo) / Λ), 0, top), top = rint((hi − lo) / Λ), with Λ a power of
two (``grid_step``); the report is lo + Λ (k + Z), Z ~ discrete Laplace(top / ε).

Proof sketch (ε-LDP, any two inputs): k and k′ are integers in [0, top] whatever
v, v′ are (the clip makes this exact in floating point), so |k − k′| <= top and
P(k + Z = j) / P(k′ + Z = j) = exp((|j − k′| − |j − k|) / s) <= exp(top / s) with
s = exact_scale(top / ε) > top / ε (``sampling``): the integer j is ε-DP, and the
float lo + Λ j is a fixed public function of j (post-processing).  Every double
reachable from v is reachable from v′ (the support is lo + Λ Z for every input),
which closes Mironov's (2012) attack.  Rounding moves v by at most Λ / 2.
"""

from __future__ import annotations

import numpy as np

from .sampling import discrete_laplace

# grid steps per interval: rounding error <= width / 2^11, far below any noise scale used here
CELLS = 1024
# grid indices up to 2^52: an index plus noise (|noise| < 2^42) stays an exact double and int64
MAX_INDEX = 2**52


def grid_step(width, cells: int = CELLS):
    """The largest power of two <= width / cells (exact: read off the float's exponent)."""
    width = np.asarray(width, dtype=float)
    if not (np.isfinite(width).all() and (width > 0).all()):
        raise ValueError(f"interval widths must be finite and > 0, got {width}")
    _, exponent = np.frexp(width / cells)  # width / cells = m 2^e, m in [0.5, 1)
    step = np.ldexp(1.0, exponent - 1)
    return float(step) if step.ndim == 0 else step


def finite(values, what: str) -> np.ndarray:
    """``values`` as doubles, refusing NaN and infinities with one error naming ``what``: a report of a
    non-finite input has no ε (NaN used to leave as ±2^63 grid steps through the int64 cast, told apart
    from every real input).  Every randomize path and grid snap calls it on the raw coordinates."""
    values = np.asarray(values, dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        raise ValueError(
            f"{what}: {int(bad.sum())} of {values.size} values are NaN or infinite; "
            "drop or repair them before randomising (a non-finite input has no privacy guarantee)"
        )
    return values


def _in_range(k: np.ndarray, what: str, units: str) -> np.ndarray:
    far = np.abs(k) > MAX_INDEX
    if far.any():
        raise ValueError(
            f"{what}: {int(far.sum())} values lie more than 2^52 grid steps ({units}) from the "
            "grid origin, where grid indices stop being exact; shift or rescale them first "
            "(e.g. coordinates in local metres rather than a global frame)"
        )
    return k


def snap_to_grid(values, step, what: str) -> np.ndarray:
    """rint(values / step) as int64 for finite values within 2^52 steps of 0 (one clear error otherwise)."""
    k = np.rint(finite(values, what) / step)
    return _in_range(k, what, f"{MAX_INDEX * step:g}").astype(np.int64)


def snap(values, lo, step, top) -> np.ndarray:
    """Grid index of each (finite) value, clipped to [0, top] (a public, data-independent map)."""
    k = np.rint((finite(values, "values to release") - lo) / step)
    return np.clip(k, 0, top).astype(np.int64)


def release_on_grid(
    k, origin, step, sensitivity_steps, epsilon: float, rng: np.random.Generator, timing_safe: bool = False
) -> np.ndarray:
    """origin + step (k + Z), Z ~ discrete Laplace(sensitivity_steps / ε): ε-DP for integer inputs k
    that neighbours change by at most ``sensitivity_steps`` (numbers or arrays like k).
    ``timing_safe``: fixed-work noise (``dp.sampling``), (ε, ``timing_safe_delta``)-DP."""
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    k = np.asarray(k)
    if k.dtype.kind == "f":
        whole = finite(k, "grid indices")
        if (whole != np.rint(whole)).any():
            raise ValueError("grid indices must be whole numbers (snap values to the grid first)")
    k = _in_range(k.astype(np.int64), "grid indices", f"{MAX_INDEX} steps")
    scale = np.broadcast_to(np.asarray(sensitivity_steps, dtype=float) / epsilon, k.shape)
    noise = discrete_laplace(scale, rng, timing_safe=timing_safe) if k.size else np.zeros(k.shape, dtype=np.int64)
    return origin + step * (k + noise)


def release_bounded(
    values, lo, hi, epsilon: float, rng: np.random.Generator, cells: int = CELLS, timing_safe: bool = False
) -> np.ndarray:
    """ε-LDP reports of values in [lo, hi] (lo, hi numbers or arrays broadcasting with values)."""
    values = np.asarray(values, dtype=float)
    lo = np.broadcast_to(np.asarray(lo, dtype=float), values.shape)
    hi = np.broadcast_to(np.asarray(hi, dtype=float), values.shape)
    step = grid_step(hi - lo, cells)
    top = np.rint((hi - lo) / step)
    return release_on_grid(snap(values, lo, step, top), lo, step, top, epsilon, rng, timing_safe=timing_safe)


def rounded_sensitivity(sensitivity, step):
    """Grid steps that deterministic rounding can put between two values ``sensitivity`` apart.

    |rint(a) − rint(b)| <= floor(|a − b|) + 1; one more step absorbs the floating-point
    error of computing (v − origin) / step.
    """
    return np.floor(np.asarray(sensitivity, dtype=float) / step) + 2


def describe(step: str, noise: str) -> str:
    """The ``discretisation`` text of a guarantee record."""
    return (
        f"input clamped to the public box and rounded to the grid of step {step} (power of two); "
        f"{noise}; exact discrete Laplace sampler (Canonne, Kamath & Steinke 2020), "
        "output on the same grid (Mironov 2012-safe)"
    )
