"""Planar Laplace mechanism for geo-indistinguishability (seed 000 §4.2.3, eq. 18; Andrés et al.).

A user at x0 reports x drawn from D_eps(x0)(x) = eps^2 / (2 pi) exp(-eps ||x - x0||).
In polar coordinates around x0 the density is eps^2/(2 pi) e^{-eps r} r dr dtheta:
the angle is uniform on [0, 2 pi) and independent of the radius, whose density
eps^2 r e^{-eps r} is Gamma(shape 2, scale 1/eps).  Drawing the radius directly from
the Gamma law replaces the Lambert-W inverse CDF of the original paper (same law).

Guarantee: eps-geo-indistinguishability (metric DP, eq. 17): for all x, x' and every
set of reports Z, P(K(x) in Z) <= exp(eps d(x, x')) P(K(x') in Z), with d the
Euclidean distance in the units eps is given in.  It holds for the continuous
mechanism; rounding to floats and any post-processing (e.g. the exact KDE the user
then computes from the perturbed point) do not weaken it beyond float effects.
"""

from __future__ import annotations

import math

import numpy as np

# Length of one degree of latitude (the meridian degree), the constant the paper's
# per-degree epsilons are converted with.  The WGS84 meridian degree varies from
# 110,574 m at the equator to 111,694 m at the poles; 111,320 m is the conventional
# round value (the equatorial degree of longitude), accurate to 0.7 %.
METRES_PER_DEGREE = 111_320.0


def _epsilon(epsilon) -> float:
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"geo-indistinguishability epsilon must be a finite number > 0 "
                         f"(per distance unit), got {epsilon}")
    return epsilon


def planar_laplace_noise(n: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """n independent planar Laplace displacements, shape (n, 2), in 1/epsilon units."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"number of users n must be an integer >= 0, got {n!r}")
    epsilon = _epsilon(epsilon)
    radius = rng.gamma(2.0, 1.0 / epsilon, size=n)
    angle = rng.uniform(0.0, 2 * np.pi, size=n)
    return np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)


def perturb(points: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Each user's location (N, 2) moved by its own planar Laplace draw (client side)."""
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2 or not np.isfinite(points).all():
        raise ValueError(f"points must be a finite (N, 2) array, got shape {points.shape}")
    return points + planar_laplace_noise(len(points), epsilon, rng)


def epsilon_per_metre(epsilon_per_degree: float) -> float:
    """The paper's per-degree epsilon for real data (§4.2.3) in per-metre units.

    eps d is unit-free, so eps_m = eps_deg / METRES_PER_DEGREE.  The paper perturbs raw
    (lat, lon) degrees, where an east-west degree is only cos(latitude) times as long
    as a north-south one; we perturb projected metres isotropically with the meridian
    degree.  North-south the guarantee equals the paper's; east-west ours is stronger
    (the paper's degree distance overstates metres by 1/cos(latitude), e.g. 1.30x in
    Beijing at 39.9 N), so eps_m never claims more privacy than the paper's setting.
    """
    return _epsilon(epsilon_per_degree) / METRES_PER_DEGREE


def guarantee(epsilon: float, units: str) -> dict:
    """The formal guarantee, in the mechanism-plugin form."""
    epsilon = _epsilon(epsilon)
    return {"model": "geo-indistinguishability", "epsilon": epsilon, "delta": 0.0,
            "note": f"eps-geo-indistinguishability (metric DP) with eps = {epsilon:g} per {units} "
                    "of Euclidean distance; planar Laplace, seed 000 eq. (18)"}
