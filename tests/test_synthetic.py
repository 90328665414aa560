import numpy as np
import pytest

from locpriv.datasets import synthetic
from locpriv.seeding import rng


@pytest.mark.parametrize("pattern,box", [("gauss9", 4.0), ("octagon8", 8.0)])
def test_density_integrates_to_one(pattern, box):
    g = np.linspace(-box, box, 801)
    dens = synthetic.PATTERNS[pattern]().density(g, g)
    assert abs(dens.sum() * (g[1] - g[0]) ** 2 - 1) < 1e-3


def test_octagon_covariance_is_the_printed_matrix():
    mix = synthetic.octagon8()
    for i in range(1, 9):
        a = np.pi * i / 4
        printed = np.array(
            [
                [np.cos(a) ** 2 + 0.16**2 * np.sin(a) ** 2, (1 - 0.16**2) * np.sin(a) * np.cos(a)],
                [(1 - 0.16**2) * np.sin(a) * np.cos(a), np.sin(a) ** 2 + 0.16**2 * np.cos(a) ** 2],
            ]
        )
        np.testing.assert_allclose(mix.covs[i - 1], printed, atol=1e-15)
        np.testing.assert_allclose(mix.means[i - 1], [3 * np.cos(a), 3 * np.sin(a)], atol=1e-15)


@pytest.mark.parametrize("pattern", ["gauss9", "octagon8"])
def test_sample_moments_match_the_mixture(pattern):
    n = 200_000
    pts, mix = synthetic.generate(pattern, n, rng(11, "moments", pattern))
    xy = pts[["x", "y"]].to_numpy()
    mean = mix.means.mean(0)
    cov = mix.covs.mean(0) + np.cov(mix.means.T, bias=True)
    # per-coordinate standard error of the mean is sqrt(var / n); 6 SE ~ 2e-9 two-sided
    se = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(xy.mean(0) - mean) < 6 * se)
    # sample variance has SE sqrt((mu4 - var^2) / n); mu4 of each marginal is
    # exact for a Gaussian mixture: mean_k[(m_k - mu)^4 + 6 (m_k - mu)^2 s_k^2 + 3 s_k^4]
    dm = mix.means - mean
    s2 = np.stack([mix.covs[:, 0, 0], mix.covs[:, 1, 1]], axis=1)
    mu4 = (dm**4 + 6 * dm**2 * s2 + 3 * s2**2).mean(0)
    var_se = np.sqrt((mu4 - np.diag(cov) ** 2) / n)
    assert np.all(np.abs(xy.var(0) - np.diag(cov)) < 6 * var_se)


def test_unknown_pattern_is_rejected():
    with pytest.raises(ValueError, match="allowed"):
        synthetic.generate("hexagon", 10, rng(0, "x"))
