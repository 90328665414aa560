"""Adaptive hierarchical histograms ([DDP-Heatmaps] Alg. 2), baselines, metrics, multi-location users."""

import dataclasses
import math

import numpy as np
import pytest

from locpriv.heatmaps import baselines, metrics, multi_location, polya
from locpriv.heatmaps.adaptive import AdaptiveParams, adapt_tree, dlap_std, epsilon_for_std, render, run_adaptive
from locpriv.heatmaps.aggregation import SecAgg, UserPool, noisy_histogram, survive
from locpriv.heatmaps.prefix_tree import PrefixTree
from locpriv.quadtree import interleave

Z = 4.0  # two-sided normal quantile for alpha ~ 6e-5 in the CLT tests


def blob_image(depth=6, block=(8, 16), per_pixel=2000, background=0):
    """Users packed in one square block (rows and columns block[0]:block[1]) of an empty map."""
    side = 1 << depth
    image = np.full((side, side), background, dtype=np.int64)
    image[block[0] : block[1], block[0] : block[1]] = per_pixel
    return image


def test_epsilon_std_round_trip():
    # Eq. 8 inverts Eq. 5 exactly (the reference's get_eps_from_two_std / get_std_from_eps)
    for eps in (1e-4, 0.01, 0.5, 3.0):
        assert epsilon_for_std(dlap_std(eps)) == pytest.approx(eps, rel=1e-9)


@pytest.mark.parametrize(
    "epsilon,calibration,expansion,max_rounds",
    [(1.0, 0.1, 1.0, 10), (0.1, 1.0, 0.0, 10), (5.0, 0.01, 3.0, 4), (1.0, 10.0, 1.0, 1)],
)
def test_budget_composition_never_exceeds_total(epsilon, calibration, expansion, max_rounds):
    params = AdaptiveParams(
        epsilon=epsilon,
        users_per_round=20_000,
        calibration=calibration,
        expansion=expansion,
        max_rounds=max_rounds,
        sampling="fixed",
        secagg=SecAgg(shard_size=1000),
    )
    result = run_adaptive(blob_image(), params, np.random.default_rng(3))
    spent = result.transcript["epsilon"].to_numpy()
    assert (spent > 0).all()
    assert spent.sum() <= epsilon * (1 + 1e-12)
    assert spent.sum() == pytest.approx(epsilon, rel=1e-12)  # the last round spends the remainder
    assert result.transcript["last"].to_numpy()[-1] and not result.transcript["last"].to_numpy()[:-1].any()
    # every round but the last spends exactly its Eq. 7-8 target, leaving >= beta times it
    early = result.transcript.iloc[:-1]
    assert np.allclose(early["epsilon"], early["epsilon_target"])
    left_after = epsilon - early["epsilon_cumulative"]
    assert (left_after >= expansion * early["epsilon"] - 1e-12).all()
    assert len(spent) <= max_rounds


def test_root_only_renders_uniformly_and_partial_nodes_spread_over_orphaned_area():
    depth = 3
    uniform = render(PrefixTree.root(depth), np.array([5.0]))
    assert np.allclose(uniform, 1 / 64) and uniform.sum() == pytest.approx(1.0)
    # root with one child (quadrant 0 = rows 0-3, columns 0-3): the root keeps the other 48 pixels
    tree = PrefixTree.from_nodes(depth, [0, 1], [0, 0])
    image = render(tree, np.array([48.0, 32.0]))  # reporting order: root, child
    assert image.sum() == pytest.approx(1.0)
    assert np.allclose(image[:4, :4], 32 / 16 / 80)
    mask = np.ones((8, 8), dtype=bool)
    mask[:4, :4] = False
    assert np.allclose(image[mask], 48 / 48 / 80)
    # negative and floored counts carry no mass
    assert np.allclose(render(tree, np.array([-3.0, 32.0]))[mask], 0)


def test_bincount_counts_equal_brute_force():
    depth = 2
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 4, 37), rng.integers(0, 4, 37)
    # root, children 0 and 3, grandchildren 0.1 and 0.2: root and child 0 are partial
    tree = PrefixTree.from_nodes(depth, [0, 1, 1, 2, 2], [0, 0, 3, 1, 2])
    levels, codes = tree.reporting_nodes()
    pool = UserPool.from_pixels(x, y, depth)
    survivors = survive(pool.draw(37, rng), depth, SecAgg(shard_size=10), rng)
    release = noisy_histogram(survivors, tree.encode, len(levels), 1.0, 1, rng)
    brute = np.zeros(len(levels), dtype=np.int64)
    for px, py in zip(x, y, strict=True):  # the deepest reporting node whose code prefixes the pixel's path
        path = int(interleave(np.array([px]), np.array([py]), depth)[0])
        deepest = max(
            (lvl, i)
            for i, (lvl, code) in enumerate(zip(levels, codes, strict=True))
            if path >> (2 * (depth - lvl)) == code
        )
        brute[deepest[1]] += 1
    assert np.array_equal(release.exact, brute)
    assert release.exact.sum() == 37


def test_adaptive_splits_into_dense_block_and_beats_flat():
    # 128 000 users on an 8 x 8 block of a 64 x 64 map; 100 000 sampled per sub-query
    image = blob_image()
    secagg = SecAgg(shard_size=10_000)
    params = AdaptiveParams(epsilon=1.0, users_per_round=100_000, sampling="fixed", secagg=secagg)
    result = run_adaptive(image, params, np.random.default_rng(1))
    levels, _codes = result.tree.reporting_nodes()
    side = 64
    x, y = np.divmod(np.arange(side * side), side)
    node = result.tree.encode(x, y).reshape(side, side)
    # every block pixel (~1560 sampled users) is far above the split threshold (noise std
    # sqrt(10) * dlap_std(eps) ~ 5 at the final eps), so the block is resolved to single pixels
    assert (levels[node[8:16, 8:16]] == 6).all()
    flat = baselines.flat(image, 100_000, 1.0, np.random.default_rng(2), secagg)
    assert metrics.mse(result.heatmap(), image) < metrics.mse(flat.heatmap, image)
    # empty regions are mostly collapsed: fails only if the tree refines most of the empty map
    # (noise-driven splits outside the block do happen; their counts render near 0)
    assert result.communication < flat.communication


def test_same_seed_same_run():
    params = AdaptiveParams(users_per_round=50_000, sampling="fixed", secagg=SecAgg(shard_size=5000, dropout_rate=0.1))
    runs = [run_adaptive(blob_image(), params, np.random.default_rng(11)) for _ in range(2)]
    assert runs[0].transcript.equals(runs[1].transcript)
    for a, b in zip(runs[0].rounds, runs[1].rounds, strict=True):
        assert np.array_equal(a.noisy, b.noisy) and np.array_equal(a.codes, b.codes)
    other = run_adaptive(blob_image(), params, np.random.default_rng(12))
    assert not np.array_equal(other.rounds[0].noisy, runs[0].rounds[0].noisy)


def test_disjoint_sampling_exhausts_the_pool():
    pool = UserPool(blob_image(per_pixel=10))  # 640 users
    rng = np.random.default_rng(0)
    first = pool.draw(600, rng)
    assert pool.size == 40 and (first <= blob_image(per_pixel=10).ravel()).all()
    with pytest.raises(ValueError, match="users_per_round"):
        pool.draw(100, rng)


def test_collapse_deletes_only_low_leaves():
    tree = PrefixTree.from_nodes(2, [0, 1, 1, 1, 1], [0, 0, 1, 2, 3])  # root split, 4 leaves
    new, n_split, n_collapsed = adapt_tree(tree, np.array([100.0, 0.0, 3.0, 50.0]), 10.0, 2.5, 2)
    assert (n_split, n_collapsed) == (2, 1)
    assert new.contains([1, 1, 1, 2, 2], [0, 2, 3, 0, 12]).all()
    assert not new.contains([1], [1]).any()


def test_sharded_noise_variance_matches_sum_of_shards():
    # Var[Polya(R,a) - Polya(R,a)] = 2 R a / (1 - a)^2 with R = sum_j k_j / n_dp_j
    rng = np.random.default_rng(5)
    survivors, n_dp = np.array([90, 100, 40]), np.array([90, 90, 40])
    eps, n = 0.5, 200_000
    a = math.exp(-eps)
    r_total = (survivors / n_dp).sum()
    var = 2 * r_total * a / (1 - a) ** 2
    draws = polya.sharded_aggregate_noise(survivors, n_dp, n, eps, 1, rng)
    # CLT on the sample variance: sd of s^2 ~ sqrt((mu4 - var^2) / n); mu4 of a discrete
    # Laplace difference is bounded by 25 var^2 here (kurtosis < 25), a conservative bound
    assert abs(draws.var() - var) < Z * math.sqrt(25 * var**2 / n)
    assert abs(draws.mean()) < Z * math.sqrt(var / n)


def test_dropout_below_plan_raises_achieved_epsilon():
    rng = np.random.default_rng(0)
    pool = UserPool(blob_image())
    secagg = SecAgg(shard_size=1000, dropout_rate=0.3, planned_dropout=0.1)  # ~700 survive, plan 900
    survivors = survive(pool.draw(5000, rng), pool.depth, secagg, rng)
    release = noisy_histogram(survivors, lambda x, y: np.zeros(len(x), dtype=np.int64), 1, 1.0, 1, rng)
    assert release.achieved_epsilon > 1.0
    planned = survive(pool.draw(5000, rng), pool.depth, SecAgg(shard_size=1000), rng)
    assert (
        noisy_histogram(planned, lambda x, y: np.zeros(len(x), dtype=np.int64), 1, 1.0, 1, rng).achieved_epsilon == 1.0
    )


def test_metrics_on_known_maps():
    truth = np.array([[1.0, 0.0], [0.0, 1.0]])
    estimate = np.array([[1.0, 1.0], [0.0, 2.0]])  # normalised: .25 .25 0 .5
    assert metrics.l1_elementwise(estimate, truth) == pytest.approx(0.25 + 0.25 + 0 + 0)
    assert metrics.mse(estimate, truth) == pytest.approx((0.25**2 * 2 + 0) / 4)
    assert metrics.l1_matrix_norm(estimate, truth) == pytest.approx(0.25)
    assert metrics.mse(truth, truth) == 0
    # the reference fills the truth's zeros with its smallest positive value and renormalises
    # (here .25 everywhere), so even the truth itself scores mean(|.25 - {.5, 0, 0, .5}| / .25) = 1
    assert metrics.mape(truth, truth) == pytest.approx(1.0)
    assert metrics.maape(truth, truth) == pytest.approx(math.atan(1.0))


def test_stochastic_rounding_is_unbiased():
    rng = np.random.default_rng(7)
    n = 200_000
    values = np.full(n, 3.3)
    rounded = multi_location.stochastic_round(values, rng)
    assert set(np.unique(rounded)) == {3, 4}
    # Bernoulli(0.3) increments: sd of the mean = sqrt(0.3 * 0.7 / n)
    assert abs(rounded.mean() - 3.3) < Z * math.sqrt(0.3 * 0.7 / n)


def test_normalised_users_have_unit_mass_and_bounded_l1():
    rng = np.random.default_rng(8)
    user = np.repeat(np.arange(500), 4)
    weight = rng.random(2000) + 0.01
    assert np.allclose(np.bincount(user, weights=multi_location.normalise_weights(user, weight)), 1)
    scale = 50.0
    contribution = multi_location.encode_users(user, weight, scale, rng)
    per_user = np.bincount(user, weights=contribution)
    assert (per_user <= multi_location.sensitivity(scale, 4)).all() and (per_user >= scale - 4).all()


def test_overflow_zero_for_wide_modulus_positive_for_narrow():
    rng = np.random.default_rng(9)
    user = np.repeat(np.arange(2000), 2)
    index = rng.integers(0, 8, 4000)
    scale = 100.0
    contribution = multi_location.encode_users(user, np.ones(4000), scale, rng)
    sums = multi_location.noisy_shard_sums(
        user, index, contribution, 8, 500, 1.0, multi_location.sensitivity(scale, 8), rng
    )
    # a shard of 500 users carries ~500 s = 50 000 over 8 entries, so some entry >= 6250 > 2^7
    assert multi_location.overflow_count(sums, 8) > 0
    # 2^40 exceeds any sum of 500 users of L1 <= s + d plus noise many orders over
    assert multi_location.overflow_count(sums, 40) == 0
    exact = np.bincount(index, weights=contribution, minlength=8) / scale
    wrapped = multi_location.modular_estimate(sums, 40, scale)
    # only the noise remains: 4 shards of discrete Laplace at eps / (s + d), divided by s.
    # Chernoff for a sum of 4 Laplace(b) (sd sqrt(8) b): P(|S| > 30 b) <= 2 (4/3)^4 e^-15 ~ 1e-6,
    # and 30 b = 10.6 sd, so 11 sd bounds all 8 entries at alpha < 1e-5
    noise_sd = math.sqrt(4) * dlap_std(1.0, multi_location.sensitivity(scale, 8)) / scale
    assert np.abs(wrapped - exact).max() < 11 * noise_sd
    assert multi_location.overflow_count(sums, 40) == 0 and not np.array_equal(
        multi_location.modular_estimate(sums, 8, scale), wrapped
    )  # narrow m wraps the estimate


def test_baselines_return_normalised_maps():
    image = blob_image(depth=4, block=(4, 8), per_pixel=1000)
    rng = np.random.default_rng(4)
    secagg = SecAgg(shard_size=1000)
    for result in (
        baselines.flat(image, 5000, 1.0, rng, secagg),
        baselines.hierarchical(image, 5000, 1.0, rng, secagg),
        baselines.private_spatial_decomposition(image, 5000, 1.0, rng, secagg),
        baselines.count_min(image, 5000, 1.0, rng, secagg, depth=4, width=64),
        baselines.adaptive_grid(image, 5000, 1.0, rng, secagg),
        baselines.sampling_floor(image, 5000, rng),
    ):
        assert result.heatmap.shape == (16, 16) and result.heatmap.sum() == pytest.approx(1.0)
        assert (result.heatmap >= 0).all() and result.communication >= 2


def test_authors_options_threshold_start_and_collapse_floor():
    paper = AdaptiveParams(secagg=SecAgg(shard_size=1000), threshold="paper", start="root")
    authors = AdaptiveParams(secagg=SecAgg(shard_size=1000), threshold="authors", start="children", collapse_floor=5.0)
    # Eq. 6 at 4 shards: paper sigma(max(eps_t, R_t+1)) = sigma(0.5), authors sigma(eps_t) = sigma(0.1)
    assert paper.split_threshold(4000, 0.1, 0.5) == pytest.approx(2 * 2 * dlap_std(0.5))
    assert authors.split_threshold(4000, 0.1, 0.5) == pytest.approx(2 * 2 * dlap_std(0.1))
    assert authors.split_threshold(4000, 0.5, 0.1) == paper.split_threshold(4000, 0.5, 0.1)
    # collapse at max(5, tau / 4)
    assert authors.collapse_threshold(8.0) == 5.0 and authors.collapse_threshold(40.0) == 10.0
    assert paper.collapse_threshold(8.0) == 2.0
    assert len(authors.start_tree(3, 0).levels) == 1  # no node may go below the root: start there
    for params, first in ((authors, 4), (paper, 1)):
        params = dataclasses.replace(params, users_per_round=20_000, sampling="fixed")
        result = run_adaptive(blob_image(), params, np.random.default_rng(3))
        assert result.transcript["vector_length"].iloc[0] == first == len(result.rounds[0].levels)
        assert result.epsilon_spent == pytest.approx(1.0)


@pytest.mark.parametrize(
    "field,value", [("threshold", "median"), ("start", "leaves"), ("combine", "mean"), ("collapse_floor", math.nan)]
)
def test_bad_option_names_its_field(field, value):
    with pytest.raises(ValueError, match=field):
        AdaptiveParams(**{field: value})
