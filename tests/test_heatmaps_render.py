"""Rendering released counts as a map: uniform within each cell, or smooth with each cell's count kept."""

import inspect

import numpy as np
import pytest

from locpriv import mechanisms
from locpriv.config import ConfigError
from locpriv.heatmaps import metrics
from locpriv.heatmaps.adaptive import AdaptiveParams, run_adaptive
from locpriv.heatmaps.aggregation import SecAgg
from locpriv.heatmaps.consistency import least_squares
from locpriv.heatmaps.prefix_tree import PrefixTree
from locpriv.heatmaps.render import regions, smooth, uniform

DEPTH = 6
SIDE = 1 << DEPTH


def full_tree(level: int) -> PrefixTree:
    """Every node down to ``level``: 4^level square leaves."""
    levels = np.concatenate([np.full(4**lv, lv) for lv in range(level + 1)])
    codes = np.concatenate([np.arange(4**lv) for lv in range(level + 1)])
    return PrefixTree.from_nodes(DEPTH, levels, codes)


def mixed_tree() -> PrefixTree:
    """Leaves at levels 1-4 and partial nodes (1-3 children), whose orphaned areas are L-shaped regions."""
    nodes = {(0, 0)} | {(1, c) for c in range(4)} | {(2, c) for c in range(4)} | {(2, 13)}
    nodes |= {(3, c) for c in (0, 1, 2)} | {(4, c) for c in range(4)}
    return PrefixTree.from_nodes(DEPTH, *np.array(sorted(nodes)).T)


def smooth_density() -> np.ndarray:
    """Half uniform, half a Gaussian bump of sd 10 pixels: every pixel holds >= 0.5 / 64^2 of the mass."""
    grid = np.arange(SIDE) + 0.5
    bump = np.exp(-0.5 * (((grid - 22) / 10)[:, None] ** 2 + ((grid - 40) / 10)[None, :] ** 2))
    density = 0.5 / SIDE**2 + 0.5 * bump / bump.sum()
    return density / density.sum()


def region_sums(tree, image):
    region, _, _ = regions(tree)
    return np.bincount(region, weights=image.ravel(), minlength=int((tree.n_children() < 4).sum()))


def test_smooth_keeps_every_regions_count_and_stays_non_negative():
    tree = mixed_tree()
    n = int((tree.n_children() < 4).sum())
    counts = np.random.default_rng(0).normal(100, 80, n)  # some negative, as least squares gives
    counts[:2] = [-5.0, 0.0]
    image = smooth(tree, counts)
    kept = np.clip(counts, 0, None)
    assert (image >= 0).all() and image.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(region_sums(tree, image), kept / kept.sum(), rtol=1e-9, atol=1e-15)
    # power: the map is not the uniform one (which keeps the counts too)
    assert np.abs(image - uniform(tree, counts)).max() > 0.1 * image.max()


def test_floor_and_empty_counts_as_the_uniform_renderer():
    tree = full_tree(2)
    counts = np.arange(16.0) - 3
    image = smooth(tree, counts, floor=4.0)
    assert (region_sums(tree, image)[counts <= 4] == 0).all()
    np.testing.assert_array_equal(smooth(tree, -np.ones(16)), np.full((SIDE, SIDE), 1 / SIDE**2))
    # a single region (the root) has nothing to smooth against: the uniform map
    np.testing.assert_allclose(smooth(PrefixTree.root(DEPTH), [7.0]), uniform(PrefixTree.root(DEPTH), [7.0]))
    with pytest.raises(ValueError, match="one entry per reporting node"):
        smooth(tree, np.ones(3))


def test_smooth_beats_uniform_on_a_smooth_density():
    """Power check on 8 x 8-pixel leaves of a smooth density.

    Noiseless (counts = N p): no randomness; the uniform map's error is the within-cell
    variation of the density, which the smooth map must cut by more than 96 % (it cuts
    99.3 %; a renderer that spreads counts uniformly fails at once).

    Sampled (counts ~ Multinomial(N, p), fixed seed): the uniform map of *any* counts c is
    at least as far from the truth as that of the exact ones, MSE(U(c)) = MSE(U(p)) +
    |U(c) − U(p)|² / P (U(c) − U(p) is constant in each cell, truth − U(p) sums to 0 in
    each), so the assertion MSE(S(c)) < MSE(U(p)) / 10 implies S(c) cuts the error of
    U(c) by 90 %.  Bound: every cell holds p >= 0.5 / 64, so N p >= 7.8e4 and each count
    is within 5 binomial sd (1.8 %) of N p except with probability < 64 · 6e-7 < 1e-4 (α);
    the last step of ``smooth`` scales each cell by its count, so such counts move the
    noiseless map by <= 1.8 % per pixel if the shape inside a cell stays put: a squared
    error <= 0.018² × mean(truth²) = 0.012 MSE(U(p)) (mean(truth²) is 37.6 MSE(U(p)) here),
    and by the triangle inequality MSE(S(c)) <= (sqrt(0.04) + sqrt(0.012))² MSE(U(p)) =
    0.096 MSE(U(p)) given the first assertion (ratio < 0.04).  The shape's own dependence
    on the counts is not bounded (an argument, not a proof); the measured ratio is 0.0072
    noiseless and 0.0074–0.0076 on six seeds.
    """
    truth = smooth_density()
    tree = full_tree(3)
    p = region_sums(tree, truth)
    n = 10_000_000
    ratio = metrics.mse(smooth(tree, n * p), truth) / metrics.mse(uniform(tree, n * p), truth)
    assert ratio < 0.04
    counts = np.random.default_rng(1).multinomial(n, p).astype(float)
    oracle = metrics.mse(uniform(tree, n * p), truth)
    assert metrics.mse(uniform(tree, counts), truth) >= oracle
    assert metrics.mse(smooth(tree, counts), truth) < oracle / 10


def test_smooth_reads_only_the_release():
    """The renderer's inputs are the tree and the counts; the run's map is rebuilt from the released rounds alone."""
    assert list(inspect.signature(smooth).parameters) == ["tree", "counts", "floor", "width", "iterations"]
    image = np.zeros((SIDE, SIDE), dtype=np.int64)
    image[8:40, 16:56] = 300
    params = AdaptiveParams(users_per_round=40_000, sampling="fixed", secagg=SecAgg(shard_size=4000))
    assert params.render == "smooth" and params.combine == "least_squares"
    result = run_adaptive(image, params, np.random.default_rng(0))
    published = result.heatmap()
    image[:] = 0  # the population is gone; the map depends on the released sums only
    rounds = result.rounds
    counts = least_squares(
        [r.tree for r in rounds],
        [r.noisy for r in rounds],
        [r.noise_variance for r in rounds],
        [r.n_reported for r in rounds],
    ).on(rounds[-1].tree)
    np.testing.assert_array_equal(published, smooth(rounds[-1].tree, counts))
    np.testing.assert_array_equal(result.heatmap(), published)  # deterministic: no randomness enters


def test_render_option_of_dp_heatmap_and_the_study():
    cls = mechanisms.get("dp_heatmap")
    full = cls(epsilon=2.0)
    assert full.settings["render"] == "smooth" and "render" not in full.explicit_settings()
    assert cls(epsilon=2.0, render="uniform").explicit_settings()["render"] == "uniform"
    with pytest.raises(ValueError, match="render"):
        AdaptiveParams(render="spline")
    from locpriv.heatmaps.study import validate_config

    assert validate_config({})["adaptive"]["render"] == "smooth"
    with pytest.raises(ConfigError, match=r"adaptive\.render"):
        validate_config({"adaptive": {"render": "spline"}})
