"""Federated RFF KDE ([RFF-KDE] Alg. 2/3): estimator, aggregation, and the user's query policy."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.ndimage import maximum_filter

from locpriv.rff import (
    Refusal,
    RFFPolicy,
    answer_query,
    draw_users,
    lemma3_max_bandwidth,
    lemma4_allowed,
    query_refusal,
    rff_sum,
    rff_surfaces,
)

ALPHA = 1e-6
OPEN = RFFPolicy(max_features=64, inscribed_side=1e6, risk=0.5)  # never binds on h below 1e5


def naive(omega, phase, gx, gy):
    """Direct eq. (7): cos(w^T g - phase) for every user, feature and cell, (N, P, Q)."""
    arg = omega[:, :, 0, None, None] * gx[:, None] + omega[:, :, 1, None, None] * gy[None, :] - phase[:, :, None, None]
    return np.cos(arg).sum(axis=1)


def report(n, B, h, rng, points=None, lo=-3, hi=3):
    users = draw_users(n, B, h, rng)
    points = rng.uniform(lo, hi, (n, 2)) if points is None else points
    return users, points, answer_query(users, points, h, B, OPEN)


# ---------------------------------------------------------------- estimator and aggregation


def test_estimate_is_unbiased_for_the_gaussian_kernel():
    # E cos(w^T D) = k(D) = exp(-|D|^2 / 2h^2) for w ~ N(0, h^-2 I) (eq. 2).  Since
    # cos^2 t = (1 + cos 2t) / 2 and E cos(w^T 2D) = k(2D), one feature has variance
    # (1 + k(2D)) / 2 - k(D)^2, and the server's mean over N B i.i.d. features deviates
    # from k(D) by at most z sqrt(var / NB), z the two-sided normal quantile at
    # alpha / m (Bonferroni over the m cells; the cells share the draws).
    rng = np.random.default_rng(10)
    n, B, h = 100_000, 2, 0.5
    d = np.array([0.3, -0.2])
    gx, gy = d[0] + np.arange(4) * 0.3, d[1] + np.arange(3) * 0.3
    _, _, (omega, phase) = report(n, B, h, rng, points=np.tile(d, (n, 1)))
    mean = rff_sum(omega, phase, gx, gy) / (n * B)
    delta2 = (gx[:, None] - d[0]) ** 2 + (gy[None, :] - d[1]) ** 2
    k = np.exp(-delta2 / (2 * h * h))
    var = (1 + k**4) / 2 - k**2  # k(2D) = k(D)^4
    z = stats.norm.isf(ALPHA / (2 * k.size))
    assert np.all(np.abs(mean - k) <= z * np.sqrt(var / (n * B)))


def test_gemm_aggregate_equals_naive_cosines():
    # Odd grid sizes exercise the partial last doubling step; chunk=5 a partial last chunk.
    rng = np.random.default_rng(11)
    _users, _points, (omega, phase) = report(37, 3, 0.4, rng)
    gx, gy = np.linspace(-3, 3, 11), np.linspace(-2, 4, 7)
    ref = naive(omega, phase, gx, gy)
    np.testing.assert_allclose(rff_sum(omega, phase, gx, gy, chunk=5), ref.sum(0), rtol=0, atol=1e-10)
    np.testing.assert_allclose(rff_surfaces(omega, phase, gx, gy), ref, rtol=0, atol=1e-10)


def test_recurrence_stays_accurate_for_high_frequencies():
    # h = 0.01 on a 200-cell grid: arguments up to ~1e3 rad, 8 doubling levels.
    rng = np.random.default_rng(12)
    _, _, (omega, phase) = report(20, 2, 0.01, rng)
    gx = gy = np.linspace(-3, 3, 200)
    ref = naive(omega, phase, gx, gy)
    np.testing.assert_allclose(rff_sum(omega, phase, gx, gy), ref.sum(0), rtol=0, atol=1e-10)


def test_surfaces_are_the_unreduced_projection():
    # The reported (w, phase mod 2 pi, sign canonicalised) gives the same surface as
    # cos(w^T (g - d)) with the raw rescaled frequencies.
    rng = np.random.default_rng(13)
    users, points, (omega, phase) = report(9, 2, 0.3, rng)
    assert np.all((phase >= 0) & (phase < 2 * np.pi)) and np.all(omega[..., 0] >= 0)
    gx, gy = np.linspace(-3, 3, 9), np.linspace(-3, 3, 8)
    raw = users.omega0
    ref = naive(raw, np.einsum("nbk,nk->nb", raw, points), gx, gy)
    np.testing.assert_allclose(rff_surfaces(omega, phase, gx, gy), ref, atol=1e-10)


def test_a_persons_summed_surfaces_are_their_reports_aggregate():
    # a person-level attack sums its reports' surfaces: the aggregate rff_sum of the
    # same reports, to rounding (many features: the products' inner dimension is 100)
    rng = np.random.default_rng(14)
    _, _, (omega, phase) = report(12, 50, 0.3, rng)
    gx, gy = np.linspace(-3, 3, 30), np.linspace(-3, 3, 25)
    person = rff_surfaces(omega, phase, gx, gy).sum(axis=0)
    total = rff_sum(omega, phase, gx, gy)
    np.testing.assert_allclose(person, total, rtol=0, atol=1e-12 * np.abs(total).max())
    np.testing.assert_allclose(person, naive(omega, phase, gx, gy).sum(0), rtol=0, atol=1e-10)


def test_irregular_grid_rejected():
    with pytest.raises(ValueError, match="evenly spaced"):
        rff_sum(np.ones((1, 1, 2)), np.zeros((1, 1)), np.array([0.0, 1.0, 3.0]), np.arange(3.0))


# ---------------------------------------------------------------- Lemma 3


def test_lemma3_bound_formula():
    # gamma = C^-1(risk) with C the chi^2(2) CDF.
    gamma = stats.chi2(2).ppf(0.05)
    assert lemma3_max_bandwidth(10.0, 0.05, 3) == pytest.approx(math.sqrt(gamma) * 10 / (6 * math.pi))


def test_lemma3_risk_is_the_probability_of_too_few_bands():
    # At h equal to the bound, P(j T >= side) with T = 2 pi / |w| is exactly the risk
    # (eqs. 19-21); the count over M draws is Binomial(M, risk).
    side, risk, j, M = 6.0, 0.1, 2, 200_000
    h = lemma3_max_bandwidth(side, risk, j)
    w = np.random.default_rng(20).standard_normal((M, 2)) / h
    few = int(np.sum(j * 2 * np.pi / np.hypot(*w.T) >= side))
    assert stats.binomtest(few, M, risk).pvalue > ALPHA


def test_user_refuses_just_above_lemma3_and_answers_just_below():
    policy = RFFPolicy(max_features=3, inscribed_side=6.0, risk=0.2, min_bands=2)
    bound = policy.max_bandwidth
    points = np.zeros((4, 2))
    for h, answered in [(bound * (1 - 1e-6), True), (bound * (1 + 1e-6), False)]:
        users = draw_users(4, 1, h, np.random.default_rng(21))  # h = h0: Lemma 4's n = 0
        out = answer_query(users, points, h, 1, policy, query_id=7)
        assert isinstance(out, Refusal) is not answered
        if not answered:
            assert "Lemma 3" in out.reason and out.query_id == 7


# ---------------------------------------------------------------- Lemma 4 and Alg. 3


@pytest.mark.parametrize(
    "k,ok",
    [(1, True), (5, True), (9, True), (13, True), (2, False), (2.5, False), (3, False), (4, False), (0.2, False)],
)
def test_lemma4_allowed(k, ok):
    assert lemma4_allowed(0.11 * k, 0.11) is ok  # 0.11 * 5 is not exactly 0.55 in floats


def test_rescaling_never_redraws():
    users = draw_users(50, 2, 0.1, np.random.default_rng(30))
    points = np.random.default_rng(31).uniform(-1, 1, (50, 2))
    w1, _p1 = answer_query(users, points, 0.1, 2, OPEN)
    w5, p5 = answer_query(users, points, 0.5, 2, OPEN)
    np.testing.assert_allclose(w5, w1 / 5, rtol=1e-15)
    again = answer_query(users, points, 0.5, 2, OPEN)
    np.testing.assert_array_equal(again[0], w5)
    np.testing.assert_array_equal(again[1], p5)


def _maxima_on_h0_bands(factor):
    """The factor*h0 surface's local maxima measured against the h0 surface's bands.

    Returns the largest distance, in radians of w0^T (g - d), from the h0 crest lattice
    2 pi Z over the grid-resolution slack, and the h0 band indices t (crest at 2 pi t)."""
    h0, d = 0.05, np.array([0.37, -0.21])
    users = draw_users(1, 1, h0, np.random.default_rng(40))
    w0 = users.omega0[0, 0]
    gx = gy = np.linspace(-3, 3, 301)
    omega = users.omega0 / factor  # Alg. 3 line 4 at h = factor h0
    surf = rff_surfaces(omega, (omega @ d)[:, :1], gx, gy)[0]
    is_max = surf >= maximum_filter(surf, size=3, mode="constant", cval=np.inf)
    px, py = np.nonzero(is_max)
    theta0 = w0[0] * (gx[px] - d[0]) + w0[1] * (gy[py] - d[1])
    t = np.round(theta0 / (2 * np.pi))
    # A cell >= its 8 neighbours is within half the largest one-step phase change,
    # (|w1| + |w2|) dx / 2, of its own crest; in h0 radians that is (|w0_1| + |w0_2|) dx / 2.
    slack = (abs(w0[0]) + abs(w0[1])) * (gx[1] - gx[0]) / 2
    return np.abs(theta0 - 2 * np.pi * t).max() / slack, np.unique(t)


def test_lemma4_bands_coincide_on_the_predicted_lattice():
    # Fig. 7: the 5 h0 surface's maxima lie on h0 crests, on every 5th band (t in 5Z).
    ratio, bands = _maxima_on_h0_bands(5)
    assert ratio <= 1 + 1e-9 and np.all(bands % 5 == 0) and bands.size >= 2


def test_non_lemma4_bandwidth_shifts_bands():
    # Negative control: at 2.5 h0 (refused by the policy) half the maxima fall on h0 minima.
    ratio, _ = _maxima_on_h0_bands(2.5)
    assert ratio > 1


# ---------------------------------------------------------------- refusals


def test_refusals_are_recorded_and_location_independent():
    policy = RFFPolicy(max_features=2, inscribed_side=10.0, risk=0.3)
    users = draw_users(5, 4, 0.1, np.random.default_rng(50))
    here, there = np.zeros((5, 2)), np.random.default_rng(51).uniform(-5, 5, (5, 2))
    for h, B, reason in [(0.1, 3, "policy maximum"), (0.2, 1, "Lemma 4"), (0.1, 5, "features drawn")]:
        out = answer_query(users, here, h, B, policy, query_id=3)
        assert isinstance(out, Refusal) and reason in out.reason
        assert out.record() == {"query_id": 3, "B": B, "h": h, "reason": out.reason}
        assert answer_query(users, there, h, B, policy, query_id=3) == out
        assert query_refusal(users, h, B, policy) == out.reason
    assert query_refusal(users, 0.5, 2, policy) is None  # 0.5 = 5 h0 < bound 0.68


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: draw_users(0, 1, 0.1, np.random.default_rng(0)), "number of users"),
        (lambda: draw_users(3, 1, -0.1, np.random.default_rng(0)), "h0"),
        (lambda: lemma3_max_bandwidth(1.0, 1.5), "risk"),
        (lambda: lemma3_max_bandwidth(1.0, 0.1, 1), "bands j"),
        (lambda: RFFPolicy(0, 1.0, 0.1), "max_features"),
        (lambda: query_refusal(draw_users(1, 1, 0.1, np.random.default_rng(0)), 0.0, 1, OPEN), "bandwidth h"),
    ],
)
def test_bad_parameters_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_illustration_plots_are_written(tmp_path):
    from locpriv.plots_rff import plot_fig3_convergence, plot_user_surfaces

    plot_fig3_convergence(path=str(tmp_path / "fig3.png"), rng=np.random.default_rng(60), dpi=30)
    plot_user_surfaces(path=str(tmp_path / "fig4.png"), rng=np.random.default_rng(61), dpi=30)
    from conftest import assert_figure

    assert_figure(tmp_path / "fig3.png", panels=(2, 2))
    assert_figure(tmp_path / "fig4.png", panels=(1, 3))
