"""Planar Laplace (seed 000 eq. 18): distribution tests at alpha = 1e-6, as OpenDP does."""

import numpy as np
import pytest
from scipy import stats

from locpriv.planar_laplace import (METRES_PER_DEGREE, epsilon_per_metre, guarantee,
                                    perturb, planar_laplace_noise)

ALPHA = 1e-6
N = 200_000


def _polar(noise):
    return np.hypot(*noise.T), np.mod(np.arctan2(noise[:, 1], noise[:, 0]), 2 * np.pi)


@pytest.mark.parametrize("epsilon", [0.7, 10.0])
def test_radius_is_gamma_2_over_epsilon(epsilon):
    # Polar form of eq. (18): density eps^2 r exp(-eps r), Gamma(shape 2, scale 1/eps).
    radius, _ = _polar(planar_laplace_noise(N, epsilon, np.random.default_rng(1)))
    assert stats.kstest(radius, stats.gamma(2, scale=1 / epsilon).cdf).pvalue > ALPHA


def test_radius_test_has_power():
    # A Laplace-like radius with the wrong shape (exponential, same mean 2/eps) must be
    # rejected at the same alpha, or the test above proves nothing.
    radius = np.random.default_rng(2).exponential(2 / 0.7, N)
    assert stats.kstest(radius, stats.gamma(2, scale=1 / 0.7).cdf).pvalue < ALPHA


def test_angle_is_uniform():
    _, angle = _polar(planar_laplace_noise(N, 0.7, np.random.default_rng(3)))
    assert stats.kstest(angle, stats.uniform(0, 2 * np.pi).cdf).pvalue > ALPHA


def test_perturb_adds_noise_independent_of_location():
    points = np.random.default_rng(4).uniform(-5, 5, (1000, 2))
    moved = perturb(points, 3.0, np.random.default_rng(5))
    expected = planar_laplace_noise(1000, 3.0, np.random.default_rng(5))
    np.testing.assert_allclose(moved - points, expected, atol=1e-12)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon_is_named(bad):
    with pytest.raises(ValueError, match="epsilon"):
        planar_laplace_noise(10, bad, np.random.default_rng(0))


def test_bad_points_rejected():
    with pytest.raises(ValueError, match="points"):
        perturb(np.zeros((3, 3)), 1.0, np.random.default_rng(0))


def test_per_degree_conversion():
    # eps d is unit-free: eps per degree times degrees equals eps per metre times metres.
    assert epsilon_per_metre(METRES_PER_DEGREE) == pytest.approx(1.0)
    assert epsilon_per_metre(10.0) * 2 * METRES_PER_DEGREE == pytest.approx(10.0 * 2)


def test_guarantee_is_formal():
    g = guarantee(0.5, "metre")
    assert g["model"] == "geo-indistinguishability" and g["epsilon"] == 0.5 and g["delta"] == 0
