"""The SLDP interactive quadtree ([SLDP] Alg. 1/2)."""

import math

import numpy as np
import pandas as pd
import pytest

from locpriv.dp.sampling import discrete_laplace, exact_scale
from locpriv.sldp.margin import split_margin
from locpriv.sldp.protocol import (
    INDICATOR_STEP,
    SPLIT_RULES,
    child_reports,
    guarantee,
    noise_scale,
    round_cost,
    run_protocol,
)

BOX = (-10.0, 10.0, -10.0, 10.0)


def sample(n, seed=0):
    """Uniform on the box with a denser square: cells split to different depths.

    (Alg. 2 stops a parent as soon as ONE child is sparse, so peaked data such as
    N(0, 1.5^2) on [-10, 10]^2 stops after the first rounds.)"""
    rng = np.random.default_rng(seed)
    pts = rng.uniform(-10, 10, size=(n, 2))
    pts[: n // 2] = rng.uniform(-10, 0, size=(n // 2, 2))
    return pts


@pytest.fixture(scope="module", params=SPLIT_RULES)
def result(request):
    return request.param, run_protocol(
        sample(20000),
        BOX,
        epsilon=1.0,
        threshold=50,
        max_depth=8,
        delta=0.05,
        rng=np.random.default_rng(1),
        split_rule=request.param,
    )


def test_transcript_has_no_location_or_raw_indicator(result):
    _, result = result
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
    _, result = result
    per_user = result.reports.groupby("user")["round"].agg(["count", "max"])
    cells = result.user_cell.set_index("user")
    fixed = cells["fixed_round"].loc[per_user.index]
    assert (per_user["max"] == fixed).all() and (per_user["count"] == 4 * fixed).all()
    assert (fixed <= cells["level"].loc[per_user.index] + 1).all()
    assert result.rounds["round"].max() > fixed.min()  # some users stopped before the end


def test_partition_holds_every_user_exactly_once(result):
    """Every user's region is a released cell, except under "pooled", where a pooled region is released
    as its cells (the sparse children of the parent the user's region records) and the parent is not."""
    split_rule, result = result
    cells = result.cells
    assert len(result.user_cell) == 20000 and (result.user_cell["level"] >= 0).all()
    keyed = set(zip(cells["level"], cells["code"], strict=True))
    regions = set(zip(result.user_cell["level"], result.user_cell["code"], strict=True))
    pooled = regions - keyed
    assert bool(pooled) == (split_rule == "pooled")
    assert all(any((lvl + 1, code << 2 | k) in keyed for k in range(4)) for lvl, code in pooled)
    # disjoint: no partition cell is an ancestor of another
    for lvl, code in keyed:
        for up in range(lvl):
            assert (up, code >> (2 * (lvl - up))) not in keyed


def printed_margin(n, b, delta):
    """Alg. 2 line 14 (main's margin before this fix): b (sqrt(2 n x) + 6 x), x = ln 1/delta."""
    x = math.log(1 / delta)
    return b * (math.sqrt(2 * n * x) + 6 * x)


def exact_tail(n, b, margin):
    """P(sum of n report noises >= margin), exactly: the discrete Laplace law at the sampler's scale
    (P(k) ∝ p^|k| on the grid INDICATOR_STEP), convolved n times by FFT on a lattice of +-12 sd."""
    t = exact_scale(b / INDICATOR_STEP)
    size = 1 << math.ceil(math.log2(24 * math.sqrt(2 * n) * t + 64))
    k = np.fft.fftfreq(size, 1 / size).astype(np.int64)  # 0, 1, ..., -1: wrapped lattice
    p = math.exp(-1 / t)
    law = np.fft.irfft(np.fft.rfft((1 - p) / (1 + p) * p ** np.abs(k)) ** n, size)
    return float(np.clip(law, 0, None)[k >= math.ceil(margin / INDICATOR_STEP - 1e-9)].sum())


@pytest.mark.parametrize(
    "n, delta", [(1, 0.05), (5, 0.05), (100, 0.05), (20000, 0.05), (2000, 1e-3), (20000, 1e-3), (300, 1e-6)]
)
def test_split_margin_is_a_valid_and_tight_tail_quantile(n, delta):
    """Thm 4.1's delta is P(the noise of a sparse child's n_hat >= Delta).  The exact tail (FFT of
    the sampler's law) at the new margin is <= delta, and >= 0.7 delta (the bound is not vacuous:
    a looser margin would cost splits).  Alg. 2 line 14's margin, for contrast, misses delta by 2.3x
    at n = 2e4, delta = 1e-3 (issue 28.2), and overshoots it 30-fold and more at small n."""
    b = noise_scale(1.0)
    tail = exact_tail(n, b, float(split_margin(n, b, delta, INDICATOR_STEP)))
    assert 0.7 * delta <= tail <= delta
    if (n, delta) == (20000, 1e-3):
        assert exact_tail(n, b, printed_margin(n, b, delta)) > 2.2 * delta


def test_split_margin_grows_with_n_and_scales_with_b():
    b = noise_scale(0.5)
    m = split_margin(np.arange(0, 3000), b, 0.05, INDICATOR_STEP)
    assert m[0] == 0 and (np.diff(m) >= 0).all()
    # standardised: Delta / (b sqrt(2 n)) tends to the normal quantile 1.645 (plus the grid's <= 1 %)
    assert 1.645 < m[2999] / (b * math.sqrt(2 * 2999)) < 1.645 * 1.03
    assert split_margin(500, 2 * b, 0.05, INDICATOR_STEP) == pytest.approx(
        2 * split_margin(500, b, 0.05, INDICATOR_STEP), rel=1e-3
    )
    with pytest.raises(ValueError, match="delta"):
        split_margin(10, b, 1e-12, INDICATOR_STEP)


def clopper_pearson_lower(k, runs, alpha):
    from scipy.stats import beta

    return float(beta.ppf(alpha, k, runs - k + 1)) if k else 0.0


@pytest.mark.heavy
def test_split_frequency_at_delta_1e_3_with_the_projects_sampler():
    """Monte Carlo with the protocol's own noise (``dp.sampling.discrete_laplace`` at eps = 1):
    R = 20,000 sums of n = 20,000 report noises, delta = 1e-3.  A split of U* needs the sum to
    reach the margin; the frequency's one-sided Clopper-Pearson lower bound at alpha = 0.01
    exceeds delta for Alg. 2 line 14's margin (exact tail 2.29e-3: power 0.98 at this R) and
    does not for the new one (exact tail <= delta: a false alarm has probability <= 0.01)."""
    n, runs, delta, alpha = 20000, 20000, 1e-3, 0.01
    b = noise_scale(1.0)
    new, old = float(split_margin(n, b, delta, INDICATOR_STEP)), printed_margin(n, b, delta)
    rng = np.random.default_rng(28)
    sums = np.concatenate(
        [
            INDICATOR_STEP * discrete_laplace(b / INDICATOR_STEP, rng, size=(250, n)).sum(axis=1)
            for _ in range(runs // 250)
        ]
    )
    assert clopper_pearson_lower(int((sums >= old).sum()), runs, alpha) > delta
    assert clopper_pearson_lower(int((sums >= new).sum()), runs, alpha) <= delta


def test_split_frequency_at_delta_5_percent():
    """The default delta: 2000 sums of n = 400 noises of the protocol's sampler; exceedances of the
    margin are Binomial(2000, p <= 0.05): the Clopper-Pearson lower bound (alpha = 0.001) stays
    <= delta, and the count is not vacuously small (exact tail >= 0.75 delta: >= 50 expected)."""
    n, runs, delta = 400, 2000, 0.05
    b = noise_scale(0.7)
    sums = INDICATOR_STEP * discrete_laplace(b / INDICATOR_STEP, np.random.default_rng(2), size=(runs, n)).sum(axis=1)
    hits = int((sums >= split_margin(n, b, delta, INDICATOR_STEP)).sum())
    assert clopper_pearson_lower(hits, runs, 0.001) <= delta and hits >= 50


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
    # and says why, including that its exact counts are not the free ones
    assert "reveals which child of its ideal region" in per_child.note and "without noise" in per_child.note
    assert (
        "not covered" in per_child.covers and "free" in guarantee(1.0, 0.05, 20, "all_children", "sensitivity2").covers
    )


def test_split_needs_every_child_above_threshold_plus_margin():
    # all users in one quadrant: the root's other children are empty, so the root is the partition
    pts = np.full((5000, 2), 5.0)
    res = run_protocol(pts, BOX, epsilon=2.0, threshold=10, max_depth=4, delta=0.05, rng=np.random.default_rng(3))
    assert res.cells[["level", "code"]].values.tolist() == [[0, 0]]
    assert not res.rounds["split"].any() and res.reports["round"].max() == 1


def test_out_of_box_points_are_an_error():
    with pytest.raises(ValueError, match="outside the quadtree box"):
        run_protocol(np.array([[11.0, 0.0]]), BOX, 1.0, 10, 3, 0.05, np.random.default_rng(0))


def test_leaves_option_only_changes_the_released_cells():
    """Same transcript either way; under counts "noisy" merge releases, for each parent whose
    children all stopped, one cell with n(parent) where children releases its four n_hat."""
    pts = sample(20000, seed=9)
    kw = dict(box=BOX, epsilon=1.0, threshold=20, max_depth=8, delta=0.05, split_rule="per_child", counts="noisy")
    merged = run_protocol(pts, rng=np.random.default_rng(10), leaves="merge", **kw)
    kept = run_protocol(pts, rng=np.random.default_rng(10), leaves="children", **kw)
    for a, b in ((merged.reports, kept.reports), (merged.rounds, kept.rounds), (merged.user_cell, kept.user_cell)):
        pd.testing.assert_frame_equal(a, b)
    whole = merged.rounds[merged.rounds["children_split"] == 0]
    assert len(whole) > 0 and len(kept.cells) == len(merged.cells) + 3 * len(whole)
    parents = merged.cells.merge(whole, on=["level", "code"])
    np.testing.assert_array_equal(parents["count"], parents["n_parent"])
    found = children_of(kept.cells, whole)
    assert (found.size() == 4).all() and found.ngroups == len(whole)
    hats = whole.set_index(["level", "code"])[[f"n_hat_{c}" for c in range(4)]].sum(axis=1)
    np.testing.assert_allclose(found["count"].sum(), hats.loc[found["count"].sum().index])


def children_of(cells, parents):
    """The released cells whose parent is one of ``parents`` (level, code), grouped by parent."""
    cells = cells[cells["level"] > 0]
    children = pd.DataFrame(
        {
            "level": cells["level"].to_numpy() - 1,
            "code": cells["code"].to_numpy() >> 2,
            "count": cells["count"].to_numpy(),
        }
    )
    return children.merge(parents, on=["level", "code"]).groupby(["level", "code"])


@pytest.mark.parametrize("split_rule", ["all_children", "per_child"])
def test_region_counts_are_exact_and_leave_the_transcript_and_record_unchanged(split_rule):
    """counts "regions": every released cell carries the number of users whose region it is (all
    N users counted once), from the same transcript as counts "noisy"; the record (epsilon, delta)
    does not depend on it.  Power: under the per-child rule the noisy counts differ from the exact ones."""
    pts = sample(20000, seed=12)
    kw = dict(box=BOX, epsilon=1.0, threshold=20, max_depth=8, delta=0.05, split_rule=split_rule)
    exact = run_protocol(pts, rng=np.random.default_rng(13), counts="regions", **kw)
    noisy = run_protocol(pts, rng=np.random.default_rng(13), counts="noisy", **kw)
    for a, b in ((exact.reports, noisy.reports), (exact.rounds, noisy.rounds), (exact.user_cell, noisy.user_cell)):
        pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(exact.cells[["level", "code"]], noisy.cells[["level", "code"]])
    users = exact.user_cell.groupby(["level", "code"]).size()
    counted = exact.cells.set_index(["level", "code"])["count"]
    np.testing.assert_array_equal(counted, users.reindex(counted.index, fill_value=0))
    assert counted.sum() == len(pts)
    gap = np.abs(noisy.cells["count"] - exact.cells["count"]).max()
    # Alg. 2 as printed releases whole parents (n(parent): exact already) unless max_depth is reached;
    # the per-child rule releases stopped children, whose n_hat carries the parent's users' noise
    assert gap == 0 if split_rule == "all_children" else gap > 1
    # the guarantee takes no counts argument: one record for both (checked on the study's metadata
    # in test_sldp_workflow)
    record = guarantee(1.0, 0.05, 20, split_rule, "sensitivity2")
    assert "exact number of users in each released region" in record.covers


def test_moving_a_user_inside_its_region_changes_nothing_released():
    """The free-count argument, coupled: same seed, one user moved inside the region it was released
    in (so inside U* on the good event), the whole release -- cells and exact counts -- is identical,
    while moving it to another region changes the counts (power)."""
    from locpriv.quadtree import cell_box

    pts = sample(5000, seed=14)
    kw = dict(box=BOX, epsilon=1.0, threshold=20, max_depth=8, delta=0.05, split_rule="all_children")
    base = run_protocol(pts, rng=np.random.default_rng(15), **kw)
    level, code = base.user_cell.loc[0, ["level", "code"]]
    x0, x1, y0, y1 = cell_box(np.array([level]), np.array([code]), BOX)[0]
    inside, elsewhere = pts.copy(), pts.copy()
    inside[0] = [x0 + 0.9 * (x1 - x0), y0 + 0.1 * (y1 - y0)]
    far = (base.user_cell["level"] != level) | (base.user_cell["code"] != code)
    elsewhere[0] = pts[np.flatnonzero(far)[0]]
    moved = run_protocol(inside, rng=np.random.default_rng(15), **kw)
    pd.testing.assert_frame_equal(base.cells, moved.cells)
    other = run_protocol(elsewhere, rng=np.random.default_rng(15), **kw)
    assert not base.cells.equals(other.cells)


def test_child_cells_inside_regions_sum_to_the_region_and_a_fresh_release_is_recorded():
    """leaves "children" with exact counts: the four children of a whole parent carry estimates
    that sum to the parent's exact count (free post-processing of n_hat); a fresh child release at
    child_epsilon changes the estimates and is charged in the record."""
    pts = sample(20000, seed=16)
    kw = dict(
        box=BOX,
        epsilon=1.0,
        threshold=20,
        max_depth=8,
        delta=0.05,
        split_rule="per_child",
        leaves="children",
        counts="regions",
    )
    free = run_protocol(pts, rng=np.random.default_rng(17), **kw)
    paid = run_protocol(pts, rng=np.random.default_rng(17), child_epsilon=0.5, **kw)
    whole = free.rounds[free.rounds["children_split"] == 0][["level", "code", "n_parent"]]
    for res in (free, paid):
        found = children_of(res.cells, whole)
        sums = found["count"].sum()
        np.testing.assert_allclose(sums, whole.set_index(["level", "code"])["n_parent"].loc[sums.index])
    inner = children_of(free.cells, whole)["count"].sum().index
    assert len(inner) > 10 and not np.allclose(free.cells["count"], paid.cells["count"])
    assert guarantee(1.0, 0.05, 20, "all_children", "sensitivity2", child_epsilon=0.5).epsilon == 1.5
    with pytest.raises(ValueError, match="child_epsilon"):
        run_protocol(pts, BOX, 1.0, 20, 8, 0.05, np.random.default_rng(0), leaves="merge", child_epsilon=0.5)


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
    from locpriv.quadtree import cell_box
    from locpriv.sldp.mean import sldp_mean, squared_norm_oscillation

    pts = sample(4000, seed=6)
    part = run_protocol(pts, BOX, 1.0, 0, 6, 0.05, np.random.default_rng(7), split_rule="per_child", keep_reports=False)
    rng = np.random.default_rng(8)
    est = np.array([sldp_mean(pts, part.user_cell, BOX, 1.0, rng) for _ in range(200)])
    scale = squared_norm_oscillation(cell_box(part.user_cell["level"], part.user_cell["code"], BOX))
    se = np.sqrt(2 * (scale**2).sum()) / len(pts) / np.sqrt(200)  # Var Lap(b) = 2 b^2
    assert abs(est.mean() - (pts**2).sum(1).mean()) < 5 * se


def test_pooled_rule_is_the_per_child_transcript_with_sparse_siblings_stopped_as_one_region():
    """ "pooled" at delta runs the per-child rule's rounds at the margin of delta / 2 (same reports,
    counts and decisions); what changes is where users stop: a sparse child's users stop at its parent,
    whose released cells (the sparse children) carry counts summing to that region's exact number of
    users.  Power: some parents split in part, and the pooled children's counts are not exact."""
    pts = sample(20000, seed=18)
    kw = dict(box=BOX, epsilon=1.0, threshold=20, max_depth=8, keep_reports=True)
    pooled = run_protocol(pts, delta=0.05, rng=np.random.default_rng(19), split_rule="pooled", **kw)
    per_child = run_protocol(pts, delta=0.025, rng=np.random.default_rng(19), split_rule="per_child", **kw)
    pd.testing.assert_frame_equal(pooled.rounds, per_child.rounds)
    pd.testing.assert_frame_equal(pooled.reports, per_child.reports)
    rounds = pooled.rounds
    partial = rounds[(rounds["children_split"] > 0) & ~rounds["split"]]
    assert len(partial) > 5
    regions = pooled.user_cell.merge(partial[["level", "code"]], on=["level", "code"])
    assert len(regions) > 0 and (regions["fixed_round"] == regions["level"] + 1).all()
    sparse = [
        {"level": r.level + 1, "code": r.code << 2 | c, "parent": r.code, "n_hat": getattr(r, f"n_hat_{c}")}
        for r in partial.itertuples()
        for c in range(4)
        if getattr(r, f"n_hat_{c}") < 20 + r.margin
    ]
    released = pooled.cells.merge(pd.DataFrame(sparse), on=["level", "code"])
    assert len(released) == len(sparse)  # every pooled child is a cell
    sums = released.groupby("parent")["count"].sum()
    users = regions.groupby("code").size()
    np.testing.assert_allclose(sums, users.reindex(sums.index, fill_value=0))
    # the pooled children's counts are the transcript's n_hat shifted to the region's count, not exact
    assert not np.allclose(released["count"], released["n_hat"])
    inside = per_child.user_cell.groupby(["level", "code"]).size().rename("users").reset_index()
    exact = released.merge(inside, on=["level", "code"], how="left").fillna({"users": 0})
    assert (exact["count"] != exact["users"]).any()


def test_pooled_record_is_proven_for_its_own_regions():
    record = guarantee(1.0, 0.05, 20, "pooled", "sensitivity2")
    assert (record.epsilon, record.delta) == (1.0, 0.05) and record.model.startswith("(epsilon, delta)-SLDP")
    assert "fewer than Q users" in record.relation and "delta / 2" in record.note
