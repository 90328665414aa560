"""Planar Laplace for geo-indistinguishability on a public grid (Andrés et al. 2013 §4-5; seed of
the federated-KDE paper's geoind baseline, its eq. 18).

The continuous mechanism reports x + noise with density ε²/(2π) exp(−ε ||noise||).
Sampled on doubles it is not geo-indistinguishable (the doubles reachable from x
depend on x: Mironov 2012), so, like Andrés et al. §5, we release on a grid:

* public grid of step Λ = ``grid_step(ε)``, the largest power of two <= 1 / (1024 ε)
  (the noise's mean radius 2 / ε spans >= 2048 steps), with its origin at 0;
* the input is snapped to the nearest grid point x̂ = Λ rint(x / Λ) (a public map);
* the report is Λ (x̂/Λ + K), K in Z² drawn with P(K = k) ∝ exp(−a ||k||₂), a = ε Λ:
  the discrete planar Laplace law on the grid (the grid restriction of eq. 18).

Sampling K: propose k with independent exact discrete Laplace coordinates of scale
s >= √2 / a (``dp.sampling``), P ∝ exp(−||k||₁ / s) >= exp(−a ||k||₂) since
||k||₁ <= √2 ||k||₂, and accept with probability exp(−(a ||k||₂ − ||k||₁ / s)) <= 1
(rejection sampling: the accepted k has exactly the target law; ~79 % accepted).
The acceptance coin is an exact Bernoulli(e^−⌊γ⌋) (``dp.sampling.bernoulli_exp_integer``)
times a float Bernoulli(exp(−frac γ)) with exp(−frac γ) >= e^−1: the only floating-point
step, with relative error <= 2^-50, i.e. log-probabilities exact to ~1e-15.

Timing-safe mode (``timing_safe=True``, for a device answering one user at a time): the
proposals and the integer coin do fixed work per round (``dp.sampling``), the fraction coin
always did.  The number of rounds R is the one data-dependent quantity, and in exact
rejection sampling R is independent of the accepted K and of x; coupling the two samplers
round by round, the timing-safe (R, K) is within total variation E[R] · (2 tv_L + tv_coin)
of the exact (R, K) (``timing_safe_tv``), E[R] = 1 / acceptance <= the bound of
``_acceptance_lower_bound``.

Guarantee (ε-geo-indistinguishability, metric DP): the law of K's translate depends
on x only through x̂ and P(report = z | x̂) / P(report = z | x̂′)
= exp(a (||z − x̂′|| − ||z − x̂||)/Λ) <= exp(ε ||x̂ − x̂′||) by the triangle inequality,
for every report z: an ε-geo-indistinguishable mechanism for grid locations, with
full support Λ Z² for every input (no Mironov gap).  For arbitrary x, x′,
||x̂ − x̂′|| <= ||x − x′|| + √2 Λ, so the log-ratio is at most ε d(x, x′) + √2 ε Λ,
with √2 ε Λ <= 0.0014 (recorded in the guarantee's note).
"""

from __future__ import annotations

import math

import numpy as np

from .dp import Guarantee, sampling
from .dp.grid import grid_step as _grid_step
from .dp.grid import snap_to_grid
from .dp.sampling import bernoulli_exp_integer, discrete_laplace, exact_scale

# Length of one degree of latitude (the meridian degree), the constant the paper's
# per-degree epsilons are converted with.  The WGS84 meridian degree varies from
# 110,574 m at the equator to 111,694 m at the poles; 111,320 m is the conventional
# round value (the equatorial degree of longitude), accurate to 0.7 %.
METRES_PER_DEGREE = 111_320.0
STEPS_PER_UNIT_NOISE = 1024


def _epsilon(epsilon) -> float:
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(
            f"geo-indistinguishability epsilon must be a finite number > 0 (per distance unit), got {epsilon}"
        )
    return epsilon


def grid_step(epsilon: float) -> float:
    """Λ: the largest power of two <= 1 / (1024 ε), in the distance unit of ε."""
    return _grid_step(1.0 / _epsilon(epsilon), STEPS_PER_UNIT_NOISE)


def _accept(gamma: np.ndarray, rng: np.random.Generator, timing_safe: bool) -> np.ndarray:
    """Bernoulli(exp(−γ)) for γ >= 0: an exact Bernoulli(e^−⌊γ⌋) and a float coin for the fraction."""
    whole = np.floor(gamma)
    return bernoulli_exp_integer(whole.astype(np.int64), rng, timing_safe=timing_safe) & (
        rng.random(gamma.size) < np.exp(-(gamma - whole))
    )


def grid_noise(n: int, a: float, rng: np.random.Generator, timing_safe: bool = False) -> np.ndarray:
    """n draws (n, 2) of K in Z² with P(K = k) ∝ exp(−a ||k||₂), by rejection (see module docstring)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"number of users n must be an integer >= 0, got {n!r}")
    s = exact_scale(math.sqrt(2.0) / a)
    out = np.zeros((n, 2), dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        k = discrete_laplace(s, rng, size=(pending.size, 2), timing_safe=timing_safe)
        gamma = np.maximum(a * np.hypot(k[:, 0], k[:, 1]) - np.abs(k).sum(axis=1) / s, 0.0)
        ok = _accept(gamma, rng, timing_safe)
        out[pending[ok]] = k[ok]
        pending = pending[~ok]
    return out


def _acceptance_lower_bound(a: float) -> float:
    """P(accept) = Σ_k exp(−a ||k||) / (Σ_j p^|j|)², p = e^(−1/s).  Each k's cell k + [−½, ½)²
    has ||x|| >= ||k|| − √2/2, so the numerator is >= e^(−a/√2) 2π / a²; the denominator is
    coth(1/(2s))² <= (2s + 1/(6s))²."""
    s = exact_scale(math.sqrt(2.0) / a)
    return math.exp(-a / math.sqrt(2.0)) * 2 * math.pi / (a * a * (2 * s + 1 / (6 * s)) ** 2)


def timing_safe_tv(epsilon: float) -> float:
    """Total variation between one user's (report, rounds) from ``perturb(..., timing_safe=True)``
    and from the exact sampler (module docstring); the exact one's rounds carry no information."""
    epsilon = _epsilon(epsilon)
    a = epsilon * grid_step(epsilon)
    per_round = 2 * sampling.timing_safe_tv(math.sqrt(2.0) / a) + sampling.BERNOULLI_TIMING_SAFE_TV
    return per_round / _acceptance_lower_bound(a)


def perturb(points: np.ndarray, epsilon: float, rng: np.random.Generator, timing_safe: bool = False) -> np.ndarray:
    """Each user's location (N, 2) snapped to the grid and moved by its own grid planar Laplace draw
    (``timing_safe``: fixed work per rejection round, see the module docstring)."""
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"points must be an (N, 2) array, got shape {points.shape}")
    epsilon = _epsilon(epsilon)
    step = grid_step(epsilon)
    snapped = snap_to_grid(points, step, "points")
    return step * (snapped + grid_noise(len(points), epsilon * step, rng, timing_safe))


def noise_of(reports: np.ndarray, points: np.ndarray, epsilon: float) -> np.ndarray:
    """The lattice noise K (N, 2) of each report: ``perturb`` inverted given the true points."""
    step = grid_step(epsilon)
    return snap_to_grid(reports, step, "reports") - snap_to_grid(points, step, "points")


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


def guarantee(epsilon: float, units: str, timing_safe: bool = False) -> Guarantee:
    """The formal guarantee of ``perturb`` at ``epsilon`` per ``units`` of distance.

    ``timing_safe``: the record's delta is the total variation tv = ``timing_safe_tv(epsilon)`` of one
    report (with its round count) from the exact sampler's, whose rounds carry nothing; for inputs d
    apart P'(S | x) <= P(S | x) + tv <= e^(eps d) P(S | x') + tv <= e^(eps d) P'(S | x') + (1 + e^(eps d)) tv,
    so the map gives (eps d, (1 + e^(eps d)) tv) (``Guarantee.map``): the delta grows with the distance
    and is meaningful up to eps d ~ 20 (tv ~ 1e-10), beyond which the exact mechanism's e^(-eps d) is
    itself below any delta worth stating."""
    epsilon = _epsilon(epsilon)
    step = grid_step(epsilon)
    tv = timing_safe_tv(epsilon) if timing_safe else 0.0
    fixed = (
        f"; timing: fixed work per rejection round, the round count independent of the noise; delta = "
        f"{tv:.3g} is the report's total variation from exact, inputs d apart get "
        f"(epsilon d, (1 + e^(epsilon d)) delta) (planar_laplace.timing_safe_tv)"
        if timing_safe
        else ""
    )
    return Guarantee(
        model="geo-indistinguishability (metric DP)" + (", with delta" if timing_safe else ""),
        epsilon=epsilon,
        delta=tv,
        relation=f"metric: Euclidean distance in {units}",
        covers="each user's location, at every distance scale (indistinguishability decays as exp(-epsilon d))",
        discretisation=f"location snapped to the public grid of step {step:g} {units} (power of two, "
        f"<= 1/(1024 epsilon)); report = grid point + discrete planar Laplace noise on that "
        f"grid (exact rejection sampler from exact discrete Laplace proposals)",
        note=f"planar Laplace (Andres et al. 2013, eq. 18 of the federated-KDE paper) restricted to the grid; "
        f"exact for grid locations; for arbitrary ones the log-ratio bound is epsilon d + "
        f"{math.sqrt(2) * epsilon * step:.2g} (snapping)" + fixed,
    )
