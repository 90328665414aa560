"""Adaptive hierarchical histograms ([DDP-Heatmaps] §5.2–5.5, Alg. 2) at population scale.

Each sub-query t: sample n users (``aggregation.UserPool``), each survivor sends
a one-hot over the current prefix tree's reporting nodes (K_t entries,
``PrefixTree.reporting_nodes``), the server gets the distributed discrete-Laplace
sum (``aggregation.noisy_histogram``), then splits and collapses nodes (§5.3) and
picks the next sub-query's budget (§5.4).

Formulas (the PDF extraction lost them; reconstructed from the text and the
authors' reference code google-research/federated analytics/location_heatmaps
and ebagdasa/location-heatmaps, read, not copied):

* Eq. 5, discrete-Laplace std at budget ε (sensitivity Δ = 1):
  σ(ε) = sqrt(2 a) / (1 − a), a = exp(−ε/Δ)  (reference ``get_std_from_eps``).
* Eq. 7, target noise std of one shard: σ̂_t = (c/2) (n / K_t) / sqrt(⌈n/S⌉).
  The reference passes ``c * sqrt(S/n) * n / K`` to ``get_eps_from_two_std``, i.e.
  it targets *two* standard deviations, hence c/2; sqrt(S/n) (we use the exact
  shard count ⌈n/S⌉) undoes the variance growth of summing ⌈n/S⌉ shards, so the
  total noise std is c/2 times the mean count n/K_t per cell.
* Eq. 8, ε̂_t = −Δ log r with r = ((v + 1) − sqrt(2 v + 1)) / v, v = σ̂_t², the
  inverse of Eq. 5 (reference ``get_eps_from_two_std``).
* Eq. 9, with R_t the budget left before sub-query t: ε_t = ε̂_t if
  R_t ≥ (1 + β) ε̂_t, else ε_t = R_t and t is the last sub-query.  The reference
  spends the remainder when ``remaining < 2 * eps``, i.e. β = 1 (our default).
  Also last: t = max_rounds − 1, or the previous split changed nothing (the
  partition is final, so the rest of the budget measures it).
* Eq. 6, split threshold τ_t = k sqrt(⌈n/S⌉) σ(max(ε_t, R_{t+1})): the total
  noise std over the shards at the smallest noise any later sub-query can have
  (reference ``threshold_func = 2 / sqrt(S/n) * get_std_from_eps(max(eps,
  remaining))``); k = 2 ("k = 2 standard deviations", §5.3).  A reporting node
  whose noisy count exceeds τ_t gets its missing children (a leaf splits into 4).
* Collapse (§5.3): a leaf (no children, not the root) whose noisy count is
  <= κ_t = f τ_t is deleted, so its users report to its parent next time;
  f = 1/4 from the reference runs (``collapse_func = max(·, 1/4 * threshold)``).
  Deviation: a partial node with a low count is kept, since PrefixTree keeps every
  node's parent (the reference can orphan grandchildren); its orphaned area keeps
  reporting to it.

Calibration c default 1/10: the reference runner (``c = 1/10``); the paper's
"typically c = ..." is lost in the extraction.

Options (``AdaptiveParams``): ``threshold`` "paper" is Eq. 6 above, "authors" the
reference's main-result rule τ_t = k sqrt(⌈n/S⌉) σ(ε_t) (a larger τ, since
ε_t <= max(ε_t, R_{t+1})); ``start`` "root" measures the root alone first,
"children" its four children (the reference); ``collapse_floor`` F makes
κ_t = max(F, f τ_t) (the reference: F = 5); ``combine`` "last" renders the last
sub-query's counts, "least_squares" every sub-query's, combined over the tree
(``consistency``; post-processing, so the guarantee is unchanged); ``render``
"uniform" spreads each cell's count evenly over it, "smooth" lets the density vary
inside the cell while keeping its count (``render.smooth``; post-processing too).

Defaults of the options, by measurement (``perf/bench_heatmaps.py --combination``,
docs/results/heatmaps_combination.md: NYT Manhattan and the study's synthetic
mixture at 1024 x 1024, 10^5 and 10^6 users per sub-query, ε = 1, 3 repetitions):
the MSE differs by at most 0.3 % between the threshold rules (one to two
repetition standard deviations), while Eq. 6 as printed, started from the root,
sends 6 % (10^5) and 10 % (10^6) more integers per user on Manhattan and 1–2 % more
on the mixture; lowering k under Eq. 6 adds integers without lowering the MSE.
So "authors" is the default threshold.  "children" is the
default start since the root's count is n, which the server already knows: that
round spends budget and an integer to learn nothing.  The floor F = 5 changed no
run (same seeds: τ/4 > 5 at 10^6 users, no leaf count between τ/4 and 5 at 10^5),
so the default stays 0.  "least_squares" lowers the MSE in every measured setting
at the same ε and communication (0.15 % on Manhattan, 0.4–0.5 % on the mixture at
10^5, 1.4 % at 10^6), so it is the default.  Rendering the *true* counts on the
same final partitions scores only 1.5–1.8 % (Manhattan), 4 % and 11 % (mixture)
below the private maps: the error left at the true counts is the uniform spread
within each cell, which no estimate of the cells' counts can remove.  ``render``
"smooth" removes part of it at the same ε and communication: with least squares,
4.1–4.8 % lower MSE than the last round's uniform map on Manhattan and 69–87 % on
the mixture, in every run, so it is the default.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .aggregation import SecAgg, ShardedRound, UserPool, noisy_histogram, survive
from .prefix_tree import PrefixTree
from .render import RENDERS, smooth
from .render import uniform as render  # ``render``: this module's name for it since Alg. 2

if TYPE_CHECKING:  # scipy.sparse: imported at run time only by the runs that combine
    from . import consistency

OPTIONS = {
    "threshold": ("paper", "authors"),
    "start": ("root", "children"),
    "combine": ("last", "least_squares"),
    "render": RENDERS,
}


def dlap_std(epsilon: float, sensitivity: float = 1.0) -> float:
    """Eq. 5: std of the discrete Laplace law P(z) ∝ a^|z|, a = exp(−ε/Δ)."""
    a = math.exp(-epsilon / sensitivity)
    return math.sqrt(2 * a) / (1 - a)


def epsilon_for_std(sigma: float, sensitivity: float = 1.0) -> float:
    """Eq. 8: the ε whose discrete Laplace noise has standard deviation sigma."""
    if not sigma > 0:
        raise ValueError(f"target noise std must be > 0, got {sigma}")
    v = sigma * sigma
    r = ((v + 1) - math.sqrt(2 * v + 1)) / v
    return -sensitivity * math.log(r)


@dataclass(frozen=True)
class AdaptiveParams:
    epsilon: float = 1.0  # total per-user budget (paper §6: ε = 1)
    users_per_round: int = 1_000_000  # n per sub-query (paper Table 1 uses up to 10^6)
    calibration: float = 0.1  # c of Eq. 7 (reference runner)
    k_sigma: float = 2.0  # k of Eq. 6 (§5.3)
    expansion: float = 1.0  # β of Eq. 9 (reference: remaining < 2 eps)
    collapse_fraction: float = 0.25  # κ = f τ (reference collapse_func)
    max_rounds: int = 10  # reference max_levels = 10
    max_depth: int | None = None  # finest level nodes may reach; None = image depth
    # every sub-query spends at least this (0: no floor); the fixed-work share sampler's delta needs a
    # public lower bound on epsilon_t (polya.fixed_work_delta), so the timing-safe mode sets one
    min_round_epsilon: float = 0.0
    sampling: str = "disjoint"
    secagg: SecAgg = field(default_factory=SecAgg)
    # options (module doc, "Defaults of the options")
    threshold: str = "authors"  # Eq. 6 noise level: paper σ(max(ε_t, R_{t+1})) | authors σ(ε_t)
    start: str = "children"  # first sub-query's tree: root | children (the root's four children)
    collapse_floor: float = 0.0  # κ_t = max(floor, f τ_t); the reference uses 5
    combine: str = "least_squares"  # map from: last (the last sub-query) | least_squares (every sub-query)
    render: str = "smooth"  # counts to pixels: uniform within each cell | smooth (render.smooth)

    def __post_init__(self):
        for name in ("epsilon", "calibration", "k_sigma"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value}")
        if not 0 <= self.min_round_epsilon <= self.epsilon:
            raise ValueError(f"min_round_epsilon must be in [0, epsilon], got {self.min_round_epsilon}")
        if not self.expansion >= 0:
            raise ValueError(f"expansion must be >= 0, got {self.expansion}")
        if not 0 <= self.collapse_fraction < 1:
            raise ValueError(f"collapse_fraction must be in [0, 1), got {self.collapse_fraction}")
        if self.users_per_round < 1:
            raise ValueError(f"users_per_round must be >= 1, got {self.users_per_round}")
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {self.max_rounds}")
        if not math.isfinite(self.collapse_floor):
            raise ValueError(f"collapse_floor must be a finite number (<= 0: no floor), got {self.collapse_floor}")
        for name, choices in OPTIONS.items():
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {getattr(self, name)!r}")

    def target_epsilon(self, n_users: int, n_cells: int) -> float:
        """Eqs. 7–8: ε̂ for a sub-query of n users over a vector of n_cells."""
        shards = self.secagg.n_shards(n_users)
        sigma = self.calibration / 2 * n_users / n_cells / math.sqrt(shards)
        return epsilon_for_std(sigma)

    def split_threshold(self, n_users: int, epsilon_round: float, epsilon_left: float) -> float:
        """Eq. 6: τ = k sqrt(#shards) σ(max(ε_t, R_{t+1})), or σ(ε_t) with ``threshold="authors"``."""
        shards = self.secagg.n_shards(n_users)
        level = epsilon_round if self.threshold == "authors" else max(epsilon_round, epsilon_left)
        return self.k_sigma * math.sqrt(shards) * dlap_std(level)

    def collapse_threshold(self, split_at: float) -> float:
        """κ_t = max(floor, f τ_t) (§5.3)."""
        return max(self.collapse_floor, self.collapse_fraction * split_at)

    def start_tree(self, depth: int, max_depth: int) -> PrefixTree:
        """The first sub-query's tree; the root alone when no node may go below it (max_depth 0)."""
        if self.start == "root" or max_depth == 0:
            return PrefixTree.root(depth)
        return PrefixTree.from_nodes(depth, [0, 1, 1, 1, 1], [0, 0, 1, 2, 3])


@dataclass(frozen=True)
class RoundRelease:
    """What the server saw in one sub-query: noisy sums on the tree's reporting nodes."""

    levels: np.ndarray
    codes: np.ndarray
    noisy: np.ndarray
    tree: PrefixTree
    noise_variance: float  # of each entry: the discrete-Laplace variance summed over the shards
    n_reported: int  # users summed (survivors; public to the server)
    server: ShardedRound | None = None  # fixed shards: each shard's noisy sum (what the server learns)


@dataclass
class AdaptiveResult:
    tree: PrefixTree  # the partition measured by the last sub-query
    steps: list[dict]  # one row of ``transcript`` per sub-query
    rounds: list[RoundRelease]
    threshold: float  # τ of the last sub-query
    protocol_transcript: pd.DataFrame | None = None  # secure mode: the server's received messages, per round
    combine: str = "last"  # how ``heatmap`` reads the rounds (AdaptiveParams.combine)
    render: str = "uniform"  # how ``heatmap`` spreads counts over pixels (AdaptiveParams.render)

    @functools.cached_property
    def transcript(self) -> pd.DataFrame:
        """One row per sub-query: its ε, threshold, users, vector length, splits and collapses."""
        return pd.DataFrame(self.steps)

    def _total(self, column: str) -> float:
        """The column's sum as ``transcript[column].sum()`` gives it (NaN skipped; the same numpy sum, so the
        same bits), without building the table: the audit reads it from thousands of runs."""
        return float(np.nansum(np.array([step[column] for step in self.steps], dtype=float)))

    @property
    def epsilon_spent(self) -> float:
        """Basic composition over sub-queries, the paper's guarantee (§5.5)."""
        return self._total("epsilon")

    @property
    def epsilon_achieved(self) -> float:
        """Σ_t achieved ε_t under the realised dropouts (exact or a valid upper bound per round)."""
        return self._total("achieved_epsilon")

    @property
    def server_rounds(self) -> list[ShardedRound]:
        """Every sub-query's shard sums on its public tree (fixed shards only, ``UserPool.from_pixels``)."""
        if any(r.server is None for r in self.rounds):
            raise ValueError("shard sums are kept only with fixed shards (UserPool.from_pixels(..., shard_size=S))")
        return [r.server for r in self.rounds]

    @property
    def communication(self) -> int:
        """Integers one user would send answering every sub-query: Σ_t K_t (paper Table 1)."""
        return int(self.transcript["vector_length"].sum())

    def heatmap(self, floor: float = 0.0) -> np.ndarray:
        """Normalised map on the last sub-query's partition; counts <= floor count as 0.

        Counts: the last sub-query's (``combine="last"``) or every sub-query's
        combined by ``consistency.least_squares`` (``"least_squares"``); spread
        uniformly over each cell (``render="uniform"``, ``render.uniform``) or
        smoothly with each cell's count kept (``"smooth"``, ``render.smooth``).
        The reference zeroes counts below the split threshold when rebuilding
        (``rebuild_from_vector(..., split_threshold)``); pass ``floor=self.threshold``
        for that, the default only drops negative counts.
        """
        last = self.rounds[-1]
        counts = last.noisy if self.combine == "last" else self.combined().on(last.tree)
        return (smooth if self.render == "smooth" else render)(last.tree, counts, floor)

    def combined(self) -> consistency.TreeEstimate:
        """Every sub-query's counts combined over the union of the rounds' trees (post-processing)."""
        from . import consistency  # scipy.sparse: imported only by the runs that combine

        return consistency.least_squares(
            [r.tree for r in self.rounds],
            [r.noisy for r in self.rounds],
            [r.noise_variance for r in self.rounds],
            [r.n_reported for r in self.rounds],
        )


def adapt_tree(
    tree: PrefixTree, noisy: np.ndarray, split_at: float, collapse_at: float, max_depth: int
) -> tuple[PrefixTree, int, int]:
    """§5.3: add the missing children of nodes above split_at, delete leaves at or below collapse_at.

    Returns the new tree, the number of nodes that gained children and the number deleted.
    """
    n_children = tree.n_children()
    reporting = n_children < 4
    levels, codes = tree.levels[reporting], tree.codes[reporting]
    split = (noisy > split_at) & (levels < max_depth)
    collapse = (noisy <= collapse_at) & (n_children[reporting] == 0) & (levels > 0)
    grows = split & (n_children[reporting] < 4)
    keep = np.ones(len(tree.levels), dtype=bool)
    keep[np.flatnonzero(reporting)[collapse]] = False
    child_levels = np.repeat(levels[split] + 1, 4)
    child_codes = (np.repeat(codes[split], 4) << 2) | np.tile(np.arange(4), int(split.sum()))
    nodes = np.unique(
        np.stack(
            [np.concatenate([tree.levels[keep], child_levels]), np.concatenate([tree.codes[keep], child_codes])], axis=1
        ),
        axis=0,
    )
    return PrefixTree.from_nodes(tree.depth, nodes[:, 0], nodes[:, 1]), int(grows.sum()), int(collapse.sum())


def run_adaptive(
    population, params: AdaptiveParams, rng: np.random.Generator, start: PrefixTree | None = None
) -> AdaptiveResult:
    """Alg. 2.  ``population``: 2^D x 2^D user-count image or a ``UserPool``.

    ``start`` is an optional initial partition (§7 "prior information"); default
    ``params.start_tree``: the root alone or its four children.
    """
    pool = population if isinstance(population, UserPool) else UserPool(population, params.sampling)
    depth = pool.depth
    max_depth = depth if params.max_depth is None else params.max_depth
    if not 0 <= max_depth <= depth:
        raise ValueError(f"max_depth must be in [0, {depth}] (the image depth), got {max_depth}")
    tree = params.start_tree(depth, max_depth) if start is None else start
    if tree.depth != depth:
        raise ValueError(f"start tree depth {tree.depth} differs from the population image depth {depth}")
    n = params.users_per_round
    spent, changed = 0.0, True
    rows, rounds, logs = [], [], []
    for t in range(params.max_rounds):
        levels, codes = tree.reporting_nodes()
        left = params.epsilon - spent
        target = max(params.target_epsilon(n, len(levels)), params.min_round_epsilon)
        # with a floor, a round leaves at least the floor for the last one (so every epsilon_t >= floor)
        last = (
            t == params.max_rounds - 1
            or not changed
            or left < (1 + params.expansion) * target
            or left - target < params.min_round_epsilon
        )
        eps_t = left if last else target
        spent = params.epsilon if last else spent + eps_t
        survivors = survive(pool.draw(n, rng), depth, params.secagg, rng, pool.shard_images)
        release = noisy_histogram(survivors, tree.encode, len(levels), eps_t, 1, rng, secagg=params.secagg)
        if release.protocol_transcript is not None:
            logs.append(release.protocol_transcript.assign(round=t))
        tau = params.split_threshold(n, eps_t, params.epsilon - spent)
        shares = float((survivors.shard_survivors / survivors.shard_n_dp).sum())  # Σ_j k_j / n_dp_j (polya)
        rounds.append(
            RoundRelease(
                levels,
                codes,
                release.noisy,
                tree,
                shares * dlap_std(eps_t) ** 2,
                survivors.n_survivors,
                release.sharded_round(levels, codes),
            )
        )
        row = dict(
            round=t,
            epsilon=eps_t,
            epsilon_target=target,
            epsilon_cumulative=spent,
            achieved_epsilon=release.achieved_epsilon,
            n_users=n,
            n_survivors=survivors.n_survivors,
            vector_length=len(levels),
            n_nodes=len(tree.levels),
            threshold=tau,
            n_split=0,
            n_collapsed=0,
            last=last,
        )
        if not last:
            tree, row["n_split"], row["n_collapsed"] = adapt_tree(
                tree, release.noisy, tau, params.collapse_threshold(tau), max_depth
            )
            changed = row["n_split"] + row["n_collapsed"] > 0
        rows.append(row)
        if last:
            break
    return AdaptiveResult(
        rounds[-1].tree,
        rows,
        rounds,
        tau,
        pd.concat(logs, ignore_index=True) if logs else None,
        params.combine,
        params.render,
    )
