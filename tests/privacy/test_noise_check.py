"""The per-run check of the noise actually drawn (``locpriv.audit.noise``): its laws, its level and its power.

Seeds are fixed; each Monte Carlo comparison states its bound.  The stage-level tests (every mechanism's
run checks its noise; laplace_ldp at 2 eps and PrivTree's counts at 4 eps with their records untouched
fail the run) are in tests/test_informed_stage.py.
"""

import math

import numpy as np
import pytest

from locpriv import planar_laplace
from locpriv.audit import noise
from locpriv.dp.sampling import discrete_laplace


def test_discrete_laplace_moment_generating_function_is_exact():
    law = noise.DiscreteLaplace(3.7)
    z = np.arange(-400, 401)
    pmf = np.exp(-np.abs(z) / law.scale)
    pmf /= pmf.sum()
    for theta in (-1.0, -0.1, 0.0, 0.1, 0.15):  # below 1/scale = 0.27, where the truncated sum is exact
        assert law.log_mgf(theta) == pytest.approx(
            math.log(np.sum(pmf * np.exp(theta * np.abs(z)))), rel=1e-9, abs=1e-12
        )
    assert law.mean() == pytest.approx(np.sum(pmf * np.abs(z)), rel=1e-12)
    assert law.factor_of(law.at(2.0).mean()) == pytest.approx(2.0)


def test_lattice_planar_laplace_bound_holds_and_is_tight():
    # a coarse lattice (a = eps step = 0.3) where the exact sum over Z^2 is cheap: the bound is above it, by at
    # most the two Poisson-summation terms (which are below 1e-9 at the mechanism's a <= 1/1024)
    epsilon, step = 3.0, 0.1
    law = noise.LatticePlanarLaplaceRadius(epsilon, step)
    k = np.arange(-300, 301)
    r = step * np.hypot(k[:, None], k[None, :])
    weight = np.exp(-epsilon * r)
    for theta in (-5.0, -1.0, 0.5, 2.0):
        exact = math.log(np.sum(weight * np.exp(theta * r)) / weight.sum())
        c, a = (epsilon - theta) * step, epsilon * step
        slack = math.log1p(c**3 * noise.LATTICE_ZETA / (8 * math.pi**3)) + math.log1p(
            a**3 * noise.LATTICE_ZETA / (8 * math.pi**3)
        )
        assert exact <= law.log_mgf(theta) <= exact + slack
    assert law.mean() == pytest.approx(np.sum(weight * r) / weight.sum(), rel=1e-2)  # a reading aid: 2/eps


def test_oue_zeros_law():
    law = noise.OUEZeros(2.0, 15)
    assert law.mean() == pytest.approx(15 / (math.e**2 + 1))
    assert law.log_mgf(0.7) == pytest.approx(15 * math.log(1 - law.q + law.q * math.exp(0.7)))
    assert law.factor_of(law.at(2.0).mean()) == pytest.approx(2.0)


def _sets(scale, factor, n, sets, seed):
    rng = np.random.default_rng(seed)
    return np.abs(discrete_laplace(scale / factor, rng, size=(sets, n)))


def test_the_level_holds_under_the_record():
    # 4,000 correct sets of 40 values: the Chernoff p-value is conservative, so P(p <= 0.01) <= 0.01;
    # allowed: 0.01 + 4 binomial standard deviations (0.0063)
    law = noise.DiscreteLaplace(6.0)
    ps = np.array([noise.p_value(noise.Noise("t", v, law)) for v in _sets(6.0, 1.0, 40, 4000, 1)])
    assert (ps <= 0.01).mean() <= 0.01 + 4 * math.sqrt(0.01 * 0.99 / 4000)
    assert (ps <= 0.5).mean() > 0.05  # not vacuous: it does reach small values


def test_the_stated_power_is_a_lower_bound():
    # n = 60 values at alpha = 0.01: a 2 eps fault's stated power is strictly between 0 and 1 here, and the
    # rejection rate over 2,000 faulty sets is at least that, minus 4 binomial standard deviations
    law, n, alpha = noise.DiscreteLaplace(6.0), 60, 0.01
    stated = noise.power(law, n, alpha)
    assert 0.05 < stated < 0.99
    ps = np.array([noise.p_value(noise.Noise("t", v, law)) for v in _sets(6.0, 2.0, n, 2000, 2)])
    rate = (ps <= alpha).mean()
    assert rate >= stated - 4 * math.sqrt(stated * (1 - stated) / 2000)


def test_a_run_fails_in_one_line_naming_mechanism_run_and_statistic():
    law = noise.DiscreteLaplace(50.0)
    weak = noise.Noise("|report - location| in x, grid steps", _sets(50.0, 2.0, 2000, 1, 3)[0], law)
    fine = noise.Noise("|report - location| in y, grid steps", _sets(50.0, 1.0, 2000, 1, 4)[0], law)
    result = noise.check([fine], mechanism="m", run="ds/m/epsilon=1/rep~0")
    assert result.p > noise.ALPHA and 0.9 < result.epsilon_ratio < 1.1 and result.power > 0.999
    with pytest.raises(noise.NoiseCheckFailure) as err:
        noise.check([fine, weak], mechanism="m", run="ds/m/epsilon=1/rep~0")
    message = str(err.value)
    assert "\n" not in message
    assert "mechanism m, run ds/m/epsilon=1/rep~0" in message and "in x, grid steps" in message
    assert "realised epsilon 2" in message or "realised epsilon 1.9" in message


def test_geoind_noise_is_recovered_exactly_from_the_report():
    rng = np.random.default_rng(5)
    points = rng.normal(0, 3, (500, 2))
    reports = planar_laplace.perturb(points, 2.0, rng)
    k = planar_laplace.noise_of(reports, points, 2.0)
    step = planar_laplace.grid_step(2.0)
    np.testing.assert_array_equal(reports, step * (np.rint(points / step) + k))
