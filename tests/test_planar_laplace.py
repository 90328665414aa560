"""Planar Laplace on a public grid (Andrés et al. 2013): distribution tests at alpha = 1e-6, as OpenDP does."""

import math

import numpy as np
import pytest
from scipy import stats

from conftest import CountingRng
from locpriv.planar_laplace import (
    METRES_PER_DEGREE,
    epsilon_per_metre,
    grid_noise,
    grid_step,
    guarantee,
    perturb,
    timing_safe_tv,
)

ALPHA = 1e-6
N = 200_000


def _polar(noise):
    return np.hypot(*noise.T), np.mod(np.arctan2(noise[:, 1], noise[:, 0]), 2 * np.pi)


@pytest.mark.parametrize("epsilon", [0.7, 10.0])
def test_radius_is_gamma_2_over_epsilon(epsilon):
    # Polar form of eq. (18): density eps^2 r exp(-eps r), Gamma(shape 2, scale 1/eps).  The grid
    # (step <= 1/(1024 eps)) moves the CDF by ~1e-3 at most, below the KS resolution at N = 2e5.
    radius, _ = _polar(perturb(np.zeros((N, 2)), epsilon, np.random.default_rng(1)))
    assert stats.kstest(radius, stats.gamma(2, scale=1 / epsilon).cdf).pvalue > ALPHA


def test_radius_test_has_power():
    # A Laplace-like radius with the wrong shape (exponential, same mean 2/eps) must be
    # rejected at the same alpha, or the test above proves nothing.
    radius = np.random.default_rng(2).exponential(2 / 0.7, N)
    assert stats.kstest(radius, stats.gamma(2, scale=1 / 0.7).cdf).pvalue < ALPHA


def test_angle_is_uniform():
    _, angle = _polar(perturb(np.zeros((N, 2)), 0.7, np.random.default_rng(3)))
    assert stats.kstest(angle, stats.uniform(0, 2 * np.pi).cdf).pvalue > ALPHA


def _planar_pvalue(k, a, support=60):
    """Chi-square p-value of draws k (n, 2) against P(k) ∝ exp(-a ||k||), cells with expected
    count >= 20, the rest pooled."""
    grid = np.arange(-support, support + 1)
    p = np.exp(-a * np.hypot(*np.meshgrid(grid, grid, indexing="ij")))
    p /= p.sum()
    counts = np.zeros_like(p)
    np.add.at(counts, (np.clip(k[:, 0] + support, 0, 2 * support), np.clip(k[:, 1] + support, 0, 2 * support)), 1)
    keep = p * len(k) >= 20
    obs = np.append(counts[keep], len(k) - counts[keep].sum())
    return stats.chisquare(obs, np.append(p[keep] * len(k), len(k) * (1 - p[keep].sum()))).pvalue


@pytest.mark.parametrize("timing_safe", [False, True])
@pytest.mark.parametrize("a", [1.0, 0.4])
def test_grid_noise_has_the_discrete_planar_law(a, timing_safe):
    """P(K = k) ∝ exp(-a ||k||) exactly (rejection from discrete Laplace proposals): chi-square on the
    cells with expected count >= 20, alpha = 1e-6.  The proposal's own law exp(-||k||_1 / s) is
    rejected by the same test (power: ``test_grid_noise_test_has_power``).  Timing-safe: the same
    law up to total variation timing_safe_tv (< 1e-10)."""
    assert _planar_pvalue(grid_noise(N, a, np.random.default_rng(4), timing_safe), a) > ALPHA


def _independence_pvalue(rounds, radius):
    """Chi-square test of independence of (one round or more) and (radius above its median)."""
    far = radius > np.median(radius)
    table = [
        [np.sum((rounds == 1) & ~far), np.sum((rounds == 1) & far)],
        [np.sum((rounds > 1) & ~far), np.sum((rounds > 1) & far)],
    ]
    return stats.chi2_contingency(table).pvalue


def test_timing_safe_work_is_a_function_of_the_rounds_alone():
    """One user per call (a device answering one query): in timing-safe mode a call's work is 3
    words (two proposals, one coin) and 1 double per rejection round, nothing else, and the
    rounds are independent of the noise (exact rejection): chi-square of independence between
    (rounds > 1) and (radius > median) not rejected at alpha = 1e-6.  Power: the same test
    rejects a work count that also grew with the radius (rounds + [radius > median])."""
    rng = CountingRng(12)
    rounds, radius = [], []
    for _ in range(4000):
        words, doubles = rng.words, rng.doubles
        k = grid_noise(1, 0.05, rng, timing_safe=True)[0]
        assert rng.words - words == 3 * (rng.doubles - doubles)
        rounds.append(rng.doubles - doubles)
        radius.append(np.hypot(*k))
    rounds, radius = np.array(rounds), np.array(radius)
    assert (rounds > 1).sum() > 400  # about 1 in 5 calls takes a second round
    assert _independence_pvalue(rounds, radius) > ALPHA
    assert _independence_pvalue(rounds + (radius > np.median(radius)), radius) < ALPHA


def test_timing_safe_tv_is_small():
    for epsilon in (0.01, 1.0, 100.0):
        assert 0 < timing_safe_tv(epsilon) < 1e-10


def test_grid_noise_test_has_power():
    from locpriv.dp.sampling import discrete_laplace

    proposal = discrete_laplace(math.sqrt(2), np.random.default_rng(5), size=(N, 2))  # no rejection step
    assert _planar_pvalue(proposal, 1.0) < ALPHA


def test_reports_lie_on_the_grid_and_the_noise_does_not_depend_on_the_location():
    """The report is snap(x) + Λ K with K drawn the same way for every x: same stream, same K."""
    eps = 3.0
    step = grid_step(eps)
    assert step == 2.0 ** math.floor(math.log2(1 / (1024 * eps))) and step <= 1 / (1024 * eps)
    points = np.random.default_rng(6).uniform(-5, 5, (1000, 2))
    moved = perturb(points, eps, np.random.default_rng(7))
    assert (moved / step == np.rint(moved / step)).all()  # a public lattice: Mironov-safe
    at_origin = perturb(np.zeros((1000, 2)), eps, np.random.default_rng(7))
    np.testing.assert_array_equal(moved - step * np.rint(points / step), at_origin)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon_is_named(bad):
    with pytest.raises(ValueError, match="epsilon"):
        perturb(np.zeros((10, 2)), bad, np.random.default_rng(0))


def test_bad_points_rejected():
    with pytest.raises(ValueError, match="points"):
        perturb(np.zeros((3, 3)), 1.0, np.random.default_rng(0))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 2.0**63])
def test_non_finite_and_far_points_rejected(bad):
    """NaN and inf have no epsilon; a point 2^63 grid steps out used to wrap silently in int64
    (here 2^63 x 2^-11 per unit at epsilon = 1, far beyond 2^52 steps)."""
    with pytest.raises(ValueError, match=r"points: 1 of 4 values are NaN or infinite|points: 1 values lie more"):
        perturb(np.array([[0.0, 0.0], [1.0, bad]]), 1.0, np.random.default_rng(0))


def test_per_degree_conversion():
    # eps d is unit-free: eps per degree times degrees equals eps per metre times metres.
    assert epsilon_per_metre(METRES_PER_DEGREE) == pytest.approx(1.0)
    assert epsilon_per_metre(10.0) * 2 * METRES_PER_DEGREE == pytest.approx(10.0 * 2)


def test_guarantee_is_formal_and_names_the_metric_and_the_grid():
    g = guarantee(0.5, "metre")
    assert g.model.startswith("geo-indistinguishability") and g.epsilon == 0.5 and g.delta == 0
    assert g.relation == "metric: Euclidean distance in metre" and f"{grid_step(0.5):g}" in g.discretisation
