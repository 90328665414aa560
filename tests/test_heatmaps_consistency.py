"""Least-squares combination of the adaptive algorithm's rounds over the prefix tree (``consistency``)."""

import math

import numpy as np
import pytest

from locpriv.heatmaps.adaptive import AdaptiveParams, dlap_std, run_adaptive
from locpriv.heatmaps.aggregation import SecAgg
from locpriv.heatmaps.consistency import least_squares
from locpriv.heatmaps.prefix_tree import PrefixTree

DEPTH = 2
CHILDREN = PrefixTree.from_nodes(DEPTH, [0, 1, 1, 1, 1], [0, 0, 1, 2, 3])
# child 0 split into its four children, child 3 deleted again: child 3's area reports to the root
SPLIT = PrefixTree.from_nodes(DEPTH, [0, 1, 1, 1, 2, 2, 2, 2], [0, 0, 1, 2, 0, 1, 2, 3])
TRUTH = np.arange(1, 17).reshape(4, 4) * 10  # users per pixel


def exact(tree, image=TRUTH):
    side = image.shape[0]
    x, y = np.divmod(np.arange(side * side), side)
    return tree.histogram(x, y, weights=image.ravel())


def discrete_laplace(epsilon, size, rng):
    a = math.exp(-epsilon)
    return rng.geometric(1 - a, size) - rng.geometric(1 - a, size)


def test_noiseless_rounds_give_the_exact_counts_and_a_consistent_tree():
    trees = [PrefixTree.root(DEPTH), CHILDREN, SPLIT]
    # round 0 summed twice as many users: its counts are scaled down to the last round's total
    noisy = [2 * exact(trees[0]), exact(trees[1]), exact(trees[2])]
    estimate = least_squares(trees, noisy, [4.0, 2.0, 1.0], [2 * TRUTH.sum(), TRUTH.sum(), TRUTH.sum()])
    union = estimate.tree
    assert len(union.levels) == 9  # root, its 4 children, child 0's 4 children
    assert np.allclose(estimate.counts, exact(union))
    assert np.allclose(estimate.on(SPLIT), exact(SPLIT)) and np.allclose(estimate.on(CHILDREN), exact(CHILDREN))
    # consistency: every node's total is the sum of its children's
    parent = np.flatnonzero(union.n_children() == 4)
    keys = {(lv, cd): i for i, (lv, cd) in enumerate(zip(union.levels, union.codes, strict=True))}
    for p in parent:
        kids = [keys[(union.levels[p] + 1, (union.codes[p] << 2) | j)] for j in range(4)]
        assert estimate.totals[p] == pytest.approx(estimate.totals[kids].sum())
    assert estimate.counts.sum() == pytest.approx(TRUTH.sum())


def test_orphaned_area_of_a_partial_node_is_estimated():
    # the start tree has a partial root (child 0 only); its orphaned area is its own unknown
    partial = PrefixTree.from_nodes(DEPTH, [0, 1], [0, 0])
    deeper = PrefixTree.from_nodes(DEPTH, [0, 1, 2, 2, 2, 2], [0, 0, 0, 1, 2, 3])
    estimate = least_squares([partial, deeper], [exact(partial), exact(deeper)], [1.0, 1.0], [TRUTH.sum()] * 2)
    assert np.allclose(estimate.counts, exact(estimate.tree))


def noisy_rounds(trees, epsilons, draws, seed):
    """Per round, ``draws`` independent noisy releases as columns (K_t, draws)."""
    rng = np.random.default_rng(seed)
    return [
        exact(t)[:, None] + discrete_laplace(e, (len(exact(t)), draws), rng)
        for t, e in zip(trees, epsilons, strict=True)
    ]


def test_least_squares_is_unbiased():
    trees, epsilons, draws = [CHILDREN, SPLIT], [0.3, 0.7], 4000
    variances = [dlap_std(e) ** 2 for e in epsilons]
    estimates = least_squares(trees, noisy_rounds(trees, epsilons, draws, 0), variances, [TRUTH.sum()] * 2)
    truth = exact(estimates.tree)
    # CLT per region, Bonferroni over its 7 regions: two-sided z = 4.5 gives alpha < 7 * 6.8e-6 = 5e-5
    se = estimates.counts.std(axis=1, ddof=1) / math.sqrt(draws)
    assert (np.abs(estimates.counts.mean(axis=1) - truth) < 4.5 * se).all()
    assert (se > 0).all()
    # the columns are solved as independent releases: column 0 alone gives the same estimate
    single = least_squares(
        trees, [y[:, 0] for y in noisy_rounds(trees, epsilons, draws, 0)], variances, [TRUTH.sum()] * 2
    )
    assert np.allclose(single.counts, estimates.counts[:, 0])


def test_two_equal_rounds_of_the_same_partition_halve_the_variance_and_more():
    # last round alone: variance s^2 per child; both rounds: s^2 / 2, and the known total
    # removes one of four degrees of freedom: expected MSE ratio 3/8
    trees, draws = [CHILDREN, CHILDREN], 4000
    noisy = noisy_rounds(trees, [0.5, 0.5], draws, 1)
    truth = exact(CHILDREN)[:, None]
    combined = least_squares(trees, noisy, [dlap_std(0.5) ** 2] * 2, [TRUTH.sum()] * 2).counts
    ratio = np.mean(np.square(combined - truth)) / np.mean(np.square(noisy[-1] - truth))
    # 16 000 squared discrete-Laplace errors (kurtosis ~6): each mean has relative sd ~ sqrt(5 / 16000) = 0.018,
    # so the ratio's sd is < 0.015 around 0.375; the bounds sit > 5 sd away (alpha < 1e-6), and the
    # upper one fails if the combination only matched the last round (ratio 1) or merely averaged (1/2)
    assert 0.3 < ratio < 0.45


def test_adaptive_run_combines_its_rounds():
    image = np.zeros((64, 64), dtype=np.int64)
    image[8:24, 8:24] = 400
    params = AdaptiveParams(
        users_per_round=50_000, sampling="fixed", secagg=SecAgg(shard_size=5000), combine="least_squares"
    )
    result = run_adaptive(image, params, np.random.default_rng(0))
    estimate = result.combined()
    assert estimate.counts.sum() == pytest.approx(50_000)
    heatmap = result.heatmap()
    assert heatmap.sum() == pytest.approx(1.0) and (heatmap >= 0).all()
    # every round measured: the union contains every round's tree
    for release in result.rounds:
        assert estimate.tree.contains(release.tree.levels, release.tree.codes).all()
    assert release.noise_variance == pytest.approx(10 * dlap_std(result.transcript["epsilon"].iloc[-1]) ** 2)


def test_mismatched_rounds_are_refused():
    with pytest.raises(ValueError, match="one tree, count vector"):
        least_squares([CHILDREN], [exact(CHILDREN)], [1.0, 2.0], [1])
    with pytest.raises(ValueError, match="noise variance > 0"):
        least_squares([CHILDREN], [exact(CHILDREN)], [0.0], [1])
