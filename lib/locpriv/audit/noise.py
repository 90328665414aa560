"""The noise actually drawn, checked in every run against the law its record states.

The attack stage knows the run's true data, so a mechanism can compute the *realised noise* of
each released number: the release minus the exact contribution (per report for a local
mechanism, per released count for a central one), ``Mechanism.realised_noise``.  Each set of
such values comes with the law the record states for it (the scale the view records, which the
informed adversary's invariant ties to the recorded ε).  A run whose noise is weaker than its
record fails the attack job with one line naming the mechanism, the run and the statistic.

Test (per set of n values T_1..T_n, iid under the record's law, T ≥ 0 a magnitude: |Z| of a
discrete Laplace Z, the radius of a planar Laplace draw, the number of OUE bits set where the
user is not): the sum S = Σ T_i is the sufficient statistic of each of these laws' one-parameter
family in ε, and noise drawn at a larger ε than recorded makes S stochastically smaller.  So the
test is one-sided on S, with the Chernoff bound as its p-value:

    P(S <= s) <= min over θ < 0 of exp(n log M(θ) − θ s),   M(θ) = E exp(θ T) under the record,

valid for any θ (the minimiser is found numerically; a poor one only costs power).  The run's
sets are tested at α / m each (m sets, Bonferroni), α = ``ALPHA`` = 1e-6: a correct run fails
with probability at most 1e-6.  Power, stated for every run: a 2ε fault (every value drawn at
twice the recorded ε) is rejected with probability at least 1 − min over θ > 0 of
exp(n log M₂(θ) − θ s*), M₂ the law at 2ε and s* the largest sum the test rejects (Chernoff
again, so the stated power is a lower bound).  The run's ``noise_epsilon_ratio`` is, for its set
with the smallest p-value, the ε at which the law's mean magnitude equals the observed one, over
the recorded ε (1 for correct noise, about 2 for noise at 2ε): a reading aid, not the test.

What it cannot see: a fault that leaves the mean magnitude in place (noise of the right size
from the wrong law, e.g. per-axis Laplace in place of planar Laplace with the same mean radius,
or noise correlated across users or with the data), a fault in a release the mechanism does not
expose as realised noise (PrivTree's split decisions show only their sign), and anything in
what a report reveals beyond its noise (e.g. a user reporting twice): those are the audit's
(``locpriv.audit.cases``) and the invariant's (``locpriv.adversary.informed``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

ALPHA = 1e-6
FAULT_FACTOR = 2.0  # the fault whose power every run states: noise drawn at 2ε
# Σ_{m ∈ Z², m ≠ 0} |m|^-3 (= 4 ζ(3/2) β(3/2)), for the lattice planar Laplace's normaliser
LATTICE_ZETA = 9.0336217


class NoiseCheckFailure(RuntimeError):
    """The noise a run drew is weaker than the law its record states."""


class DiscreteLaplace:
    """|Z| for Z on the integers with P(Z = z) ∝ exp(−|z| / scale) (``dp.sampling.discrete_laplace``).

    With r = e^(−1/scale): P(|Z| = 0) = (1 − r)/(1 + r), P(|Z| = k) = 2 (1 − r) r^k / (1 + r), so
    M(θ) = (1 − r)/(1 + r) · (1 + r e^θ)/(1 − r e^θ) for θ < 1/scale and E|Z| = 2 r / (1 − r²).
    The scale is inversely proportional to ε.
    """

    def __init__(self, scale: float):
        self.scale = float(scale)
        self.theta_max = 1.0 / self.scale

    def at(self, factor: float) -> DiscreteLaplace:
        return DiscreteLaplace(self.scale / factor)

    def log_mgf(self, theta: float) -> float:
        log_r = -1.0 / self.scale
        u = math.exp(log_r + theta)
        return math.log1p(u) - math.log1p(-u) + math.log(-math.expm1(log_r)) - math.log1p(math.exp(log_r))

    def mean(self) -> float:
        r = math.exp(-1.0 / self.scale)
        return 2 * r / (1 - r * r)

    def factor_of(self, mean: float) -> float:
        """The ε factor whose law has this mean |Z|."""
        if mean <= 0:
            return math.inf
        r = (math.sqrt(1 + mean * mean) - 1) / mean  # 2 r / (1 − r²) = mean
        return self.scale / (-1.0 / math.log(r))


class LatticePlanarLaplaceRadius:
    """Λ ||K|| for K in Z² with P(K = k) ∝ exp(−a ||k||), a = ε Λ (``planar_laplace.grid_noise``), in data units.

    Its moment generating function is F(c) / F(a), c = (ε − θ) Λ, F(c) = Σ_k exp(−c ||k||).  By
    Poisson summation F(c) = 2π/c² + Σ_{m ≠ 0} 2π c / (c² + 4π² |m|²)^(3/2), every term positive
    and the sum at most c · LATTICE_ZETA / (4π²), so M(θ) <= (a / c)² (1 + c³ LATTICE_ZETA / (8π³)):
    the continuous Gamma(2, 1/ε) radius's (ε / (ε − θ))² times a factor within 1e-9 of 1 for
    the grid step's a <= 1/1024 (used as the bound; mean 2/ε to the same accuracy).
    """

    def __init__(self, epsilon: float, step: float):
        self.epsilon, self.step = float(epsilon), float(step)
        self.theta_max = self.epsilon

    def at(self, factor: float) -> LatticePlanarLaplaceRadius:
        return LatticePlanarLaplaceRadius(self.epsilon * factor, self.step)

    def log_mgf(self, theta: float) -> float:
        c = (self.epsilon - theta) * self.step
        return 2 * math.log(self.epsilon / (self.epsilon - theta)) + math.log1p(c**3 * LATTICE_ZETA / (8 * math.pi**3))

    def mean(self) -> float:
        return 2.0 / self.epsilon

    def factor_of(self, mean: float) -> float:
        return math.inf if mean <= 0 else 2.0 / (mean * self.epsilon)


class OUEZeros:
    """The number of bits set among a user's ``bits`` bits that are not its own cell's, under optimized unary
    encoding at ε: Binomial(bits, q), q = 1 / (e^ε + 1) (Wang et al. 2017); the own bit (1/2) does not
    depend on ε."""

    def __init__(self, epsilon: float, bits: int):
        self.epsilon, self.bits = float(epsilon), int(bits)
        self.q = 1.0 / (math.exp(self.epsilon) + 1.0)
        self.theta_max = math.inf

    def at(self, factor: float) -> OUEZeros:
        return OUEZeros(self.epsilon * factor, self.bits)

    def log_mgf(self, theta: float) -> float:
        return self.bits * float(np.logaddexp(math.log1p(-self.q), math.log(self.q) + theta))

    def mean(self) -> float:
        return self.bits * self.q

    def factor_of(self, mean: float) -> float:
        q = mean / self.bits if self.bits else 0.0
        return math.inf if q <= 0 else math.log(1.0 / q - 1.0) / self.epsilon


@dataclass(frozen=True)
class Noise:
    """One set of a run's realised noise: ``values`` (magnitudes, iid under ``law`` if the record holds)."""

    statistic: str  # what the values are, e.g. "|report - snapped location|, x, grid steps"
    values: np.ndarray
    law: object  # DiscreteLaplace | LatticePlanarLaplaceRadius | OUEZeros


def _chernoff(law, n: int, total: float, lower: bool) -> float:
    """log of the Chernoff bound on P(S <= total) (``lower``) or P(S >= total), S a sum of n draws of ``law``."""

    def exponent(theta):
        return n * law.log_mgf(theta) - theta * total

    scale = max(law.mean(), 1e-300)
    lo, hi = (-200.0 / scale, 0.0) if lower else (0.0, min(law.theta_max * (1 - 1e-9), 200.0 / scale))
    best = optimize.minimize_scalar(exponent, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10 / scale})
    # any θ gives a valid bound: the best of the minimiser's and the end of the range (a sum near 0)
    return min(0.0, float(best.fun), exponent(lo) if lower else 0.0)


def p_value(noise: Noise) -> float:
    """Chernoff bound on P(S <= observed sum) under the record's law (one-sided: noise weaker than recorded)."""
    n = len(noise.values)
    return 1.0 if n == 0 else math.exp(_chernoff(noise.law, n, float(np.sum(noise.values)), lower=True))


def power(law, n: int, alpha: float, factor: float = FAULT_FACTOR) -> float:
    """Lower bound on the probability that the test at level ``alpha`` rejects n values drawn at ``factor`` × ε."""
    if n == 0:
        return 0.0
    mean = n * law.mean()

    def rejects(total):
        return _chernoff(law, n, total, lower=True) <= math.log(alpha)

    if not rejects(0.0):
        return 0.0
    # the largest sum the test rejects (the p-value grows with the sum)
    critical = optimize.brentq(lambda t: _chernoff(law, n, t, lower=True) - math.log(alpha), 0.0, mean)
    alt = law.at(factor)
    if critical <= n * alt.mean():
        return 0.0  # the bound says nothing below the alternative's own mean
    return 1.0 - math.exp(_chernoff(alt, n, critical, lower=False))


@dataclass(frozen=True)
class Result:
    p: float  # the run's p-value: the smallest set's, times the number of sets (Bonferroni), capped at 1
    epsilon_ratio: float  # that set's realised ε over the recorded one
    power: float  # lower bound on rejecting a 2ε fault at this run's size
    statistic: str  # the set with the smallest p-value (the ratio's)
    values: int  # realised noise values checked

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def check(noises: list[Noise], *, mechanism: str, run: str, alpha: float = ALPHA) -> Result:
    """Test every set (each at α / m); raise NoiseCheckFailure (one line) if the run's p-value is <= α."""
    if not noises:
        raise ValueError(f"{mechanism}: no realised noise to check")
    m = len(noises)
    ps = [p_value(nz) for nz in noises]
    ratios = [nz.law.factor_of(float(np.mean(nz.values))) if len(nz.values) else math.nan for nz in noises]
    worst = int(np.argmin(ps))
    result = Result(
        p=min(1.0, m * ps[worst]),
        epsilon_ratio=float(ratios[worst]),
        power=max(power(nz.law, len(nz.values), alpha / m) for nz in noises),
        statistic=noises[worst].statistic,
        values=int(sum(len(nz.values) for nz in noises)),
    )
    if result.p <= alpha:
        bad = noises[worst]
        n, total = len(bad.values), float(np.sum(bad.values))
        raise NoiseCheckFailure(
            f"noise check failed: mechanism {mechanism}, run {run}: realised noise weaker than recorded in "
            f"{bad.statistic} (n = {n}, sum {total:.6g} vs expected {n * bad.law.mean():.6g}; realised epsilon "
            f"{ratios[worst]:.3g} x recorded), p <= {result.p:.3g} < alpha = {alpha:g}"
        )
    return result
