"""The informed adversary (DP's threat model) and its invariant: likelihoods against brute force, power checks.

Each likelihood of ``locpriv.adversary.informed`` is checked against an independent
brute-force evaluation of P(release | others, target at x) on small constructed cases
(every factor of the release's law, not only those that depend on x), up to a constant.
The invariant (max log-likelihood ratio <= the recorded ε under its relation) is a
theorem for a correct mechanism, so the honest cases must satisfy it always; its power
is shown on planted faults whose noise is at 2ε while the record says ε: each must fail.
"""

import math

import numpy as np
import pytest

from locpriv.adversary import informed
from locpriv.domain import Domain, Grid
from locpriv.heatmaps import baselines
from locpriv.heatmaps.adaptive import AdaptiveParams, run_adaptive
from locpriv.heatmaps.aggregation import SecAgg, UserPool
from locpriv.quadtree import cell_box, cell_codes, interleave
from locpriv.sldp import privtree
from locpriv.sldp.protocol import INDICATOR_STEP, round_cost, run_protocol

BOX = [0.0, 1.0, 0.0, 1.0]


def dlap_log_pmf(z, scale):
    """log P(Z = z), P ∝ exp(−|z| / scale) on the integers (normalised)."""
    q = math.exp(-1.0 / scale)
    return math.log((1 - q) / (1 + q)) - np.abs(np.asarray(z, dtype=float)) / scale


# ---- discrete Laplace helpers -------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.7, 3.0, 300.0])
def test_discrete_laplace_tail_is_the_summed_pmf(scale):
    z = np.arange(-60 * int(scale + 1), 60 * int(scale + 1) + 1)
    log_pmf = dlap_log_pmf(z, scale)
    tail = np.logaddexp.accumulate(log_pmf[::-1])[::-1]  # log P(Z >= z[i])
    m = np.arange(-20 * int(scale + 1), 20 * int(scale + 1))
    np.testing.assert_allclose(informed.dlap_log_tail(m, scale), tail[m - z[0]], rtol=1e-9, atol=1e-12)


def test_shift_log_ratio_is_the_pmf_ratio():
    z = np.arange(-700, 700)
    np.testing.assert_allclose(
        informed.dlap_shift_log_ratio(z, 256.0, 256.0),
        dlap_log_pmf(z - 256, 256.0) - dlap_log_pmf(z, 256.0),
        atol=1e-12,
    )


# ---- pieces on the grid -------------------------------------------------------------------------


def test_piece_map_is_the_cell_average_of_a_piecewise_constant_likelihood():
    """Leaves of mixed levels tiling the box: the grid value is the mean of the likelihood over the cell,
    measured on a fine lattice aligned with both (exact, since every boundary is on the lattice)."""
    level = np.array([1, 1, 1, 2, 2, 2, 2])
    code = np.array([0, 1, 2, 12, 13, 14, 15])
    values = np.log(np.array([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]))
    grid = Grid.regular(Domain(*BOX), 5, 3)
    got = np.exp(informed.PieceMap(level, code, grid).to_grid(values))[0]
    fine = 60  # multiple of 4 (leaves) and of 5, 3 (cells)
    centres = (np.arange(fine) + 0.5) / fine
    fx, fy = np.meshgrid(centres, centres, indexing="ij")
    boxes = cell_box(level, code, BOX)
    inside = (
        (fx[..., None] >= boxes[:, 0])
        & (fx[..., None] < boxes[:, 1])
        & (fy[..., None] >= boxes[:, 2])
        & (fy[..., None] < boxes[:, 3])
    )
    assert (inside.sum(axis=2) == 1).all()  # the leaves tile the box
    field = (inside * np.exp(values[0])).sum(axis=2)
    expected = field.reshape(5, fine // 5, 3, fine // 3).mean(axis=(1, 3))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# ---- distributed heatmaps -----------------------------------------------------------------------


def _users(n, depth, seed):
    rng = np.random.default_rng(seed)
    side = 1 << depth
    x = np.clip(rng.normal(side * 0.4, side * 0.2, n).astype(int), 0, side - 1)
    y = np.clip(rng.normal(side * 0.6, side * 0.2, n).astype(int), 0, side - 1)
    return x, y, rng


def _brute_heatmap_log_lik(rounds, shard_pixels, shard, pixel, depth):
    """log P(every shard's sums in every round | others, target at each pixel): every factor, one pixel at a time."""
    side = 1 << depth
    out = np.zeros(side * side)
    others = [p.copy() for p in shard_pixels]
    mine = list(others[shard])
    mine.remove(pixel)  # one user at the target's pixel is the target
    others[shard] = np.array(mine, dtype=np.int64)
    for candidate in range(side * side):
        total = 0.0
        for rnd in rounds:
            path = interleave(*np.divmod(np.arange(side * side), side), depth)
            # deepest reporting node that is a prefix of each pixel (independent of PrefixTree)
            node = np.full(side * side, -1)
            for k in np.argsort(rnd.levels, kind="stable"):
                node[(path >> (2 * (depth - rnd.levels[k]))) == rnd.codes[k]] = k
            for j, pixels in enumerate(others):
                members = np.append(pixels, candidate) if j == shard else pixels
                hist = np.bincount(node[members], minlength=len(rnd.levels))
                total += dlap_log_pmf(rnd.sums[j] - hist, rnd.sensitivity / rnd.epsilon).sum()
        out[candidate] = total
    return out


@pytest.mark.parametrize("method", ["flat", "hierarchical", "adaptive", "adaptive_per_client"])
def test_heatmap_likelihood_is_the_brute_force_law_of_the_shard_sums(method):
    depth, n, size = 2, 90, 40  # 16 pixels, shards of 40, 40, 10 users
    x, y, rng = _users(n, depth, 4)
    mode = "per_client" if method.endswith("per_client") else "population"
    secagg = SecAgg(shard_size=size, mode=mode)
    pool = UserPool.from_pixels(x, y, depth, "fixed", shard_size=size)
    if method.startswith("adaptive"):
        result = run_adaptive(
            pool, AdaptiveParams(epsilon=1.5, users_per_round=n, sampling="fixed", secagg=secagg, calibration=1.0), rng
        )
    else:
        result = getattr(baselines, method)(pool, n, 1.5, rng, secagg)
    rounds = result.server_rounds
    assert math.isclose(sum(r.epsilon for r in rounds), 1.5)
    pixel = x * (1 << depth) + y
    shard = np.arange(n) // size
    shard_pixels = [pixel[shard == j] for j in range(3)]
    targets = np.array([0, 45, 85])
    got = informed.heatmap_log_likelihood(rounds, shard_pixels, shard[targets], pixel[targets], depth)
    for row, t in zip(got, targets, strict=True):
        brute = _brute_heatmap_log_lik(rounds, shard_pixels, shard[t], pixel[t], depth)
        np.testing.assert_allclose(row - row[0], brute - brute[0], atol=1e-9)


def test_fixed_shards_sum_to_the_release_and_one_shard_is_the_exchangeable_draw():
    depth, n = 3, 500
    x, y, _ = _users(n, depth, 5)
    one = baselines.flat(
        UserPool.from_pixels(x, y, depth, "fixed", shard_size=n), n, 1.0, np.random.default_rng(9), SecAgg(shard_size=n)
    )
    plain = baselines.flat(
        UserPool.from_pixels(x, y, depth, "fixed"), n, 1.0, np.random.default_rng(9), SecAgg(shard_size=n)
    )
    np.testing.assert_array_equal(one.heatmap, plain.heatmap)  # same draws, same bytes
    many = run_adaptive(
        UserPool.from_pixels(x, y, depth, "fixed", shard_size=130),
        AdaptiveParams(epsilon=2.0, users_per_round=n, sampling="fixed", secagg=SecAgg(shard_size=130)),
        np.random.default_rng(2),
    )
    for rnd, server in zip(many.rounds, many.server_rounds, strict=True):
        np.testing.assert_array_equal(server.sums.sum(axis=0), rnd.noisy)
        assert server.sums.shape == (4, len(rnd.levels)) and np.array_equal(server.r, np.ones(4))


def test_fixed_shards_refuse_dropout_and_disjoint_sampling():
    x, y, rng = _users(50, 2, 1)
    with pytest.raises(ValueError, match="sampling='fixed'"):
        UserPool.from_pixels(x, y, 2, "disjoint", shard_size=10)
    pool = UserPool.from_pixels(x, y, 2, "fixed", shard_size=10)
    with pytest.raises(ValueError, match="without dropout"):
        baselines.flat(pool, 50, 1.0, rng, SecAgg(shard_size=10, dropout_rate=0.1))
    with pytest.raises(ValueError, match="do not split the sample"):
        baselines.flat(UserPool.from_pixels(x, y, 2, "fixed", shard_size=10), 50, 1.0, rng, SecAgg(shard_size=20))


def _collapsing_run(depth):
    """An adaptive run of 3,000 users that deletes leaves: the users' pixels and its result."""
    n = 3000
    x, y, rng = _users(n, depth, 7)
    result = run_adaptive(
        UserPool.from_pixels(x, y, depth, "fixed", shard_size=n),
        AdaptiveParams(epsilon=4.0, users_per_round=n, sampling="fixed", secagg=SecAgg(shard_size=n)),
        rng,
    )
    assert result.transcript["n_collapsed"].sum() > 0
    return x, y, result


def test_collapsed_leaves_report_to_their_ancestor_as_the_library_encodes():
    """An adaptive run that deletes leaves: the node of every pixel is the library's own encoding."""
    depth = 4
    _, _, result = _collapsing_run(depth)
    side = 1 << depth
    px, py = np.divmod(np.arange(side * side), side)
    for rnd in result.rounds:
        np.testing.assert_array_equal(
            informed.reporting_node_of_pixels(rnd.levels, rnd.codes, depth), rnd.tree.encode(px, py)
        )


def test_heatmap_pair_ratio_is_the_likelihood_difference_with_collapsed_leaves():
    """The audit's ratio (``heatmap_pair_log_ratio``) is ``heatmap_log_likelihood`` at one pixel minus at another,
    on an adaptive run that deletes leaves (their pixels report to an ancestor)."""
    depth = 4
    x, y, result = _collapsing_run(depth)
    pixel, codes = x * (1 << depth) + y, interleave(x, y, depth)
    full = informed.heatmap_log_likelihood(result.server_rounds, [pixel], [0], pixel[:1], depth)[0]
    pairs = [(0, j) for j in range(1, 400, 7)]
    got = [informed.heatmap_pair_log_ratio(result.server_rounds, codes[1:], codes[[i, j]], depth) for i, j in pairs]
    want = [full[pixel[i]] - full[pixel[j]] for i, j in pairs]
    assert np.count_nonzero(want) > 10
    np.testing.assert_allclose(got, want, atol=1e-12)


# ---- PrivTree -----------------------------------------------------------------------------------


def _brute_privtree_log_lik(leaves, noise, others_xy, candidates, copies=1):
    """log P(the leaves and their counts | others + ``copies`` points at each candidate): every node's factor.

    Counts by point-in-box tests, tails by summing the pmf: independent of the module's code."""
    scale, cscale = noise["split_scale"], noise["count_scale"]
    unit, delta, theta, depth = noise["unit"], noise["delta"], noise["theta"], noise["max_depth"]
    zmax = int(60 * scale) + 4000 * unit
    z = np.arange(-zmax, zmax + 1)
    tail = np.logaddexp.accumulate(dlap_log_pmf(z, scale)[::-1])[::-1]  # log P(Z >= z)
    level, code = leaves["level"].to_numpy(), leaves["code"].to_numpy()
    nodes = {(int(lv - up), int(c >> (2 * up))) for lv, c in zip(level, code, strict=True) for up in range(lv + 1)}
    nodes = sorted(nodes)
    leaf_set = set(zip(level.tolist(), code.tolist(), strict=True))
    counts = np.rint(leaves["count"].to_numpy() / noise["step"])
    count_of = dict(zip(zip(level.tolist(), code.tolist(), strict=True), counts, strict=True))
    boxes = cell_box(np.array([v[0] for v in nodes]), np.array([v[1] for v in nodes]), BOX)
    out = []
    for point in candidates:
        pts = np.vstack([others_xy, np.repeat(np.asarray(point)[None, :], copies, axis=0)])
        total = 0.0
        for (lv, c), (x0, x1, y0, y1) in zip(nodes, boxes, strict=True):
            # a point on the box's upper edge belongs to the last cell (quadtree.cell_codes)
            in_x = (pts[:, 0] >= x0) & ((pts[:, 0] < x1) | (x1 == BOX[1]))
            in_y = (pts[:, 1] >= y0) & ((pts[:, 1] < y1) | (y1 == BOX[3]))
            cnt = int((in_x & in_y).sum())
            b = max(cnt * unit - lv * delta, theta - delta)
            if (lv, c) in leaf_set:
                if lv < depth:
                    total += tail[(b - theta) + zmax]  # P(Z <= θ − b) = P(Z >= b − θ)
                total += dlap_log_pmf(count_of[(lv, c)] - cnt * unit, cscale)
            else:
                total += tail[(theta - b + 1) + zmax]  # P(Z > θ − b)
        out.append(total)
    return np.array(out)


def _privtree_case(n, eps_each, seed):
    rng = np.random.default_rng(seed)
    pts = np.clip(np.concatenate([rng.normal(0.3, 0.1, (n // 2, 2)), rng.uniform(0, 1, (n - n // 2, 2))]), 0, 1)
    leaves = privtree.privtree(pts, BOX, eps_each, eps_each, rng)
    return pts, leaves


def test_privtree_likelihood_is_the_brute_force_law_of_the_release():
    pts, leaves = _privtree_case(300, 1.0, 3)
    noise = leaves.attrs["noise"]
    paths = cell_codes(pts, BOX, noise["max_depth"])
    targets = np.array([0, 7, 299])
    got = informed.privtree_log_likelihood(
        leaves["level"], leaves["code"], leaves["count"], noise, paths, paths[targets]
    )
    boxes = cell_box(leaves["level"].to_numpy(), leaves["code"].to_numpy(), BOX)
    centres = np.column_stack([(boxes[:, 0] + boxes[:, 1]) / 2, (boxes[:, 2] + boxes[:, 3]) / 2])
    assert len(leaves) > 10 and leaves["level"].max() >= 3
    for row, t in zip(got, targets, strict=True):
        brute = _brute_privtree_log_lik(leaves, noise, np.delete(pts, t, axis=0), centres)
        np.testing.assert_allclose(row - row[0], brute - brute[0], atol=1e-7)


def test_privtree_path_ratio_is_the_brute_force_ratio_with_and_without_a_user():
    """The audit's ratio (``privtree_path_log_ratio``): log P(release | others + one at z) − log P(release | others)."""
    pts, leaves = _privtree_case(300, 1.0, 3)
    noise = leaves.attrs["noise"]
    others, targets = pts[3:], pts[:3]
    got = informed.privtree_path_log_ratio(
        leaves["level"],
        leaves["code"],
        leaves["count"].to_numpy(),
        noise,
        cell_codes(others, BOX, noise["max_depth"]),
        cell_codes(targets, BOX, noise["max_depth"]),
    )
    with_one = _brute_privtree_log_lik(leaves, noise, others, targets)
    without = _brute_privtree_log_lik(leaves, noise, others, targets[:1], copies=0)
    np.testing.assert_allclose(got, with_one - without[0], atol=1e-7)


def test_privtree_grid_and_statistic_are_the_per_leaf_values_mixed():
    """The fast paths (per-node grid maps, subtree extremes) equal the per-leaf likelihood mixed by overlap."""
    pts, leaves = _privtree_case(3000, 2.0, 8)
    noise = leaves.attrs["noise"]
    paths = cell_codes(pts, BOX, noise["max_depth"])
    model = informed.PrivTreeLikelihood(leaves["level"], leaves["code"], leaves["count"], noise, paths)
    targets = paths[::97]
    values = model.leaf_values(targets)
    grid = Grid.regular(Domain(*BOX), 23, 17)
    expected = informed.PieceMap(leaves["level"], leaves["code"], grid).to_grid(values)
    np.testing.assert_allclose(model.on_grid(targets, grid), expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.statistic(targets), informed.max_log_ratio(values), atol=1e-12)


def test_privtree_person_likelihood_is_the_brute_force_law_of_the_release():
    """A person's k rows all at one location, the other persons' rows known (``person_values``): equal, up to
    a constant, to the release's whole law with the person's k rows at each leaf's centre; a one-row person
    is the user-level likelihood."""
    pts, leaves = _privtree_case(300, 1.0, 3)
    noise = leaves.attrs["noise"]
    paths = cell_codes(pts, BOX, noise["max_depth"])
    model = informed.PrivTreeLikelihood(leaves["level"], leaves["code"], leaves["count"], noise, paths)
    persons = [np.array([0, 5, 9]), np.arange(100, 112)]
    got = model.person_values([paths[p] for p in persons])
    boxes = cell_box(leaves["level"].to_numpy(), leaves["code"].to_numpy(), BOX)
    centres = np.column_stack([(boxes[:, 0] + boxes[:, 1]) / 2, (boxes[:, 2] + boxes[:, 3]) / 2])
    for row, rows in zip(got, persons, strict=True):
        brute = _brute_privtree_log_lik(leaves, noise, np.delete(pts, rows, axis=0), centres, copies=len(rows))
        np.testing.assert_allclose(row - row[0], brute - brute[0], atol=1e-7)
    np.testing.assert_allclose(model.person_values([paths[[7]]]), model.leaf_values(paths[[7]]), atol=1e-12)


def _privtree_persons(n_persons, k, eps_each, seed):
    """n_persons persons of k rows each, close around a home (0.002 of the side): privtree's release and the
    persons' full-depth codes."""
    rng = np.random.default_rng(seed)
    homes = rng.uniform(0.05, 0.95, (n_persons, 2))
    pts = np.clip(np.repeat(homes, k, axis=0) + rng.normal(0, 0.002, (n_persons * k, 2)), 0, 1)
    leaves = privtree.privtree(pts, BOX, eps_each, eps_each, rng)
    paths = cell_codes(pts, BOX, leaves.attrs["noise"]["max_depth"])
    return leaves, paths, [paths[i * k : (i + 1) * k] for i in range(n_persons)]


@pytest.mark.parametrize(("eps", "k"), [(0.5, 2), (2.0, 4)])
def test_privtree_person_statistic_meets_group_privacy_and_a_2eps_fault_fails(eps, k):
    """Person-level record: k rows of one person replaced, k times the replace-one 2ε (group privacy).  Honest:
    within it for every person (a theorem: each hypothesis is such a neighbour).  Planted fault: both halves'
    noise at 2×.  Measured (500 persons, every 5th attacked): honest maxima 0.61-0.71 of the bound, faulty
    1.41-1.46 of it, above the bound for every attacked person (at ε = 8 with spread-out persons the fault
    can stay under the group bound, which is loose there: not a case of this test)."""
    for factor, honest in ((1.0, True), (2.0, False)):
        leaves, paths, persons = _privtree_persons(500, k, factor * eps / 2, 11)
        model = informed.PrivTreeLikelihood(
            leaves["level"], leaves["code"], leaves["count"], leaves.attrs["noise"], paths
        )
        attacked = np.arange(0, 500, 5)
        stat = informed.max_log_ratio(model.person_values([persons[i] for i in attacked]))
        if honest:
            _check(stat, k * 2 * eps, attacked, "privtree")
        else:
            with pytest.raises(informed.InvariantViolation, match="privtree_fault"):
                _check(stat, k * 2 * eps, attacked, "privtree_fault")


# ---- SLDP ---------------------------------------------------------------------------------------


def test_compact_user_reports_are_the_transcripts_reports():
    pts = np.random.default_rng(0).uniform(0, 1, (3000, 2))
    res = run_protocol(pts, BOX, 2.0, 20, 6, 0.05, np.random.default_rng(1), keep_user_reports=True)
    long = res.reports.sort_values(["user", "round", "code"], kind="stable")
    compact = res.user_reports
    np.testing.assert_array_equal(compact.steps, np.rint(long["y"].to_numpy() / INDICATOR_STEP))
    np.testing.assert_array_equal(np.diff(compact.offsets), 4 * res.user_cell["fixed_round"].to_numpy())


@pytest.mark.parametrize("split_rule", ["all_children", "per_child", "pooled"])
def test_sldp_likelihood_is_the_brute_force_law_of_the_targets_reports(split_rule):
    """Every location of a fine lattice: 0 off the reported path and the revealed region, else the product of
    every report's pmf."""
    pts = np.random.default_rng(0).uniform(0, 1, (4000, 2))
    pts[:2000] *= 0.5
    res = run_protocol(
        pts, BOX, 2.0, 20, 6, 0.05, np.random.default_rng(1), split_rule=split_rule, keep_user_reports=True
    )
    compact, cells = res.user_reports, res.user_cell
    level, code, values = informed.sldp_pieces(
        cells["level"], cells["code"], compact.offsets, compact.steps, compact.scale, round(1 / INDICATOR_STEP)
    )
    at_region = np.diff(compact.offsets) // 4 == cells["level"].to_numpy() + 1
    # Alg. 2 as printed and the pooled rule stop users at a parent (a pooled region's box) only; the
    # per-child rule also stops users at a child region
    assert at_region.any() and (split_rule != "per_child" or (~at_region).any())
    fine = (np.arange(256) + 0.5) / 256
    lattice = np.column_stack([np.repeat(fine, 256), np.tile(fine, 256)])
    lattice_path = cell_codes(lattice, BOX, 6)
    unit = round(1 / INDICATOR_STEP)
    for u in [int(np.flatnonzero(at_region)[0]), int(np.flatnonzero(~at_region | (np.arange(4000) == 17))[0]), 17]:
        reports = res.reports[res.reports["user"] == u]
        brute = np.zeros(len(lattice))
        for _, r in reports.iterrows():
            child = lattice_path >> (2 * (6 - int(r["level"])))
            parent_ok = (child >> 2) == (int(r["code"]) >> 2)
            indicator = np.where(child == int(r["code"]), unit, 0)
            brute = np.where(
                parent_ok, brute + dlap_log_pmf(round(r["y"] / INDICATOR_STEP) - indicator, compact.scale), -np.inf
            )
        # the view holds the region too (SLDP reveals it): nothing outside it
        region = lattice_path >> (2 * (6 - int(cells["level"][u]))) == int(cells["code"][u])
        brute = np.where(region, brute, -np.inf)
        piece = lattice_path[:, None] >> (2 * (6 - level[u]))[None, :]
        in_piece = piece == code[u][None, :]
        mine = np.where(in_piece.any(axis=1), (in_piece * values[u]).sum(axis=1), -np.inf)
        assert np.array_equal(np.isfinite(mine), np.isfinite(brute))
        ok = np.isfinite(brute)
        np.testing.assert_allclose(mine[ok] - mine[ok][0], brute[ok] - brute[ok][0], atol=1e-9)


# ---- the invariant and its power ----------------------------------------------------------------


def _flat_stat(noise_eps, seed=3):
    depth, n = 4, 2000
    x, y, rng = _users(n, depth, seed)
    result = baselines.flat(
        UserPool.from_pixels(x, y, depth, "fixed", shard_size=800), n, noise_eps, rng, SecAgg(shard_size=800)
    )
    pixel = x * (1 << depth) + y
    shard = np.arange(n) // 800
    targets = np.arange(0, n, 10)
    log_lik = informed.heatmap_log_likelihood(
        result.server_rounds, [pixel[shard == j] for j in range(3)], shard[targets], pixel[targets], depth
    )
    return informed.max_log_ratio(log_lik), targets


def _check(stat, epsilon, targets, mechanism):
    informed.check(stat, epsilon, mechanism=mechanism, run="test", users=targets, relation="test relation")


def test_flat_heatmap_meets_the_replace_one_bound_exactly_and_a_2eps_fault_fails():
    """The record is replace-one 2ε.  Honest: every round term is ±ε, so the maximum 2ε is reached (the bound
    is tight) and never exceeded.  Planted fault: noise at 2ε recorded as ε: 4ε, the check fails."""
    eps = 1.0
    stat, targets = _flat_stat(eps)
    assert np.all(stat <= 2 * eps + 1e-12) and np.isclose(stat.max(), 2 * eps)
    _check(stat, 2 * eps, targets, "heatmap_flat")
    fault, targets = _flat_stat(2 * eps)
    with pytest.raises(informed.InvariantViolation, match="mechanism heatmap_flat_fault, run test, user"):
        _check(fault, 2 * eps, targets, "heatmap_flat_fault")


def test_adaptive_heatmap_meets_the_replace_one_bound():
    depth, n = 4, 3000
    x, y, rng = _users(n, depth, 8)
    result = run_adaptive(
        UserPool.from_pixels(x, y, depth, "fixed", shard_size=1000),
        AdaptiveParams(epsilon=2.0, users_per_round=n, sampling="fixed", secagg=SecAgg(shard_size=1000)),
        rng,
    )
    pixel = x * (1 << depth) + y
    shard = np.arange(n) // 1000
    targets = np.arange(0, n, 15)
    stat = informed.max_log_ratio(
        informed.heatmap_log_likelihood(
            result.server_rounds, [pixel[shard == j] for j in range(3)], shard[targets], pixel[targets], depth
        )
    )
    assert len(result.rounds) > 1
    _check(stat, 2 * 2.0, targets, "dp_heatmap")


@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
def test_privtree_meets_the_replace_one_bound_and_a_2eps_fault_fails(eps):
    """Record: replace-one 2ε for ε split evenly (tree, counts).  Planted fault: both halves' noise at 2×.
    Measured (5 seeds each, 2000 points): honest maxima 0.59-0.71 / 2.86 / 11.3 against bounds 1 / 4 / 16,
    faulty maxima 1.43 / 5.71 / 21.7-23.2, above the bound for every attacked user."""
    n = 2000
    for factor, honest in ((1.0, True), (2.0, False)):
        pts, leaves = _privtree_case(n, factor * eps / 2, 11)
        noise = leaves.attrs["noise"]
        paths = cell_codes(pts, BOX, noise["max_depth"])
        targets = np.arange(0, n, 20)
        stat = informed.max_log_ratio(
            informed.privtree_log_likelihood(
                leaves["level"], leaves["code"], leaves["count"], noise, paths, paths[targets]
            )
        )
        if honest:
            _check(stat, 2 * eps, targets, "privtree")
        else:
            with pytest.raises(informed.InvariantViolation, match="privtree_fault"):
                _check(stat, 2 * eps, targets, "privtree_fault")


def test_sldp_meets_its_region_bound_and_a_2eps_fault_fails():
    """Record (all_children): round_cost(ε) = ε for pairs inside the privacy region.  A user that stopped at
    its region after reporting on its children has ±ε/2 per child, so up to ε; at 2ε noise, up to 2ε."""
    pts = np.random.default_rng(0).uniform(0, 1, (6000, 2))
    pts[:3000] *= 0.5
    eps = 2.0
    stats = {}
    for noise_eps in (eps, 2 * eps):
        res = run_protocol(
            pts,
            BOX,
            noise_eps,
            20,
            6,
            0.05,
            np.random.default_rng(1),
            split_rule="all_children",
            keep_user_reports=True,
        )
        rep = res.user_reports
        _, _, values = informed.sldp_pieces(
            res.user_cell["level"], res.user_cell["code"], rep.offsets, rep.steps, rep.scale, round(1 / INDICATOR_STEP)
        )
        stats[noise_eps] = informed.max_log_ratio(values)
    users = np.arange(len(pts))
    _check(stats[eps], round_cost(eps), users, "sldp")
    assert np.isclose(stats[eps].max(), round_cost(eps))
    with pytest.raises(informed.InvariantViolation, match="sldp_fault"):
        _check(stats[2 * eps], round_cost(eps), users, "sldp_fault")


def test_the_check_names_mechanism_run_and_user_in_one_line():
    with pytest.raises(informed.InvariantViolation) as err:
        informed.check(
            np.array([0.5, 3.0, np.nan]),
            2.0,
            mechanism="m",
            run="gauss9/m/n~1000",
            users=np.array([4, 9, 12]),
            relation="replace one user",
        )
    message = str(err.value)
    assert "\n" not in message and "mechanism m, run gauss9/m/n~1000, user 9" in message
    assert "2 of 3 attacked users" in message  # a NaN statistic counts as a violation
    informed.check(np.array([2.0 + 1e-12]), 2.0, mechanism="m", run="r", users=np.array([0]), relation="r")


def test_the_informed_posterior_concentrates_as_epsilon_grows():
    """Flat heatmap: the posterior mass at the target's pixel under a uniform prior rises with ε; at ε = 0.1
    it is near the prior's 1/64 (small changes at small ε are the honest answer)."""
    depth, n = 3, 2000
    x, y, _ = _users(n, depth, 2)
    pixel = x * (1 << depth) + y
    shard = np.zeros(n, dtype=np.int64)
    targets = np.arange(0, n, 4)
    mass = []
    for eps in (0.1, 2.0, 8.0):
        result = baselines.flat(
            UserPool.from_pixels(x, y, depth, "fixed", shard_size=n),
            n,
            eps,
            np.random.default_rng(5),
            SecAgg(shard_size=n),
        )
        log_lik = informed.heatmap_log_likelihood(result.server_rounds, [pixel], shard[targets], pixel[targets], depth)
        post = np.exp(log_lik - log_lik.max(axis=1, keepdims=True))
        post /= post.sum(axis=1, keepdims=True)
        mass.append(post[np.arange(len(targets)), pixel[targets]].mean())
    assert mass[0] < 2 / 64 and mass[0] < mass[1] < mass[2] and mass[2] > 0.9
