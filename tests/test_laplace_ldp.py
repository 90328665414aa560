"""Laplace LDP and the deconvoluting KDE ([Deconv-LDP]) as the location branch uses them."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

from locpriv import kde, laplace_ldp, mechanisms
from locpriv.domain import Domain, Grid


@pytest.mark.parametrize("ratio", [0.3, 1.0, 2.5])
def test_adjusted_gaussian_kernel_matches_fourier_inversion(ratio):
    """K_hat = F^-1[phi_K(t) / phi_noise(t / h)], phi_noise(s) = 1 / (1 + b^2 s^2), to 1e-8."""
    u = np.array([0.0, 0.4, 1.3, 2.7])
    closed = kde.kernel_factor(np.zeros(1), u, 1.0, laplace_b=ratio)[0] / math.sqrt(2 * math.pi)
    numeric = [
        integrate.quad(
            lambda t, x=x: math.cos(t * x) * math.exp(-t * t / 2) * (1 + ratio**2 * t * t), 0, math.inf, epsabs=1e-12
        )[0]
        / math.pi
        for x in u
    ]
    np.testing.assert_allclose(closed, numeric, atol=1e-8)


def test_deconvoluting_kde_is_unbiased_for_the_noiseless_kde():
    """Mean over R noisy draws within 5 standard errors of the noiseless KDE, every cell (eq. 6)."""
    rng = np.random.default_rng(0)
    pts = rng.normal(0, 1, size=(400, 2))
    gx, gy = np.linspace(-3, 3, 13), np.linspace(-3, 3, 11)
    h, b = 0.6, (0.4, 0.3)
    truth = kde.kde_sum(pts, gx, gy, h)
    R = 300
    draws = np.stack([kde.kde_sum(pts + rng.laplace(0, 1, pts.shape) * b, gx, gy, h, laplace_b=b) for _ in range(R)])
    se = draws.std(axis=0, ddof=1) / math.sqrt(R)
    assert (np.abs(draws.mean(axis=0) - truth) < 5 * se + 1e-12).all()
    naive = np.stack([kde.kde_sum(pts + rng.laplace(0, 1, pts.shape) * b, gx, gy, h) for _ in range(50)])
    assert naive.mean(axis=0).max() < truth.max()  # the naive KDE is flatter


def test_reports_lie_on_the_public_grid_with_the_calibrated_spread():
    """Reports are lo + Λ k (Mironov-safe); their noise has Var ≈ 2 b^2, b = 2 side / ε (the
    discrete Laplace of scale b / Λ >= 2048 steps is continuous Laplace to < 1e-6 relative):
    sample variance of 1e5 draws within 5 sd (relative sd sqrt(5 / n) = 0.7 %)."""
    bounds = np.array([[0.0, 10.0], [-2.0, 2.0]])
    eps = 1.3
    x = np.tile([5.0, 0.0], (100_000, 1))
    z = laplace_ldp.randomize(x, bounds, eps, np.random.default_rng(3))
    step = laplace_ldp.grid_steps(bounds)
    assert ((z - bounds[:, 0]) / step == np.rint((z - bounds[:, 0]) / step)).all()
    b = 2 * np.array([10.0, 4.0]) / eps
    np.testing.assert_allclose((z - x).var(axis=0), 2 * b**2, rtol=5 * math.sqrt(5 / 100_000))


def test_values_outside_the_bounds_are_an_error():
    with pytest.raises(ValueError, match="fico"):
        laplace_ldp.randomize(
            np.array([500.0, 900.0]), np.array([[600.0, 850.0]]), 1.0, np.random.default_rng(0), names=("fico",)
        )


def test_location_plugin_clamps_counts_and_deconvolves():
    mech = mechanisms.get("laplace_ldp")(h=0.5, epsilon=4.0)
    assert mech.settings["estimator"] == "deconv"
    grid = Grid.regular(Domain(-3, 3, -3, 3), 20, 20)
    pts = pd.DataFrame({"user": np.arange(5), "x": [0.0, 5.0, -1.0, 2.0, 0.5], "y": [0.0, 0.0, -4.0, 1.0, 0.5]})
    view = mech.randomize(pts, rng=1, domain=grid)
    assert view.attrs["clamped_to_box"] == 2 and list(view.columns) == ["user", "x", "y"]
    assert mech.guarantee().epsilon == 4.0
    naive = mechanisms.get("laplace_ldp")(h=0.5, epsilon=4.0, estimator="naive")
    assert not np.allclose(mech.partial(view, grid), naive.partial(view, grid))
