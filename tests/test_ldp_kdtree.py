"""LDP-KDTree (Alptekin, Balioglu & Gürsoy 2025; ``locpriv.sldp.ldp_kdtree``): private medians within
their stated bound, ε-LDP of every user report, and the mechanism in the registry and the API."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import locpriv
from locpriv import mechanisms
from locpriv.domain import Domain, Grid
from locpriv.sldp import ldp_kdtree as kd
from locpriv.sldp.ldp_grid import oue_bits, oue_probabilities

ALPHA = 1e-6
BOX = (0.0, 1.0, 0.0, 1.0)


def _median_checks(pts, res, epsilon, buckets, counts_of=kd.debiased):
    """For every node at every depth: (S_{j*}, S_{j*-1}, n, E) of the group that reported there,
    with j* the crossing bucket CALC_MED picks from ``counts_of`` the group's bit sums."""
    out = []
    for level, bits in enumerate(res.reports):
        members = np.flatnonzero(res.group == level)
        true = np.bincount(kd.values(pts[members], res.splits[:level], BOX, buckets), minlength=bits.shape[1]).reshape(
            2**level, buckets
        )
        noisy = counts_of(bits.sum(axis=0), len(members), epsilon).reshape(2**level, buckets)
        axis = level % 2
        extent = kd.node_boxes(res.splits[:level], BOX)[:, [2 * axis, 2 * axis + 1]]
        _split, _, _, crossing = kd.calc_median(noisy, extent[:, 0], extent[:, 1])
        cum = np.concatenate([np.zeros((len(true), 1)), np.cumsum(true, axis=1)], axis=1)
        for node in range(2**level):
            n = int(true[node].sum())
            bound = kd.cumulative_error_bound(len(members), n, buckets, epsilon, ALPHA)
            out.append((cum[node, crossing[node] + 1], cum[node, crossing[node]], n, bound))
    return out


def _skewed(n, seed):
    # Beta(2, 6) marginals: medians far from the nodes' middles, so a midpoint split would fail
    return np.random.default_rng(seed).beta(2, 6, size=(n, 2))


def test_private_medians_lie_within_their_error_bound():
    """Each node's split satisfies S_{j*} >= n/2 - 1.5 E and S_{j*-1} <= n/2 + 1.5 E, E the
    Bernstein bound at alpha = 1e-6 per node (``kd.calc_median``); 8 trees x 15 nodes = 120
    checks, so the test fails by chance w.p. <= 1.2e-4.  The released split is CALC_MED's on the
    scaled counts (scaling does not move the crossing)."""
    eps, buckets, height = 2.0, 20, 4
    checks = []
    for seed in range(8):
        pts = _skewed(40_000, seed)
        res = kd.ldp_kdtree(pts, BOX, eps, height, np.random.default_rng(100 + seed), buckets, keep_reports=True)
        checks += _median_checks(pts, res, eps, buckets)
        assert [len(s) for s in res.splits] == [1, 2, 4, 8]
    for upper, lower, n, bound in checks:
        assert upper >= n / 2 - 1.5 * bound and lower <= n / 2 + 1.5 * bound
    # not vacuous: at the root (10,000 users) 1.5 E ~ 3,500 < n/2, so a split at either end of
    # the node's range would violate it (the power test below shows a biased one does)
    root = checks[0]
    assert 1.5 * root[3] < 0.4 * root[2]


def test_median_bound_has_power_against_undebiased_counts():
    """Power: CALC_MED on the raw bit sums (OUE's q-bias not removed) puts the root's split near
    the middle of the box, violating the bound on the skewed data."""
    eps, buckets = 2.0, 20
    pts = _skewed(40_000, 0)
    res = kd.ldp_kdtree(pts, BOX, eps, 1, np.random.default_rng(1), buckets, keep_reports=True)
    upper, lower, n, bound = _median_checks(pts, res, eps, buckets, counts_of=lambda s, n, e: s)[0]
    assert not (upper >= n / 2 - 1.5 * bound and lower <= n / 2 + 1.5 * bound)


def test_every_report_is_epsilon_ldp_over_the_whole_report_space():
    """Exact likelihood ratio over all 2^6 reports of a depth-1 user (2 nodes x 3 buckets), for
    every pair of its 6 possible values: the largest log-ratio is epsilon (attained), never more."""
    eps, d = 1.3, 6
    p, q = oue_probabilities(eps)

    def pmf(report, value):
        return math.prod(
            (p if k == value else q) if b else (1 - p if k == value else 1 - q) for k, b in enumerate(report)
        )

    worst = max(
        math.log(pmf(r, v) / pmf(r, w)) for r in itertools.product((0, 1), repeat=d) for v in range(d) for w in range(d)
    )
    assert worst == pytest.approx(eps, rel=1e-12) and worst <= eps + 1e-12


@pytest.mark.parametrize("claimed, ok", [(1.0, True), (1.2, False)])
def test_the_sampler_draws_reports_from_the_law_the_ratio_is_computed_for(claimed, ok):
    """Chi-square of 200,000 sampled 4-bit reports (value 1) against the exact OUE pmf at the
    claimed epsilon, alpha = 1e-6; power: the pmf at epsilon 1.2 is rejected."""
    d = 4
    bits = oue_bits(np.full(200_000, 1), d, 1.0, np.random.default_rng(5))
    pattern = bits.astype(int) @ (1 << np.arange(d))
    p, q = oue_probabilities(claimed)
    expected = np.array(
        [
            math.prod((p if k == 1 else q) if (r >> k) & 1 else (1 - p if k == 1 else 1 - q) for k in range(d))
            for r in range(2**d)
        ]
    ) * len(pattern)
    pvalue = stats.chisquare(np.bincount(pattern, minlength=2**d), expected).pvalue
    assert (pvalue > ALPHA) == ok


def test_each_user_reports_once_in_its_depths_domain():
    grid = Grid.regular(Domain(0, 1, 0, 1), 16, 16)
    mech = mechanisms.get("ldp_kdtree")(epsilon=1.0, height=3, buckets=5)
    pts = pd.DataFrame({"user": np.arange(3000), **dict(zip("xy", _skewed(3000, 2).T, strict=True))})
    view = mech.randomize(pts, rng=3, domain=grid)
    assert len(view) == 3000 and (view["user"] == pts["user"]).all()
    assert np.bincount(view["level"], minlength=3).tolist() == [1000, 1000, 1000]
    for level, ones in zip(view["level"], view["ones"], strict=True):
        assert ((0 <= ones) & (ones < 2**level * 5)).all()
    leaves = pd.DataFrame({k: view.attrs["release"][k] for k in ("x0", "x1", "y0", "y1")})
    assert len(leaves) == 8 and ((leaves.x1 - leaves.x0) * (leaves.y1 - leaves.y0)).sum() == pytest.approx(1.0)


def test_registered_with_a_local_guarantee_and_exported():
    assert "ldp_kdtree" in mechanisms.names() and mechanisms.get("ldp_kdtree").interactive
    g = locpriv.LDPKDTree(epsilon=2.0).guarantee()
    assert g.model == "epsilon-LDP" and g.epsilon == 2.0 and g.delta == 0.0 and g.trust_model == "local"
    assert g.relation == "any two inputs (local)" and "one report" in g.covers
