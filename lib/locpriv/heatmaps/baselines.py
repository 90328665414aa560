"""Baselines of [DDP-Heatmaps] §5.1 and §6.2, all through the same simulated SecAgg sub-query.

Every private baseline samples n users from the population image, adds the
distributed discrete-Laplace noise of §4 (``aggregation.noisy_histogram``, Pólya
shares per shard, dropout as configured) and returns a normalised map plus its
communication: integers one user sends, summed over sub-queries.  ``flat`` and
``hierarchical`` also take a ``UserPool``; with fixed shards (the location DAG's,
``UserPool.from_pixels(..., shard_size=S)``) their result's ``server_rounds`` hold
each sub-query's shard sums, what the aggregation server learns.

* ``flat``: one-hot over the 4^D finest pixels, budget ε.
* ``hierarchical``: one one-hot per level l in ``levels`` (default 1..D; the root
  carries no spatial information), concatenated, budget ε / L each; the server
  keeps the level with the lowest MSE against the truth, as the paper's
  evaluation does ("we use the split that achieves the lowest MSE compared to the
  ground truth").
* ``private_spatial_decomposition`` (Cormode et al. 2012): the same complete
  quadtree with their geometric budget ε_l ∝ 2^(l/3) (Cormode §4.2: ε_i ∝
  2^((h−i)/3) for height i above the leaves, i.e. deeper levels get more), best
  level kept.  Their consistency post-processing is not applied.
* ``count_min``: every level's prefix inserted in one shared count-min sketch of
  ``depth`` x ``width`` (defaults 20 x 4000: the reference code's
  ``count_min={'depth': 20, 'width': 4000}``); a user adds 1 in each row for each
  level, so the L1 sensitivity is depth x L (§6.2: "we increase the sensitivity
  proportional to the sketch's depth").  Point queries take the row minimum; best
  level kept.  Hashes ((A key + B) mod p) mod width with p = 2^31 − 1 and public
  random A, B.
* ``adaptive_grid`` (Qardaji et al. 2013, AG): sub-query 1 on a uniform m1 x m1
  grid with αε, m1 = max(10, ⌈(1/4) sqrt(N ε / c)⌉); sub-query 2 splits each cell
  into m2 x m2 with m2 = ⌈sqrt(N' (1 − α) ε / c2)⌉, N' its noisy count, budget
  (1 − α)ε.  α = 1/2, c = 10, c2 = c/2 = 5 are Qardaji's recommended values (the
  paper: "following the guidelines").  Deviation: m1 and m2 are rounded to powers
  of two so the grids are quadtree levels (PrefixTree), and AG's constrained
  inference between the two levels is not applied.
* ``sampling_floor``: non-private; the best level of the plain sample's histogram
  (§6.2 "non-private baseline"), communication 2 (two coordinates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..quadtree import deinterleave, interleave
from . import metrics
from .adaptive import render
from .aggregation import SecAgg, ShardedRound, UserPool, noisy_histogram, survive
from .prefix_tree import PrefixTree

MERSENNE_31 = (1 << 31) - 1


@dataclass
class BaselineResult:
    """``epsilon``: planned budget; ``achieved_epsilon``: Σ over its sub-queries of the level the
    realised dropouts give (``aggregation.round_achieved_epsilon``), for the add/remove-one-user relation."""

    name: str
    heatmap: np.ndarray
    communication: int
    epsilon: float
    achieved_epsilon: float
    detail: dict = field(default_factory=dict)
    protocol_transcript: pd.DataFrame | None = None
    server_rounds: list[ShardedRound] = field(default_factory=list)  # fixed shards: what the server learns


def _transcripts(releases) -> pd.DataFrame | None:
    logs = [r.protocol_transcript.assign(round=t) for t, r in enumerate(releases) if r.protocol_transcript is not None]
    return pd.concat(logs, ignore_index=True) if logs else None


def render_level(level: int, counts: np.ndarray, depth: int) -> np.ndarray:
    """Normalised map from counts of the 4^level cells (indexed by code), spread uniformly."""
    x, y = deinterleave(np.arange(4**level), level)
    grid = np.zeros((1 << level, 1 << level))
    grid[x, y] = np.clip(counts, 0, None)
    scale = 1 << (depth - level)
    image = np.repeat(np.repeat(grid, scale, axis=0), scale, axis=1)
    total = image.sum()
    return image / total if total > 0 else np.full(image.shape, 1.0 / image.size)


def _level_encoder(level: int, depth: int):
    return lambda x, y: interleave(x, y, depth) >> (2 * (depth - level))


def _pool(population) -> UserPool:
    """A population image, or a ``UserPool`` as given (e.g. with fixed shards)."""
    return population if isinstance(population, UserPool) else UserPool(population)


def _sample(population, n_users: int, secagg: SecAgg, rng):
    pool = _pool(population)
    return survive(pool.draw(n_users, rng), pool.depth, secagg, rng, pool.shard_images)


def _level_round(release, level: int):
    """The release's shard sums on level ``level``'s 4^level cells (fixed shards only), as a list."""
    server = release.sharded_round(np.full(4**level, level), np.arange(4**level))
    return [] if server is None else [server]


def _best_level(estimates: dict[int, np.ndarray], depth: int, truth) -> tuple[int, np.ndarray]:
    maps = {level: render_level(level, counts, depth) for level, counts in estimates.items()}
    best = min(maps, key=lambda level: metrics.mse(maps[level], truth))
    return best, maps[best]


def flat(population, n_users: int, epsilon: float, rng, secagg: SecAgg = SecAgg()) -> BaselineResult:
    survivors = _sample(population, n_users, secagg, rng)
    depth = survivors.depth
    release = noisy_histogram(survivors, _level_encoder(depth, depth), 4**depth, epsilon, 1, rng, secagg=secagg)
    return BaselineResult(
        "flat",
        render_level(depth, release.noisy, depth),
        4**depth,
        epsilon,
        release.achieved_epsilon,
        protocol_transcript=_transcripts([release]),
        server_rounds=_level_round(release, depth),
    )


def _per_level(population, n_users, budgets: dict[int, float], rng, secagg, name) -> BaselineResult:
    truth = _image_of(population).copy()  # before the draw: a disjoint pool loses its sampled users
    survivors = _sample(population, n_users, secagg, rng)
    depth = survivors.depth
    releases = {
        level: noisy_histogram(survivors, _level_encoder(level, depth), 4**level, eps, 1, rng, secagg=secagg)
        for level, eps in budgets.items()
    }
    best, image = _best_level({level: r.noisy for level, r in releases.items()}, depth, truth)
    # the same users answer every level: their budgets (and achieved levels) compose
    return BaselineResult(
        name,
        image,
        sum(4**level for level in budgets),
        float(sum(budgets.values())),
        sum(r.achieved_epsilon for r in releases.values()),
        {"best_level": best},
        _transcripts(list(releases.values())),
        [server for level, r in releases.items() for server in _level_round(r, level)],
    )


def _image_of(population) -> np.ndarray:
    """The population image (of a pool: the users it still holds)."""
    if isinstance(population, UserPool):
        side = 1 << population.depth
        return population.remaining.reshape(side, side)
    return population


def _levels(population, levels):
    if levels is None:
        levels = range(1, int(np.shape(_image_of(population))[0]).bit_length())  # 1..D for a 2^D image
    levels = list(levels)
    if not levels:
        raise ValueError("levels must name at least one quadtree level")
    return levels


def hierarchical(
    population, n_users: int, epsilon: float, rng, secagg: SecAgg = SecAgg(), levels=None
) -> BaselineResult:
    levels = _levels(population, levels)
    return _per_level(
        population, n_users, {level: epsilon / len(levels) for level in levels}, rng, secagg, "hierarchical"
    )


def private_spatial_decomposition(
    population, n_users: int, epsilon: float, rng, secagg: SecAgg = SecAgg(), levels=None
) -> BaselineResult:
    levels = _levels(population, levels)
    weights = np.array([2.0 ** (level / 3) for level in levels])
    budgets = dict(zip(levels, epsilon * weights / weights.sum(), strict=True))
    return _per_level(population, n_users, budgets, rng, secagg, "psd")


def count_min(
    population,
    n_users: int,
    epsilon: float,
    rng,
    secagg: SecAgg = SecAgg(),
    levels=None,
    depth: int = 20,
    width: int = 4000,
) -> BaselineResult:
    levels = _levels(population, levels)
    if depth < 1 or width < 1:
        raise ValueError(f"count-min depth and width must be >= 1, got {depth} x {width}")
    a = rng.integers(1, MERSENNE_31, size=depth)
    b = rng.integers(0, MERSENNE_31, size=depth)
    rows = np.arange(depth)

    def cells(level, codes):  # (len(codes), depth) flat sketch indices of keys (level, code)
        key = (np.asarray(codes, dtype=np.int64) << 5) | level
        return rows * width + ((key[:, None] % MERSENNE_31 * a + b) % MERSENNE_31) % width

    survivors = _sample(population, n_users, secagg, rng)
    image_depth = survivors.depth

    def encode(x, y):
        path = interleave(x, y, image_depth)
        return np.concatenate([cells(level, path >> (2 * (image_depth - level))) for level in levels], axis=1)

    release = noisy_histogram(survivors, encode, depth * width, epsilon, depth * len(levels), rng, secagg=secagg)
    estimates = {level: release.noisy[cells(level, np.arange(4**level))].min(axis=1) for level in levels}
    best, image = _best_level(estimates, image_depth, population)
    return BaselineResult(
        "count_min",
        image,
        depth * width,
        epsilon,
        release.achieved_epsilon,
        {"best_level": best},
        _transcripts([release]),
    )


def _complete_tree(depth: int, base_level: int, extra: np.ndarray) -> PrefixTree:
    """All nodes down to base_level, plus a complete subtree of depth extra[c] under each base cell c."""
    levels = [np.full(4**level, level) for level in range(base_level + 1)]
    codes = [np.arange(4**level) for level in range(base_level + 1)]
    for j in range(1, int(extra.max(initial=0)) + 1):  # a loop over sub-levels, not cells
        cells = np.flatnonzero(extra >= j)
        sub = ((cells[:, None] << (2 * j)) | np.arange(4**j)).ravel()
        levels.append(np.full(len(sub), base_level + j))
        codes.append(sub)
    return PrefixTree.from_nodes(depth, np.concatenate(levels), np.concatenate(codes))


def adaptive_grid(
    population, n_users: int, epsilon: float, rng, secagg: SecAgg = SecAgg(), alpha: float = 0.5, c: float = 10.0
) -> BaselineResult:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    pool = UserPool(population)
    depth = pool.depth
    m1 = max(10, math.ceil(0.25 * math.sqrt(n_users * epsilon / c)))
    base = int(np.clip(round(math.log2(m1)), 1, depth))
    first = noisy_histogram(
        survive(pool.draw(n_users, rng), depth, secagg, rng),
        _level_encoder(base, depth),
        4**base,
        alpha * epsilon,
        1,
        rng,
        secagg=secagg,
    )
    m2 = np.ceil(np.sqrt(np.clip(first.noisy, 0, None) * (1 - alpha) * epsilon / (c / 2)))
    extra = np.clip(np.round(np.log2(np.maximum(m2, 1))), 0, depth - base).astype(np.int64)
    tree = _complete_tree(depth, base, extra)
    k = len(tree.reporting_nodes()[0])
    second = noisy_histogram(
        survive(pool.draw(n_users, rng), depth, secagg, rng),
        tree.encode,
        k,
        (1 - alpha) * epsilon,
        1,
        rng,
        secagg=secagg,
    )
    # basic composition, as the planned budget (the two sub-queries draw disjoint users)
    return BaselineResult(
        "adaptive_grid",
        render(tree, second.noisy),
        4**base + k,
        epsilon,
        first.achieved_epsilon + second.achieved_epsilon,
        {"first_level": base, "max_level": int(base + extra.max())},
        _transcripts([first, second]),
    )


def sampling_floor(population, n_users: int, rng) -> BaselineResult:
    """Non-private: plain counts of the sample, best quadtree level against the truth."""
    pool = UserPool(population)
    sample = pool.draw(n_users, rng)
    depth = pool.depth
    side = 1 << depth
    x, y = np.divmod(np.flatnonzero(sample), side)
    path = interleave(x, y, depth)
    weight = sample[sample > 0]
    estimates = {
        level: np.bincount(path >> (2 * (depth - level)), weights=weight, minlength=4**level)
        for level in range(depth + 1)
    }
    best, image = _best_level(estimates, depth, population)
    return BaselineResult("non_private", image, 2, math.inf, math.inf, {"best_level": best})
