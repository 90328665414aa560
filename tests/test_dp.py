"""The floating-point-safe DP primitives (locpriv.dp): exact samplers, grid releases, the guarantee record."""

import math

import numpy as np
import pytest
from scipy import stats

from conftest import CountingRng
from locpriv import laplace_ldp
from locpriv.dp import Guarantee, no_guarantee, sampling
from locpriv.dp.grid import grid_step, release_bounded, release_on_grid, rounded_sensitivity, snap
from locpriv.dp.sampling import bernoulli_exp_integer, discrete_laplace, exact_scale, timing_safe_delta, timing_safe_tv

ALPHA = 1e-6
N = 200_000


def _pmf(k, s):
    """Discrete Laplace pmf: (1 - p) / (1 + p) p^|k|, p = e^(-1/s)."""
    p = math.exp(-1 / s)
    return (1 - p) / (1 + p) * p ** np.abs(k)


def _cdf(k, s):
    """P(Z <= k) of the discrete Laplace law: p^-k / (1 + p) below 0, 1 - p^(k+1) / (1 + p) from 0."""
    p = math.exp(-1 / s)
    k = np.asarray(k, dtype=float)
    return np.where(k < 0, p ** -np.minimum(k, 0) / (1 + p), 1 - p ** (np.maximum(k, 0) + 1) / (1 + p))


def _pvalue(z, s):
    """Chi-square p-value of integer draws z against discrete Laplace(s): bins of width max(1, s/16)
    (single values at small scales), those with expected count >= 20, the tails pooled."""
    width = max(1, int(s // 16))
    edges = np.arange(z.min(), z.max() + width + 1, width)
    expected = np.diff(_cdf(edges - 1, s)) * z.size
    observed = np.bincount((z - z.min()) // width, minlength=expected.size)[: expected.size]
    keep = expected >= 20
    obs = np.append(observed[keep], z.size - observed[keep].sum())
    return stats.chisquare(obs, np.append(expected[keep], z.size - expected[keep].sum())).pvalue


@pytest.mark.parametrize("timing_safe", [False, True])
@pytest.mark.parametrize("scale", [0.3, 2.5, 40.0, 1e4])
def test_discrete_laplace_has_the_exact_law(scale, timing_safe):
    """Chi-square over values (bins at large scales) with expected count >= 20, tails pooled,
    alpha = 1e-6; the timing-safe law is within timing_safe_tv (< 1e-10 here) of it."""
    z = discrete_laplace(scale, np.random.default_rng(1), size=N, timing_safe=timing_safe)
    s = exact_scale(scale)
    assert scale < s <= scale + 2**-15
    assert _pvalue(z, s) > ALPHA


@pytest.mark.parametrize("scale", [2.5, 1e4])
def test_discrete_laplace_test_has_power(scale):
    """A 5 % wider scale is rejected by the same chi-square test at alpha = 1e-6."""
    assert _pvalue(discrete_laplace(scale * 1.05, np.random.default_rng(1), size=N), exact_scale(scale)) < ALPHA


def test_per_element_scales_and_reproducible_bytes():
    scales = np.array([0.5, 50.0] * 5000)
    a = discrete_laplace(scales, np.random.default_rng(9))
    np.testing.assert_array_equal(a, discrete_laplace(scales, np.random.default_rng(9)))
    # Var = 2p / (1 - p)^2: the small-scale half is far tighter than the large-scale half
    assert a[::2].std() < 1 < 50 < a[1::2].std()
    # per-element scales draw each element as a call with its scale alone would (same law):
    # the 50-scale half passes the exact-law test
    assert (
        _pvalue(discrete_laplace(np.tile([0.5, 50.0], N // 2), np.random.default_rng(2))[1::2], exact_scale(50.0))
        > ALPHA
    )


def _magnitudes_by_exact_inversion(scale, words, starts):
    """Sign and magnitude of each word by the slow path alone (exact comparisons only); the walk
    from ``starts`` ends at #{K >= 1 : U < tau_K} wherever it starts."""
    t = int(sampling._rational(scale))
    fresh = np.random.default_rng(0)  # later bits, should a comparison need them
    out = []
    for w, start in zip(words.tolist(), starts.tolist(), strict=True):
        magnitude = sampling._exact_magnitude(w & (2**63 - 1), start, t, fresh)
        out.append(-magnitude if w >> 63 else magnitude)
    return np.array(out)


@pytest.mark.parametrize("scale", [0.3, 2.5, 100.0, 1e4, 2.0**35])
def test_fast_path_equals_exact_inversion_draw_by_draw(scale):
    """The float fast path returns, for the same 64-bit words, what exact decimal comparisons
    of U with every tail probability give: floating point decides only the speed."""
    z = discrete_laplace(scale, np.random.default_rng(5), size=400)
    words = np.random.default_rng(5).integers(0, 2**64 - 1, size=400, endpoint=True, dtype=np.uint64)
    starts = np.maximum(np.abs(z) + np.tile([3, -3], 200), 0)  # walks down and walks up
    np.testing.assert_array_equal(z, _magnitudes_by_exact_inversion(scale, words, starts))


def _count_slow_calls(monkeypatch):
    calls = []
    exact = sampling._exact_magnitude

    def counted(*args):
        calls.append(args)
        return exact(*args)

    monkeypatch.setattr(sampling, "_exact_magnitude", counted)
    return calls


def test_slow_path_has_the_exact_law(monkeypatch):
    """With the certification margin widened to 2^-4, a large share of draws is finished by the
    exact slow path; the law is still exact (chi-square, alpha = 1e-6)."""
    monkeypatch.setattr(sampling, "_margin", lambda factors: 2.0**-4)
    calls = _count_slow_calls(monkeypatch)
    z = discrete_laplace(2.5, np.random.default_rng(3), size=40_000)
    assert len(calls) > 5_000
    assert _pvalue(z, exact_scale(2.5)) > ALPHA


def _work_per_call(monkeypatch, timing_safe, calls=10_000, scale=0.3):
    """(noise, work) of one-user-at-a-time draws; work = words drawn + draws left to the slow path."""
    slow = _count_slow_calls(monkeypatch)
    rng = CountingRng(11)
    noise, work = [], []
    for _ in range(calls):
        before_words, before_slow = rng.words, len(slow)
        noise.append(int(discrete_laplace(scale, rng, size=1, timing_safe=timing_safe)[0]))
        work.append((rng.words - before_words, len(slow) - before_slow))
    return np.array(noise), work


def test_timing_safe_work_does_not_depend_on_the_noise(monkeypatch):
    """One draw per call, as a device answering one user: in timing-safe mode every call does the
    same work (one word, no slow path; its vector steps are set by the scale alone), whatever the
    noise.  Power: in the default mode, with the slow path made frequent (margin 2^-4), the work
    depends on the noise: zero noise reaches the slow path far less often (one threshold near U
    instead of two), Fisher's exact test at alpha = 1e-6."""
    monkeypatch.setattr(sampling, "_margin", lambda factors: 2.0**-4)
    noise, work = _work_per_call(monkeypatch, timing_safe=True)
    assert set(work) == {(1, 0)} and len(set(noise.tolist())) > 3
    noise, work = _work_per_call(monkeypatch, timing_safe=False)
    slow = np.array([w[1] for w in work]) > 0
    zero = noise == 0
    table = [[(slow & zero).sum(), (~slow & zero).sum()], [(slow & ~zero).sum(), (~slow & ~zero).sum()]]
    assert stats.fisher_exact(table).pvalue < ALPHA


@pytest.mark.parametrize("scale, most", [(2.0, 1e-13), (100.0, 1e-11), (1e4, 1e-9)])
def test_timing_safe_tv_is_small_and_delta_composes(scale, most):
    tv = timing_safe_tv(scale)
    assert 0 < tv < most
    assert timing_safe_delta([scale, scale], 1.0) == pytest.approx(2 * tv * (1 + math.e))
    # the bound grows with the scale: thresholds get closer in relative terms
    assert timing_safe_tv(10 * scale) > tv


@pytest.mark.parametrize("m", [0, 1, 3, 40, 70])
def test_bernoulli_exp_integer_is_exact(m):
    """Frequency of Bernoulli(exp(-m)) within 5 binomial sd of its probability."""
    hits = bernoulli_exp_integer(np.full(N, m), np.random.default_rng(2)).mean()
    p = math.exp(-m)
    assert abs(hits - p) <= 5 * math.sqrt(p * (1 - p) / N) + 1e-12


def test_bernoulli_exp_integer_slow_path_is_exact(monkeypatch):
    """Margin widened to 2^-3: most draws near e^-1 go to the exact comparison; same frequency test."""
    monkeypatch.setattr(sampling, "_margin", lambda factors: 2.0**-3)
    hits = bernoulli_exp_integer(np.ones(N, dtype=np.int64), np.random.default_rng(4)).mean()
    p = math.exp(-1)
    assert abs(hits - p) <= 5 * math.sqrt(p * (1 - p) / N)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), 2.0**40])
def test_bad_scales_are_refused(bad):
    with pytest.raises(ValueError, match="scale"):
        discrete_laplace(bad, np.random.default_rng(0), size=3)


def test_non_finite_and_huge_inputs_are_refused():
    """NaN used to leave laplace_ldp as -2^63 grid steps (int64 wrap), ±3.6e16 on [0, 1]."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        laplace_ldp.randomize(np.array([[0.5, np.nan]]), np.array([[0.0, 1.0], [0.0, 1.0]]), 1.0, rng)
    with pytest.raises(ValueError, match="NaN or infinite"):
        release_bounded(np.array([0.2, np.inf]), 0.0, 1.0, 1.0, rng)
    with pytest.raises(ValueError, match="NaN or infinite"):
        release_on_grid(np.array([3.0, np.nan]), 0.0, 1.0, 2, 1.0, rng)
    with pytest.raises(ValueError, match="2\\^52 grid steps"):
        release_on_grid(np.array([2.0**60]), 0.0, 1.0, 2, 1.0, rng)
    with pytest.raises(ValueError, match="whole numbers"):
        release_on_grid(np.array([0.5]), 0.0, 1.0, 2, 1.0, rng)
    from locpriv.dp.gaussian import discrete_gaussian, release

    with pytest.raises(ValueError, match="NaN or infinite"):
        release(np.array([[np.nan, 1.0]]), 1.0, 2.0**-10, rng)
    with pytest.raises(ValueError, match="2\\^52 grid steps"):
        release(np.array([[1e300, 1.0]]), 1.0, 2.0**-10, rng)
    with pytest.raises(ValueError, match="sigma"):
        discrete_gaussian(np.array([2.0**40]), rng)


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
    z = top + 5  # grid index of a report beyond the far corner
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
    g = Guarantee(
        model="epsilon-LDP",
        epsilon=1.0,
        delta=0.0,
        relation="any two inputs (local)",
        covers="x",
        other_relations={"replace": 2.0},
    )
    void = g.leaked("a").leaked("b")
    assert void.epsilon is None and void.delta is None and void.other_relations == {}
    assert void.non_private_inputs == "a; b" and "VOID" in void.note
    assert set(g.as_dict()) == {
        "model",
        "epsilon",
        "delta",
        "relation",
        "covers",
        "discretisation",
        "note",
        "non_private_inputs",
        "other_relations",
    }
    assert no_guarantee("why").epsilon is None
    with pytest.raises(ValueError, match="epsilon"):
        Guarantee(model="m", epsilon=-1.0, delta=0.0, relation="r", covers="c")


def test_discrete_gaussian_follows_its_law_with_power():
    """Chi-square of N_Z(0, σ²) draws against the exact pmf (α = 1e-6); a 10 % wider law is rejected."""
    from locpriv.dp.gaussian import discrete_gaussian

    sigma, n, edge = 2.5, 200_000, 9
    k = np.arange(-edge, edge + 1)
    full = np.arange(-60, 61)
    pmf = np.exp(-(full**2) / (2 * sigma**2))
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


def test_a_guarantee_says_its_bound_under_every_relation_it_states():
    from locpriv.datasets.persons import person_guarantee_words
    from locpriv.mechanisms import get

    # PrivTree(epsilon=1): a replace-one 2 and an add/remove 1; its repr cannot be read as "epsilon 1" alone
    tree = get("privtree")(epsilon=1).guarantee()
    words = "ε = 2 (replace one user's location (n is public)); ε = 1 (add/remove one user)"
    assert tree.describe() == words and repr(tree).startswith(f"Guarantee<{words}>(model=")
    assert "epsilon=" not in repr(tree)  # the bare number is not repeated without its relation
    metric = Guarantee("geo-ind", 0.5, 0.0, "metric: Euclidean distance in km", "each location")
    assert metric.describe() == "ε = 0.5 per km (metric: Euclidean distance in km)"
    assert metric.describe("m").startswith("ε = 0.5 per m")
    unnamed = Guarantee("geo-ind", 5.0, 0.0, "metric: Euclidean distance in distance units of the dataset", "x")
    assert unnamed.describe().startswith("ε = 5 per distance unit (metric")
    approx = Guarantee("DP", 1.0, 1e-6, "add/remove one user", "all")
    assert approx.describe() == "ε = 1, δ = 1e-06 (add/remove one user)"
    assert get("sldp")(epsilon=2).guarantee().describe() == "no proof: none proven (per_child split rule)"
    assert no_guarantee("reveals the location").describe() == "no proof"
    assert tree.leaked("the true n").describe() == "no proof: voided by the true n"
    # a person: the cap times the row's epsilon, or unbounded without a cap
    row = Guarantee("LDP", 2.0, 0.0, "any two inputs (local)", "one location")
    eps, text = person_guarantee_words(row, 50)
    assert eps == 100 and text == "one person, up to 50 rows: ε = 100 (each row: ε = 2 (any two inputs (local)))"
    eps, text = person_guarantee_words(row, None)
    assert math.isinf(eps) and text.startswith("one person: unbounded (no cap on a person's rows")
    assert person_guarantee_words(approx, 5) == (None, "no proof: (ε, δ) per row, not scaled to persons")
