"""The Bayes adversary (Shokri et al. 2011): per-mechanism likelihoods and the metrics."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import fft

from locpriv import mechanisms
from locpriv.adversary import bayes, likelihoods
from locpriv.adversary import local_maxima as attack_lm
from locpriv.domain import Domain, Grid

GRID = Grid.regular(Domain(-3, 3, -3, 3), 24, 20)


def test_planar_and_product_laplace_densities_integrate_to_one():
    # reports on a fine grid around one location; the tails beyond +-L carry < 1e-6
    eps, b = 4.0, (0.3, 0.5)
    t = np.linspace(-12, 12, 1201)
    step = t[1] - t[0]
    zx, zy = np.meshgrid(t, t, indexing="ij")
    reports = np.column_stack([zx.ravel(), zy.ravel()])
    one = Grid(np.array([0.0, 1.0]), np.array([0.0, 1.0]), Domain(-0.5, 1.5, -0.5, 1.5))
    planar = np.exp(likelihoods.planar_laplace_logpdf(reports, one, eps))[:, 0, 0].sum() * step**2
    product = np.exp(likelihoods.product_laplace_logpdf(reports, one, b))[:, 0, 0].sum() * step**2
    assert planar == pytest.approx(1.0, abs=2e-3)
    assert product == pytest.approx(1.0, abs=2e-3)


def test_oue_probabilities_sum_to_one_over_bit_vectors():
    p, q = 0.5, 1 / (math.exp(2.0) + 1)
    for own in range(4):
        total = sum(
            math.exp(likelihoods.oue_log_probability(np.array(bits), own, p, q))
            for bits in itertools.product([0, 1], repeat=4)
        )
        assert total == pytest.approx(1.0, abs=1e-12)


def test_rff_phase_density_integrates_to_one_per_cell():
    # line length / (|omega| cell area) is the density of the phase given x uniform in the cell
    omega = np.array([[1.7, -0.6]])
    phases = np.linspace(0, 2 * np.pi, 4001)[:-1]
    lengths = np.stack([likelihoods.rff_line_lengths(omega, np.array([ph]), GRID)[0] for ph in phases])
    density = lengths / (np.hypot(*omega[0]) * GRID.cell_area)
    np.testing.assert_allclose(density.mean(axis=0) * 2 * np.pi, 1.0, atol=1e-3)


def test_rff_axis_parallel_lines_have_the_cell_side_as_length():
    # omega = (1, 0): the vertical lines x = phase + 2 pi k; each crossed cell holds a segment of its height
    lengths = likelihoods.rff_line_lengths(np.array([[1.0, 0.0]]), np.array([0.1]), GRID)[0]
    dy = GRID.y[1] - GRID.y[0]
    crossed = np.abs(np.mod(GRID.x - 0.1 + np.pi, 2 * np.pi) - np.pi) < (GRID.x[1] - GRID.x[0]) / 2
    np.testing.assert_allclose(lengths[crossed], dy, rtol=1e-6)
    assert np.all(lengths[~crossed] == 0)


def _wide_line_lengths(omega, phase, grid, reach=40):
    """Reference: the line lengths summed over a fixed wide range of lines k, zeros included."""
    a, b = (grid.x[1] - grid.x[0]) / 2, (grid.y[1] - grid.y[0]) / 2
    wx, wy, ph = omega[:, 0, None, None], omega[:, 1, None, None], phase[:, None, None]
    norm = np.hypot(wx, wy)
    A, B = np.maximum(np.abs(wx) * a, 1e-9 * norm), np.maximum(np.abs(wy) * b, 1e-9 * norm)
    t0 = np.mod(ph - wx * grid.x[None, :, None] - wy * grid.y[None, None, :] + np.pi, 2 * np.pi) - np.pi
    overlap = np.zeros(t0.shape)
    for k in range(-reach, reach + 1):
        t = t0 + 2 * np.pi * k
        overlap += np.clip(np.minimum(t + A, B) - np.maximum(t - A, -B), 0.0, None)
    return norm * (a * b) * overlap / (A * B)


@pytest.mark.parametrize("h", [0.3, 0.015])
def test_rff_log_lengths_are_the_dense_sum_over_features_bit_for_bit(h):
    """Only the lines that can reach a cell, only at the cells still possible: the same bits as the
    dense sum over features of the lengths over a wide range of lines."""
    rng = np.random.default_rng(21)
    omega = rng.standard_normal((30, 6, 2)) / h
    phase = np.mod(np.einsum("nbk,nk->nb", omega, rng.uniform(-3, 3, (30, 2))), 2 * np.pi)  # users' true phases
    dense = np.zeros((30, *GRID.shape))
    with np.errstate(divide="ignore"):
        for b in range(6):
            wide = _wide_line_lengths(omega[:, b], phase[:, b], GRID)
            assert np.array_equal(likelihoods.rff_line_lengths(omega[:, b], phase[:, b], GRID), wide)
            dense += np.log(wide)
    assert np.array_equal(likelihoods.rff_log_lengths(omega, phase, GRID), dense)
    finite = np.isfinite(dense)
    assert finite.any() and not finite.all()  # power: cells both kept and ruled out
    if h < 0.1:  # power: lines closer than a cell, so lines k != 0 reach cells
        half = np.array([GRID.x[1] - GRID.x[0], GRID.y[1] - GRID.y[0]]) / 2
        assert (np.abs(omega) @ half).max() > np.pi


def test_add_rows_is_np_add_at_bit_for_bit():
    rng = np.random.default_rng(22)
    rows = rng.standard_normal((40, 5, 4)) * 10.0 ** rng.integers(-8, 8, (40, 1, 1))
    rows[3, 0, 0] = -np.inf
    owner = rng.integers(0, 6, 40)
    expect, got = np.zeros((6, 5, 4)), np.zeros((6, 5, 4))
    np.add.at(expect, owner, rows)
    attack_lm.add_rows(got, owner, rows)
    assert np.array_equal(got, expect)


def test_median_guess_is_the_full_fft_convolution():
    """The axis-by-axis transforms equal rfft2/irfft2 (bit for bit with today's scipy, whose
    pocketfft does the same 1-D transforms; to rounding whatever the FFT library's internals)."""
    grid = Grid.regular(Domain(0, 3, 0, 2), 13, 9)
    post = np.random.default_rng(23).dirichlet(np.ones(13 * 9) * 0.3, size=4).reshape(4, 13, 9)
    median = bayes.MedianGuess(grid)
    full = fft.irfft2(fft.rfft2(post, median.shape, axes=(1, 2)) * median.kernel, median.shape, axes=(1, 2))
    np.testing.assert_allclose(median.expected_distance(post), full[:, 12:25, 8:17], rtol=1e-12, atol=0)


def test_median_guess_matches_brute_force():
    grid = Grid.regular(Domain(0, 3, 0, 2), 9, 7)
    post = np.random.default_rng(0).dirichlet(np.ones(63) * 0.3, size=5).reshape(5, 9, 7)
    gx, gy = np.meshgrid(grid.x, grid.y, indexing="ij")
    cells = np.column_stack([gx.ravel(), gy.ravel()])
    dist = np.hypot(*(cells[:, None, :] - cells[None, :, :]).transpose(2, 0, 1))
    brute = post.reshape(5, -1) @ dist
    median = bayes.MedianGuess(grid)
    np.testing.assert_allclose(median.expected_distance(post).reshape(5, -1), brute, atol=1e-12)
    i, j = median(post)
    np.testing.assert_array_equal(np.ravel_multi_index((i, j), (9, 7)), brute.argmin(axis=1))


def _truth_prior(grid):
    gx, gy = np.meshgrid(grid.x, grid.y, indexing="ij")
    return bayes.prior("population", np.exp(-(gx**2 + gy**2) / 2))


def _attack(name, given, n=200, seed=3):
    """Users at random cell centres; the Bayes attack on what the mechanism released of them."""
    mech = mechanisms.get(name)(**given)
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, GRID.shape[0], n), rng.integers(0, GRID.shape[1], n)
    pts = pd.DataFrame({"user": np.arange(n), "x": GRID.x[i], "y": GRID.y[j]})
    view = mech.randomize(pts, rng=seed + 1, domain=GRID)
    lik = mech.likelihood(view, GRID)
    assert lik.shape == (n, *GRID.shape) and (lik >= 0).all() and (lik.reshape(n, -1).max(axis=1) > 0).all()
    return mech, mech.settings, pts, lik, (i, j)


@pytest.mark.parametrize(
    "name, given, n",
    [
        ("geoind", {"h": 0.5, "epsilon": 2.0}, 200),
        ("laplace_ldp", {"h": 0.5, "epsilon": 4.0}, 200),
        ("rff", {"h": 0.5, "B": 2, "risk": 0.999}, 200),
        ("ldp_oue_grid", {"epsilon": 2.0, "level": 3}, 200),
        ("fedkde", {"h": 0.5}, 200),
        ("hdg", {"epsilon": 2.0}, 200),
        ("hdg", {"epsilon": 2.0, "variant": "tdg"}, 200),
        # the protocol splits the root only with enough users: 200 stop at the whole domain
        ("sldp", {"epsilon": 2.0, "max_depth": 4}, 2000),
    ],
)
def test_posterior_at_the_true_cell_beats_the_uniform_prior(name, given, n):
    """Monte Carlo: E[posterior mass at the true cell] > prior mass (1 / PQ) for an informative report.

    Under H0 (the report carries no information) the mean posterior mass equals the prior;
    we reject H0 at 5 standard errors (one-sided alpha ~ 3e-7).
    """
    _, _, _, lik, (i, j) = _attack(name, given, n=n)
    uniform = np.full(GRID.shape, 1 / np.prod(GRID.shape))
    with np.errstate(divide="ignore"):
        post = bayes.posterior(uniform, np.log(lik))
    at_true = post[np.arange(len(i)), i, j]
    se = at_true.std(ddof=1) / math.sqrt(len(at_true))
    assert at_true.mean() - uniform[0, 0] > 5 * se


def test_zero_mechanism_bayes_error_is_the_priors():
    prior = _truth_prior(GRID)
    _mech, _params, pts, lik, _ = _attack("zero", {})
    xy = pts[["x", "y"]].to_numpy()
    res = bayes.bayes_attack([(slice(0, len(pts)), np.log(lik))], prior, GRID, pts["user"].to_numpy(), xy, r=0.9)
    dist = np.hypot(GRID.x[None, :, None] - xy[:, 0, None, None], GRID.y[None, None, :] - xy[:, 1, None, None])
    np.testing.assert_allclose(res["expected_error"], (prior * dist).sum(axis=(1, 2)), rtol=1e-13)
    np.testing.assert_allclose(res["hit_r"], (prior * (dist <= 0.9)).sum(axis=(1, 2)), rtol=1e-13)


def test_fedkde_is_located_to_grid_resolution():
    prior = _truth_prior(GRID)
    users = 50
    xy = np.random.default_rng(5).uniform(-3, 3, (users, 2))
    pts = pd.DataFrame({"user": np.arange(users), "x": xy[:, 0], "y": xy[:, 1]})
    mech = mechanisms.get("fedkde")(h=0.5)
    lik = mech.likelihood(mech.randomize(pts, domain=GRID), GRID)
    with np.errstate(divide="ignore"):
        res = bayes.bayes_attack([(slice(0, users), np.log(lik))], prior, GRID, pts["user"].to_numpy(), xy, r=0.0)
    half_diag = np.hypot(GRID.x[1] - GRID.x[0], GRID.y[1] - GRID.y[0]) / 2
    assert (res["expected_error"] <= half_diag + 1e-12).all()
    np.testing.assert_allclose(res["expected_error"], res["guess_error"])


@pytest.mark.parametrize("name", ["privtree"])
def test_aggregate_only_mechanisms_leave_the_prior(name):
    mech = mechanisms.get(name)(epsilon=1.0)
    assert mech.aggregate_only
    lik = mech.likelihood(pd.DataFrame({"user": [0, 1]}), GRID)
    assert lik.shape == (2, *GRID.shape) and np.all(lik == 1.0)


def test_the_prior_attack_is_the_bayes_attack_of_a_constant_likelihood_byte_for_byte():
    """The shortcut for releases that tell the population adversary nothing: one posterior and one guess for
    everyone, the same numbers as the full pass on all-zero log-likelihoods (users and persons)."""
    rng = np.random.default_rng(4)
    prior = rng.gamma(0.3, size=GRID.shape)
    prior[rng.random(GRID.shape) < 0.2] = 0
    prior /= prior.sum()
    users = np.arange(70)
    for truth in (
        rng.uniform(0, 1, (70, 2)),
        attack_lm.PersonTargets([rng.uniform(0, 1, (k, 2)) for k in rng.integers(1, 5, 70)]),
    ):
        zeros = ((sl, np.zeros((sl.stop - sl.start, *GRID.shape))) for sl in attack_lm.batches(70, 32))
        full = bayes.bayes_attack(zeros, prior, GRID, users, truth, 0.1)
        pd.testing.assert_frame_equal(bayes.prior_attack(prior, GRID, users, truth, 0.1, 32), full, check_exact=True)


def test_the_population_adversary_learns_nothing_exactly_from_the_aggregate_releases():
    for name in mechanisms.names():
        cls = mechanisms.get(name)
        inherited = cls.log_likelihood is mechanisms.Mechanism.log_likelihood
        assert cls.population_learns_nothing.fget(cls.__new__(cls)) == (cls.aggregate_only and inherited), name
    assert mechanisms.get("privtree").aggregate_only and not mechanisms.get("geoind").aggregate_only


def test_every_mechanism_declares_a_likelihood():
    base = mechanisms.Mechanism
    for name in mechanisms.names():
        cls = mechanisms.get(name)
        assert (
            cls.aggregate_only or cls.log_likelihood is not base.log_likelihood or cls.likelihood is not base.likelihood
        ), name


def test_population_prior_needs_mass():
    with pytest.raises(ValueError, match="no mass"):
        bayes.prior("population", np.zeros((3, 3)))


def test_a_person_no_single_cell_explains_falls_back_to_the_mixture_of_their_reports():
    """Exact reports in two cells rule out every cell together: the mixture, counted; else the product."""
    from locpriv.adversary.bayes import person_log_likelihoods

    lik = np.zeros((4, 3, 3))
    lik[0, 0, 0] = lik[1, 2, 2] = 1.0  # person 0: exact reports in two different cells
    lik[2] = lik[3] = np.full((3, 3), 0.5)  # person 1: two flat reports ...
    lik[3, 1, 1] = 2.0  # ... the second favouring the centre
    with np.errstate(divide="ignore"):
        log_lik = np.log(lik)
        joint, moved = person_log_likelihoods(
            lambda rows: log_lik[rows], np.array([0, 0, 1, 1]), 2, np.ones((3, 3), dtype=bool), 4
        )
    assert moved == 1
    expected_mixture = np.zeros((3, 3))
    expected_mixture[0, 0] = expected_mixture[2, 2] = 1.0  # the sum of normalised likelihoods: a constant apart
    np.testing.assert_allclose(np.exp(joint[0]), expected_mixture)
    np.testing.assert_allclose(joint[1], np.log(lik[2] * lik[3]))


def test_a_person_explained_only_where_the_prior_is_zero_falls_back_to_the_mixture():
    """The product is finite at one cell the prior rules out: over the allowed cells it is 0, so the mixture."""
    from locpriv.adversary.bayes import person_log_likelihoods

    log_lik = np.full((2, 2, 2), -np.inf)
    log_lik[:, 0, 0] = 0.0  # both reports allow only cell (0, 0) together ...
    log_lik[0, 1, 1] = log_lik[1, 0, 1] = 0.0  # ... and one other cell each
    allowed = np.ones((2, 2), dtype=bool)
    allowed[0, 0] = False
    with np.errstate(divide="ignore"):
        joint, moved = person_log_likelihoods(lambda rows: log_lik[rows], np.array([0, 0]), 1, allowed, 2)
    assert moved == 1
    np.testing.assert_allclose(np.exp(joint[0]), [[1.0, 0.5], [0.0, 0.5]])


def _person_log_likelihoods_reference(log_lik, owner, n_persons, allowed):
    """The person attack as it was before the by-person pass: every report's log-likelihood added in
    report order (np.add.at), the mixture formed for every person, used where no allowed cell is finite."""
    joint, mixture = np.zeros((n_persons, *log_lik.shape[1:])), np.zeros((n_persons, *log_lik.shape[1:]))
    np.add.at(joint, owner, log_lik)
    share = np.exp(log_lik - log_lik.reshape(len(log_lik), -1).max(axis=1)[:, None, None])
    np.add.at(mixture, owner, share / share.reshape(len(share), -1).sum(axis=1)[:, None, None])
    moved = ~np.where(allowed[None], np.isfinite(joint), False).reshape(n_persons, -1).any(axis=1)
    with np.errstate(divide="ignore"):
        joint[moved] = np.log(mixture[moved])
    return joint, int(moved.sum())


def test_person_log_likelihoods_equal_the_report_order_reference_bit_for_bit():
    """Persons summed one by one, the mixture only for those who need it: the same bits as summing the
    reports in order (each person's additions keep their order), on reports spanning several batches,
    persons interleaved, some ruling cells out; the mixture pass asks only for the moved persons' rows."""
    rng = np.random.default_rng(26)
    n_rows, n_persons = 300, 9
    owner = rng.integers(0, n_persons, n_rows)
    log_lik = rng.standard_normal((n_rows, *GRID.shape)) * 10.0 ** rng.integers(-3, 4, (n_rows, 1, 1))
    exact = np.isin(owner, [2, 5]) & (rng.random(n_rows) < 0.5)  # exact reports in random cells: moved
    log_lik[exact] = -np.inf
    log_lik[exact, rng.integers(0, GRID.shape[0], exact.sum()), rng.integers(0, GRID.shape[1], exact.sum())] = 0.0
    allowed = rng.random(GRID.shape) < 0.9
    asked = []

    def log_lik_of(rows):
        asked.append(np.asarray(rows))
        return log_lik[rows]

    with np.errstate(divide="ignore", invalid="ignore"):
        expect, expect_moved = _person_log_likelihoods_reference(log_lik, owner, n_persons, allowed)
        got, moved = bayes.person_log_likelihoods(log_lik_of, owner, n_persons, allowed, 32)
    assert moved == expect_moved == 2  # power: both fallbacks taken, the others summed
    assert np.array_equal(got, expect)
    second = np.concatenate(asked)[n_rows:]
    assert np.array_equal(np.sort(second), np.flatnonzero(np.isin(owner, [2, 5])))


def test_person_sums_equal_np_add_at_in_row_order_bit_for_bit():
    rng = np.random.default_rng(27)
    rows = rng.standard_normal((200, 5, 4)) * 10.0 ** rng.integers(-8, 8, (200, 1, 1))
    owner = rng.integers(0, 7, 200)
    expect = np.zeros((7, 5, 4))
    np.add.at(expect, owner, rows)
    assert np.array_equal(attack_lm.person_sums(lambda r: rows[r], owner, 7, 16), expect)
    some = np.array([1, 4, 6])
    assert np.array_equal(attack_lm.person_sums(lambda r: rows[r], owner, 7, 16, persons=some), expect[some])
    assert attack_lm.person_sums(lambda r: rows[r], owner, 7, 16, persons=np.array([7])) is None


def test_the_posterior_is_formed_in_log_space_over_the_cells_the_prior_allows():
    """A likelihood peaked where the prior is 0 and 2000 nats lower elsewhere: the linear form underflows
    to 0 on every allowed cell; the log form keeps the exact ratio between the allowed cells."""
    prior = np.array([[0.0, 0.5], [0.25, 0.25]])
    log_lik = np.array([[[0.0, -2000.0], [-2001.0, -np.inf]]])
    post = bayes.posterior(prior, log_lik)
    e = math.exp(-1.0) * 0.25
    # offsets of ~2000 nats: ~1e-13 relative rounding
    np.testing.assert_allclose(post[0], [[0.0, 0.5 / (0.5 + e)], [e / (0.5 + e), 0.0]], rtol=1e-11)
    with pytest.raises(ValueError, match="likelihood is 0 wherever the prior is positive"):
        bayes.posterior(prior, np.array([[[0.0, -np.inf], [-np.inf, -np.inf]]]))


def test_posterior_of_a_far_report_is_formed_over_the_cells_the_prior_allows():
    """A geoind report of high epsilon far from every cell the prior allows: each likelihood there is
    below the smallest double (exp(-eps d), eps d > 745), so the linear product was 0 everywhere
    and the attack stopped. In logs the posterior is the likelihood ratio over the allowed cells:
    here all its mass on the allowed cell nearest the report."""
    prior = np.zeros(GRID.shape)
    prior[:2, :2] = 0.25  # the population lives in one corner
    mech = mechanisms.get("geoind")(h=0.5, epsilon=400.0)
    view = pd.DataFrame({"user": [0], "x": [GRID.x[-1]], "y": [GRID.y[-1]]})  # reported at the far corner
    view.attrs["noise"] = {"epsilon": 400.0}  # as randomize records it
    assert (mech.likelihood(view, GRID)[0][prior > 0] == 0).all()  # the linear values underflow
    post = bayes.posterior(prior, mech.log_likelihood(view, GRID))
    assert post[0, 1, 1] == pytest.approx(1.0) and post[0][prior == 0].sum() == 0
    with pytest.raises(ValueError, match="0 wherever the prior is positive"):  # a truly impossible report
        bayes.posterior(prior, np.where(prior > 0, -np.inf, 0.0)[None])
