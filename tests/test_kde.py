import numpy as np
import pytest

from locpriv import kde
from locpriv.seeding import rng


def direct_sum(points, gx, gy, h):
    """O(N P Q) reference: every kernel evaluated at every grid point."""
    X, Y = np.meshgrid(gx, gy, indexing="ij")
    d2 = (X[None] - points[:, 0, None, None]) ** 2 + (Y[None] - points[:, 1, None, None]) ** 2
    return np.exp(-d2 / (2 * h * h)).sum(0)


def test_separable_sum_equals_direct_evaluation():
    r = rng(1, "kde-test")
    pts = r.normal(size=(300, 2))
    gx, gy = np.linspace(-3, 3, 17), np.linspace(-2, 2.5, 13)
    expect = direct_sum(pts, gx, gy, 0.4)
    got = kde.kde_sum(pts, gx, gy, 0.4, chunk=64)  # several chunks and a ragged last one
    assert np.max(np.abs(got - expect)) <= 1e-10 * np.max(expect)


def test_chunk_size_does_not_change_result_beyond_rounding():
    pts = rng(2, "kde-test").normal(size=(1000, 2))
    g = np.linspace(-2, 2, 21)
    a, b = kde.kde_sum(pts, g, g, 0.3, chunk=7), kde.kde_sum(pts, g, g, 0.3, chunk=5000)
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_user_surfaces_sum_to_aggregate():
    pts = rng(3, "kde-test").normal(size=(40, 2))
    g = np.linspace(-2, 2, 11)
    np.testing.assert_allclose(kde.kernel_surfaces(pts, g, g, 0.5).sum(0), kde.kde_sum(pts, g, g, 0.5),
                               rtol=1e-12)


def test_normalised_kde_integrates_to_one():
    pts = np.zeros((1, 2))
    g = np.linspace(-5, 5, 401)
    dens = kde.kde_sum(pts, g, g, 0.5) / kde.normaliser(0.5)
    assert abs(dens.sum() * (g[1] - g[0]) ** 2 - 1) < 1e-6


def test_knn_bandwidth_matches_brute_force():
    pts = rng(4, "kde-test").normal(size=(500, 2))
    k = 20
    h = kde.knn_bandwidth(pts, k, rng(5, "knn"), sample_fraction=0.1)
    idx = rng(5, "knn").choice(500, size=50, replace=False)
    d = np.sqrt(((pts[idx, None, :] - pts[None, :, :]) ** 2).sum(-1))
    expect = np.sort(d, axis=1)[:, k].mean()  # column 0 is the point itself
    assert h == pytest.approx(expect, rel=1e-12)


def test_knn_rejects_k_not_below_n():
    with pytest.raises(ValueError, match="knn_k"):
        kde.knn_bandwidth(np.zeros((10, 2)), 10, rng(0, "x"))


def test_bandwidth_must_be_positive():
    with pytest.raises(ValueError, match="bandwidth"):
        kde.kde_sum(np.zeros((1, 2)), np.arange(3.0), np.arange(3.0), 0.0)
