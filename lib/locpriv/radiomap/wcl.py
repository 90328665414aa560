"""Weighted-centroid localisation (WCL) of [GeoDP-Radio] eq. (18) on uploaded gradients."""

from __future__ import annotations

import numpy as np


def parse_nu(value) -> float:
    """nu as a float; 'inf' / 'Inf' / inf is the limit (argmax cell)."""
    try:
        nu = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"nu: got {value!r}; allowed: a positive number or 'inf'") from None
    if not nu > 0:
        raise ValueError(f"nu: got {value!r}; allowed: a positive number or 'inf'")
    return nu


def wcl(G: np.ndarray, centres: np.ndarray, nu: float) -> np.ndarray:
    """(..., 2) estimates sum_m |G_m|^nu c_m / sum_m |G_m|^nu for every row of G (..., M).

    Any leading shape: (N, M) for one epoch's uploads, (E, N, M) for several at once.  Weights
    are taken relative to each row's largest |G|, which leaves (18) unchanged and keeps |G|^nu
    finite for large nu.  nu = inf is the limit of (18): the centroid of the cells attaining the
    maximum.  A row with no non-zero entry has no estimate (NaN).
    """
    nu = parse_nu(nu)
    A = np.abs(G)
    top = A.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.divide(A, top, out=A)
        w = (rel == 1.0).astype(float) if np.isinf(nu) else rel**nu
        return (w @ centres) / w.sum(axis=-1, keepdims=True)


def localisation_error(G: np.ndarray, centres: np.ndarray, users: np.ndarray, nu: float) -> np.ndarray:
    """Distance (metres) between each user's WCL estimate and true position, shape G.shape[:-1]."""
    return np.linalg.norm(wcl(G, centres, nu) - users, axis=-1)
