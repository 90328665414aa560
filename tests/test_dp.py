"""The floating-point-safe DP primitives (locpriv.dp): exact samplers, grid releases, the guarantee record."""

import math

import numpy as np
import pytest
from scipy import stats

from locpriv import laplace_ldp
from locpriv.dp import Guarantee, no_guarantee
from locpriv.dp.grid import grid_step, release_bounded, release_on_grid, rounded_sensitivity, snap
from locpriv.dp.sampling import bernoulli_exp, discrete_laplace, exact_scale

ALPHA = 1e-6
N = 200_000


def _pmf(k, s):
    """Discrete Laplace pmf: (1 - p) / (1 + p) p^|k|, p = e^(-1/s)."""
    p = math.exp(-1 / s)
    return (1 - p) / (1 + p) * p ** np.abs(k)


def _pvalue(z, s):
    """Chi-square p-value of integer draws z against discrete Laplace(s): values with expected
    count >= 20, the tail pooled."""
    values = np.arange(z.min(), z.max() + 1)
    expected = _pmf(values, s) * z.size
    observed = np.bincount(z - z.min(), minlength=values.size)
    keep = expected >= 20
    obs = np.append(observed[keep], z.size - observed[keep].sum())
    return stats.chisquare(obs, np.append(expected[keep], z.size - expected[keep].sum())).pvalue


@pytest.mark.parametrize("scale", [0.3, 2.5, 40.0])
def test_discrete_laplace_has_the_exact_law(scale):
    """Chi-square over the values with expected count >= 20 (tail pooled), alpha = 1e-6."""
    z = discrete_laplace(scale, np.random.default_rng(1), size=N)
    s = exact_scale(scale)
    assert scale < s <= scale + 2 ** -15
    assert _pvalue(z, s) > ALPHA


def test_discrete_laplace_test_has_power():
    """A 5 % wider scale is rejected by the same chi-square test at alpha = 1e-6."""
    assert _pvalue(discrete_laplace(2.5 * 1.05, np.random.default_rng(1), size=N), exact_scale(2.5)) < ALPHA


def test_per_element_scales_and_reproducible_bytes():
    scales = np.array([0.5, 50.0] * 5000)
    a = discrete_laplace(scales, np.random.default_rng(9))
    np.testing.assert_array_equal(a, discrete_laplace(scales, np.random.default_rng(9)))
    # Var = 2p / (1 - p)^2: the small-scale half is far tighter than the large-scale half
    assert a[::2].std() < 1 < 50 < a[1::2].std()


@pytest.mark.parametrize("num, den", [(0, 7), (3, 7), (7, 7)])
def test_bernoulli_exp_is_exact(num, den):
    """Frequency of Bernoulli(exp(-num/den)) within 5 binomial sd of its probability."""
    hits = bernoulli_exp(np.full(N, num), np.full(N, den), np.random.default_rng(2)).mean()
    p = math.exp(-num / den)
    assert abs(hits - p) <= 5 * math.sqrt(p * (1 - p) / N) + 1e-12


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), 2.0 ** 40])
def test_bad_scales_are_refused(bad):
    with pytest.raises(ValueError, match="scale"):
        discrete_laplace(bad, np.random.default_rng(0), size=3)


def test_grid_step_is_the_largest_power_of_two_below_width_over_cells():
    for width in (1.0, 3.0, 1024.0, 0.007, 20.0):
        step = grid_step(width)
        assert math.log2(step) == int(math.log2(step)) and step <= width / 1024 < 2 * step


def test_no_output_reachable_from_one_input_but_not_from_another():
    """Mironov regression on the smallest case: the two extreme inputs of [0, 3] (the box
    corners).  Every report from either input lies on the public lattice lo + Λ Z, where both
    inputs' exact pmfs are positive, so no output set separates them with probability 1.
    Power: Farokhi's continuous sampler x + Laplace on doubles fails the same lattice check."""
    lo, hi, eps = 0.0, 3.0, 1.0
    step = grid_step(hi - lo)
    top = round((hi - lo) / step)
    s = exact_scale(top / eps)
    for x in (lo, hi, 1.2345678):
        z = release_bounded(np.full(50_000, x), lo, hi, eps, np.random.default_rng(3))
        j = (z - lo) / step
        assert (j == np.rint(j)).all()
        k, k_other = snap(x, lo, step, top), snap(lo if x != lo else hi, lo, step, top)
        assert (_pmf(j - k_other, s) > 0).all() and (_pmf(j - k, s) > 0).all()
    continuous = lo + np.random.default_rng(3).laplace(0, (hi - lo) / eps, 50_000)
    j = (continuous - lo) / step
    assert not (j == np.rint(j)).all()


def test_extreme_inputs_have_the_stated_epsilon_exactly():
    """laplace_ldp on a 2-D box: for a report beyond the far corner the exact log-likelihood ratio
    of the two opposite corners is Σ_j top_j / s_j = epsilon_spent, just below epsilon."""
    bounds = np.array([[0.0, 10.0], [-2.0, 2.0]])
    eps = 1.3
    spent = laplace_ldp.epsilon_spent(bounds, eps)
    assert eps * (1 - 1e-5) < spent < eps
    step = laplace_ldp.grid_steps(bounds)
    top = np.rint((bounds[:, 1] - bounds[:, 0]) / step)
    s = laplace_ldp.scales(bounds, eps) / step
    z = top + 5                                     # grid index of a report beyond the far corner
    log_ratio = sum(math.log(_pmf(z[j] - top[j], s[j]) / _pmf(z[j], s[j])) for j in range(2))
    assert log_ratio == pytest.approx(spent, rel=1e-9)
    np.testing.assert_allclose(laplace_ldp.scales(bounds, eps), 2 * np.array([10.0, 4.0]) / eps, rtol=1e-6)


def test_central_release_sensitivity_covers_rounding():
    """Two values a sensitivity apart never snap more than rounded_sensitivity grid steps apart."""
    rng = np.random.default_rng(4)
    sens = 0.37
    step = grid_step(sens)
    a = rng.uniform(0, 100, 100_000)
    b = a + rng.uniform(-sens, sens, a.size)
    assert (np.abs(np.rint(a / step) - np.rint(b / step)) <= rounded_sensitivity(sens, step)).all()
    out = release_on_grid(np.array([3, 4]), 1.0, 0.5, 2, 1.0, rng)
    assert ((out - 1.0) / 0.5 == np.rint((out - 1.0) / 0.5)).all()


def test_leaked_guarantee_has_no_epsilon_and_names_every_leak():
    g = Guarantee(model="epsilon-LDP", epsilon=1.0, delta=0.0, relation="any two inputs (local)", covers="x",
                  other_relations={"replace": 2.0})
    void = g.leaked("a").leaked("b")
    assert void.epsilon is None and void.delta is None and void.other_relations == {}
    assert void.non_private_inputs == "a; b" and "VOID" in void.note
    assert set(g.as_dict()) == {"model", "epsilon", "delta", "relation", "covers", "discretisation", "note",
                                "non_private_inputs", "other_relations"}
    assert no_guarantee("why").epsilon is None
    with pytest.raises(ValueError, match="epsilon"):
        Guarantee(model="m", epsilon=-1.0, delta=0.0, relation="r", covers="c")


def test_discrete_gaussian_follows_its_law_with_power():
    """Chi-square of N_Z(0, σ²) draws against the exact pmf (α = 1e-6); a 10 % wider law is rejected."""
    from locpriv.dp.gaussian import discrete_gaussian
    sigma, n, edge = 2.5, 200_000, 9
    k = np.arange(-edge, edge + 1)
    full = np.arange(-60, 61)
    pmf = np.exp(-full ** 2 / (2 * sigma ** 2))
    pmf /= pmf.sum()
    expected = np.r_[pmf[full < -edge].sum(), pmf[np.abs(full) <= edge], pmf[full > edge].sum()] * n

    def counts(z):
        return np.r_[(z < -edge).sum(), [(z == v).sum() for v in k], (z > edge).sum()]

    crit = stats.chi2.ppf(1 - 1e-6, df=len(expected) - 1)
    r = np.random.default_rng(3)
    good = counts(discrete_gaussian(np.full(n, sigma), r))
    assert ((good - expected) ** 2 / expected).sum() < crit
    wide = counts(discrete_gaussian(np.full(n, 1.1 * sigma), r))
    assert ((wide - expected) ** 2 / expected).sum() > crit
    # sigma = 0 releases the value itself; the support is all integers for any sigma > 0
    assert not discrete_gaussian(np.zeros(5), r).any()
