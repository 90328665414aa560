"""The SLDP interactive quadtree ([SLDP] Alg. 1/2)."""

import math

import numpy as np
import pandas as pd
import pytest

from locpriv.dp.sampling import discrete_laplace
from locpriv.sldp.protocol import (INDICATOR_STEP, child_reports, guarantee, noise_scale, round_cost, run_protocol,
                                   split_margin, x_of_delta)

BOX = (-10.0, 10.0, -10.0, 10.0)


def sample(n, seed=0):
    """Uniform on the box with a denser square: cells split to different depths.

    (Alg. 2 stops a parent as soon as ONE child is sparse, so peaked data such as
    N(0, 1.5^2) on [-10, 10]^2 stops after the first rounds.)"""
    rng = np.random.default_rng(seed)
    pts = rng.uniform(-10, 10, size=(n, 2))
    pts[: n // 2] = rng.uniform(-10, 0, size=(n // 2, 2))
    return pts


@pytest.fixture(scope="module", params=["all_children", "per_child"])
def result(request):
    return run_protocol(sample(20000), BOX, epsilon=1.0, threshold=50, max_depth=8, delta=0.05,
                        rng=np.random.default_rng(1), split_rule=request.param)


def test_transcript_has_no_location_or_raw_indicator(result):
    assert set(result.reports.columns) == {"round", "user", "level", "code", "y"}
    assert not {"x", "y_location", "indicator"} & set(result.rounds.columns)
    # reports lie on the public grid (Mironov-safe); a bare indicator value is as rare as
    # P(discrete Laplace = 0) = tanh(1 / (2 s)) ~ 1 / (2 s), s = 512 steps at eps = 1
    y = result.reports["y"].to_numpy()
    assert (y / INDICATOR_STEP == np.rint(y / INDICATOR_STEP)).all()
    assert np.isin(y, [0.0, 1.0]).mean() < 2 * 2 / (2 * 512)


def test_users_stop_answering_once_their_region_is_fixed(result):
    """A user answers rounds 1..r (4 reports each) where r is the round its region was fixed in.

    So its cost is set by its own region (r <= region depth + 1), not by the total
    number of rounds the server runs (Remark 4.1).
    """
    per_user = result.reports.groupby("user")["round"].agg(["count", "max"])
    cells = result.user_cell.set_index("user")
    fixed = cells["fixed_round"].loc[per_user.index]
    assert (per_user["max"] == fixed).all() and (per_user["count"] == 4 * fixed).all()
    assert (fixed <= cells["level"].loc[per_user.index] + 1).all()
    assert result.rounds["round"].max() > fixed.min()   # some users stopped before the end


def test_partition_holds_every_user_exactly_once(result):
    cells = result.cells
    assert len(result.user_cell) == 20000 and (result.user_cell["level"] >= 0).all()
    keyed = set(zip(cells["level"], cells["code"]))
    assert all(k in keyed for k in zip(result.user_cell["level"], result.user_cell["code"]))
    # disjoint: no partition cell is an ancestor of another
    for lvl, code in keyed:
        for up in range(lvl):
            assert (up, code >> (2 * (lvl - up))) not in keyed


@pytest.mark.parametrize("calibration", ["sensitivity2", "paper"])
def test_lemma_4_1_bound_holds_at_its_probability(calibration):
    """|sum of n report noises| <= Delta(b) with probability >= 1 - e^-x, b the noise actually used.

    2000 Monte Carlo sums of the protocol's own (discrete) noise; the violation count is
    Binomial(2000, p <= e^-x = 0.05), so more than 100 + 5 sd = 100 + 5 sqrt(95) ~ 149
    violations would refute the bound.
    """
    eps, n, R = 0.7, 400, 2000
    x = x_of_delta(0.05)
    b = noise_scale(eps, calibration)
    sums = INDICATOR_STEP * discrete_laplace(b / INDICATOR_STEP, np.random.default_rng(2), size=(R, n)).sum(axis=1)
    violations = int((np.abs(sums) > split_margin(n, b, x)).sum())
    assert violations <= 100 + 5 * math.sqrt(R * 0.05 * 0.95)


@pytest.mark.parametrize("calibration, b", [("sensitivity2", 2 / 1.5), ("paper", 1 / 1.5)])
def test_child_reports_noise_has_the_calibrated_scale(calibration, b):
    """Var of each report = 2 b^2 (discrete Laplace of scale b / step, times step^2; ~2 b^2 at this
    resolution).  The sample variance of 2e5 draws has relative sd sqrt(5 / n) = 0.5 %: 5 sd = 2.5 %,
    while the other calibration is 4x off (power)."""
    rng = np.random.default_rng(11)
    child = rng.integers(0, 4, 50_000)
    y = child_reports(child, 1.5, rng, calibration)
    noise = y - np.eye(4)[child]
    assert noise.var() == pytest.approx(2 * b * b, rel=0.025)
    assert round_cost(1.5, calibration) == pytest.approx(2 / b)


def test_one_round_is_exactly_round_cost_ldp():
    """Users in children 0 and 1 (L1 distance 2 / step grid steps): the largest log-ratio of the
    reports' exact probabilities is (2 / step) / s with s the scale the sampler really uses; it is
    at most round_cost (eps by default, 2 eps as printed) and equal to it up to the scale's rounding."""
    from locpriv.dp.sampling import exact_scale
    step = INDICATOR_STEP
    for calibration, cost in (("sensitivity2", 1.0), ("paper", 2.0)):
        s = exact_scale(noise_scale(1.0, calibration) / step)
        # entry-wise log pmf difference is (|j - k'| - |j - k|) / s; the worst j saturates both entries
        worst = 2 * (1 / step) / s
        assert cost * (1 - 1e-6) < worst <= cost == round_cost(1.0, calibration)


def test_guarantee_states_the_true_cost_and_no_epsilon_without_a_proof():
    printed = guarantee(1.0, 0.05, 20, "all_children", "paper")
    assert printed.epsilon == 2.0 and "replace one user" in printed.relation and printed.delta == 0.05
    assert guarantee(1.0, 0.05, 20, "all_children", "sensitivity2").epsilon == 1.0
    # the mean task: half for the partition, half for the task: 1.5 eps as printed, eps calibrated
    assert guarantee(0.5, 0.05, 20, "all_children", "paper", task_epsilon=0.5, task="mean").epsilon == 1.5
    assert guarantee(0.5, 0.05, 20, "all_children", "sensitivity2", task_epsilon=0.5, task="mean").epsilon == 1.0
    per_child = guarantee(1.0, 0.05, 20, "per_child", "sensitivity2")
    assert per_child.epsilon is None and per_child.model.startswith("none proven")


def test_split_needs_every_child_above_threshold_plus_margin():
    # all users in one quadrant: the root's other children are empty, so the root is the partition
    pts = np.full((5000, 2), 5.0)
    res = run_protocol(pts, BOX, epsilon=2.0, threshold=10, max_depth=4, delta=0.05,
                       rng=np.random.default_rng(3))
    assert res.cells[["level", "code"]].values.tolist() == [[0, 0]]
    assert not res.rounds["split"].any() and res.reports["round"].max() == 1


def test_out_of_box_points_are_an_error():
    with pytest.raises(ValueError, match="outside the quadtree box"):
        run_protocol(np.array([[11.0, 0.0]]), BOX, 1.0, 10, 3, 0.05, np.random.default_rng(0))


def test_leaves_option_only_changes_the_released_cells():
    """Same transcript either way (post-processing); merge releases, for each parent whose
    children all stopped, one cell with n(parent) where children releases its four n_hat."""
    pts = sample(20000, seed=9)
    kw = dict(box=BOX, epsilon=1.0, threshold=20, max_depth=8, delta=0.05, split_rule="per_child")
    merged = run_protocol(pts, rng=np.random.default_rng(10), leaves="merge", **kw)
    kept = run_protocol(pts, rng=np.random.default_rng(10), leaves="children", **kw)
    for a, b in ((merged.reports, kept.reports), (merged.rounds, kept.rounds), (merged.user_cell, kept.user_cell)):
        pd.testing.assert_frame_equal(a, b)
    whole = merged.rounds[merged.rounds["children_split"] == 0]
    assert len(whole) > 0 and len(kept.cells) == len(merged.cells) + 3 * len(whole)
    parents = merged.cells.merge(whole, on=["level", "code"])
    np.testing.assert_array_equal(parents["count"], parents["n_parent"])
    cells = kept.cells[kept.cells["level"] > 0]
    children = pd.DataFrame({"level": cells["level"].to_numpy() - 1, "code": cells["code"].to_numpy() >> 2,
                             "count": cells["count"].to_numpy()})
    found = children.merge(whole, on=["level", "code"]).groupby(["level", "code"])
    assert (found.size() == 4).all() and found.ngroups == len(whole)
    hats = whole.set_index(["level", "code"])[[f"n_hat_{c}" for c in range(4)]].sum(axis=1)
    np.testing.assert_allclose(found["count"].sum(), hats.loc[found["count"].sum().index])


def test_per_child_rule_refines_dense_children_past_sparse_siblings():
    pts = np.random.default_rng(4).normal(0, 1.5, size=(20000, 2))
    kw = dict(box=BOX, epsilon=1.0, threshold=20, max_depth=8, delta=0.05)
    printed = run_protocol(pts, rng=np.random.default_rng(5), split_rule="all_children", **kw)
    authors = run_protocol(pts, rng=np.random.default_rng(5), split_rule="per_child", **kw)
    assert printed.cells["level"].max() <= 2 < authors.cells["level"].max()
    assert len(authors.cells) > 4 * len(printed.cells)


def test_squared_norm_oscillation_of_boxes():
    from locpriv.sldp.mean import squared_norm_oscillation
    boxes = np.array([[-10, 10, -10, 10], [1, 2, 3, 4], [-1, 2, 3, 4]], dtype=float)
    np.testing.assert_allclose(squared_norm_oscillation(boxes), [200, (4 + 16) - (1 + 9), (4 + 16) - (0 + 9)])


def test_sldp_mean_is_unbiased():
    """Mean of 200 SLDP estimates within 5 standard errors of the true mean (noise is the only error)."""
    from locpriv.sldp.mean import sldp_mean, squared_norm_oscillation
    from locpriv.quadtree import cell_box
    pts = sample(4000, seed=6)
    part = run_protocol(pts, BOX, 1.0, 0, 6, 0.05, np.random.default_rng(7), split_rule="per_child",
                        keep_reports=False)
    rng = np.random.default_rng(8)
    est = np.array([sldp_mean(pts, part.user_cell, BOX, 1.0, rng) for _ in range(200)])
    scale = squared_norm_oscillation(cell_box(part.user_cell["level"], part.user_cell["code"], BOX))
    se = np.sqrt(2 * (scale ** 2).sum()) / len(pts) / np.sqrt(200)   # Var Lap(b) = 2 b^2
    assert abs(est.mean() - (pts ** 2).sum(1).mean()) < 5 * se
