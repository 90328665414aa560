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

Guarantee: basic composition, Σ_t ε_t <= ε per user (§5.5), pure DP when no
shard loses more users than planned; ``achieved_epsilon`` per round otherwise.
Neighbouring relation: add or remove one user's location (one-hot, Δ = 1); replacing
one user's location changes two entries, so it costs 2ε (n is public here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .aggregation import SecAgg, UserPool, noisy_histogram, survive
from .prefix_tree import PrefixTree


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
    epsilon: float = 1.0              # total per-user budget (paper §6: ε = 1)
    users_per_round: int = 1_000_000  # n per sub-query (paper Table 1 uses up to 10^6)
    calibration: float = 0.1          # c of Eq. 7 (reference runner)
    k_sigma: float = 2.0              # k of Eq. 6 (§5.3)
    expansion: float = 1.0            # β of Eq. 9 (reference: remaining < 2 eps)
    collapse_fraction: float = 0.25   # κ = f τ (reference collapse_func)
    max_rounds: int = 10              # reference max_levels = 10
    max_depth: int | None = None      # finest level nodes may reach; None = image depth
    sampling: str = "disjoint"
    secagg: SecAgg = field(default_factory=SecAgg)

    def __post_init__(self):
        for name in ("epsilon", "calibration", "k_sigma"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value}")
        if not self.expansion >= 0:
            raise ValueError(f"expansion must be >= 0, got {self.expansion}")
        if not 0 <= self.collapse_fraction < 1:
            raise ValueError(f"collapse_fraction must be in [0, 1), got {self.collapse_fraction}")
        if self.users_per_round < 1:
            raise ValueError(f"users_per_round must be >= 1, got {self.users_per_round}")
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {self.max_rounds}")

    def target_epsilon(self, n_users: int, n_cells: int) -> float:
        """Eqs. 7–8: ε̂ for a sub-query of n users over a vector of n_cells."""
        shards = self.secagg.n_shards(n_users)
        sigma = self.calibration / 2 * n_users / n_cells / math.sqrt(shards)
        return epsilon_for_std(sigma)

    def split_threshold(self, n_users: int, epsilon_round: float, epsilon_left: float) -> float:
        """Eq. 6: τ = k sqrt(#shards) σ(max(ε_t, R_{t+1}))."""
        shards = self.secagg.n_shards(n_users)
        return self.k_sigma * math.sqrt(shards) * dlap_std(max(epsilon_round, epsilon_left))


@dataclass(frozen=True)
class RoundRelease:
    """What the server saw in one sub-query: noisy sums on the tree's reporting nodes."""

    levels: np.ndarray
    codes: np.ndarray
    noisy: np.ndarray
    tree: PrefixTree


@dataclass
class AdaptiveResult:
    tree: PrefixTree                 # the partition measured by the last sub-query
    transcript: pd.DataFrame
    rounds: list[RoundRelease]
    threshold: float                 # τ of the last sub-query
    protocol_transcript: pd.DataFrame | None = None   # secure mode: the server's received messages, per round

    @property
    def epsilon_spent(self) -> float:
        """Basic composition over sub-queries, the paper's guarantee (§5.5)."""
        return float(self.transcript["epsilon"].sum())

    @property
    def epsilon_achieved(self) -> float:
        """Σ_t achieved ε_t under the realised dropouts (exact or a valid upper bound per round)."""
        return float(self.transcript["achieved_epsilon"].sum())

    @property
    def communication(self) -> int:
        """Integers one user would send answering every sub-query: Σ_t K_t (paper Table 1)."""
        return int(self.transcript["vector_length"].sum())

    def heatmap(self, floor: float = 0.0) -> np.ndarray:
        """Normalised map of the last sub-query; counts <= floor count as 0.

        The reference zeroes counts below the split threshold when rebuilding
        (``rebuild_from_vector(..., split_threshold)``); pass ``floor=self.threshold``
        for that, the default only drops negative counts.
        """
        last = self.rounds[-1]
        return render(last.tree, last.noisy, floor)


def render(tree: PrefixTree, counts: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Normalised 2^D x 2^D map from counts on ``tree.reporting_nodes()``.

    Each node's count (0 if <= floor or negative) is spread uniformly over the
    pixels that report to it: the whole cell for a leaf, the orphaned area of its
    missing children for a partial node (§6.1).  An all-zero result is the
    uniform map (no information).
    """
    counts = np.asarray(counts, dtype=float)
    n_children = tree.n_children()
    reporting = n_children < 4
    if counts.shape != (int(reporting.sum()),):
        raise ValueError(f"counts must have one entry per reporting node ({int(reporting.sum())}), "
                         f"got shape {counts.shape}")
    levels = tree.levels[reporting]
    area = 4.0 ** (tree.depth - levels) * (4 - n_children[reporting]) / 4
    density = np.where(counts > max(floor, 0.0), counts, 0.0) / area
    side = 1 << tree.depth
    x, y = np.divmod(np.arange(side * side), side)
    image = density[tree.encode(x, y)].reshape(side, side)
    total = image.sum()
    return image / total if total > 0 else np.full((side, side), 1.0 / (side * side))


def adapt_tree(tree: PrefixTree, noisy: np.ndarray, split_at: float, collapse_at: float,
               max_depth: int) -> tuple[PrefixTree, int, int]:
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
    nodes = np.unique(np.stack([np.concatenate([tree.levels[keep], child_levels]),
                                np.concatenate([tree.codes[keep], child_codes])], axis=1), axis=0)
    return PrefixTree.from_nodes(tree.depth, nodes[:, 0], nodes[:, 1]), int(grows.sum()), int(collapse.sum())


def run_adaptive(population, params: AdaptiveParams, rng: np.random.Generator,
                 start: PrefixTree | None = None) -> AdaptiveResult:
    """Alg. 2.  ``population``: 2^D x 2^D user-count image or a ``UserPool``.

    ``start`` is an optional initial partition (§7 "prior information"); default
    the root alone.
    """
    pool = population if isinstance(population, UserPool) else UserPool(population, params.sampling)
    depth = pool.depth
    max_depth = depth if params.max_depth is None else params.max_depth
    if not 0 <= max_depth <= depth:
        raise ValueError(f"max_depth must be in [0, {depth}] (the image depth), got {max_depth}")
    tree = PrefixTree.root(depth) if start is None else start
    if tree.depth != depth:
        raise ValueError(f"start tree depth {tree.depth} differs from the population image depth {depth}")
    n = params.users_per_round
    spent, changed = 0.0, True
    rows, rounds, logs = [], [], []
    for t in range(params.max_rounds):
        levels, codes = tree.reporting_nodes()
        left = params.epsilon - spent
        target = params.target_epsilon(n, len(levels))
        last = t == params.max_rounds - 1 or not changed or left < (1 + params.expansion) * target
        eps_t = left if last else target
        spent = params.epsilon if last else spent + eps_t
        survivors = survive(pool.draw(n, rng), depth, params.secagg, rng)
        release = noisy_histogram(survivors, tree.encode, len(levels), eps_t, 1, rng, secagg=params.secagg)
        if release.protocol_transcript is not None:
            logs.append(release.protocol_transcript.assign(round=t))
        tau = params.split_threshold(n, eps_t, params.epsilon - spent)
        rounds.append(RoundRelease(levels, codes, release.noisy, tree))
        row = dict(round=t, epsilon=eps_t, epsilon_target=target, epsilon_cumulative=spent,
                   achieved_epsilon=release.achieved_epsilon, n_users=n, n_survivors=survivors.n_survivors,
                   vector_length=len(levels), n_nodes=len(tree.levels), threshold=tau,
                   n_split=0, n_collapsed=0, last=last)
        if not last:
            tree, row["n_split"], row["n_collapsed"] = adapt_tree(
                tree, release.noisy, tau, params.collapse_fraction * tau, max_depth)
            changed = row["n_split"] + row["n_collapsed"] > 0
        rows.append(row)
        if last:
            break
    return AdaptiveResult(rounds[-1].tree, pd.DataFrame(rows), rounds, tau,
                          pd.concat(logs, ignore_index=True) if logs else None)
