"""Continual heatmaps: the flat heatmap (``heatmap_flat``) of every window of a windowed dataset released as
the binary tree's dyadic-interval nodes (``dp.continual``), against window-by-window release.

``releases: {window: 1d, mode: continual}`` on a dataset makes every ``heatmap_flat`` setting on it one
release over the T windows (``workflow/rules/continual.smk``): for every dyadic interval of windows
[j 2^l, (j + 1) 2^l) (levels l = 0 .. L, L = ceil(log2 T)) the flat histogram of the 4^depth finest
quadtree pixels of the users of those windows, formed as ``heatmap_flat`` forms one window's
(``aggregation.noisy_histogram``): one shard (``shard_size`` at least the node's users) is the central
discrete-Laplace histogram; several shards are the distributed one, each shard's sum with its users'
Pólya noise shares, summed by secure aggregation (``aggregation``: population, per_client or secure, as
``heatmap_flat``'s).  In the distributed model a node is one secure-aggregation round over its windows'
users, so a user answers L + 1 rounds (one per level), the last when the node's last window closes.  A
window's map is its leaf; the running total up to window t is the sum of the
popcount(t) nodes of t's binary digits (``dp.continual.running_total``).

Calibration: the run's ``epsilon`` keeps ``heatmap_flat``'s meaning (one user, i.e. one row, add/remove,
in one window's release), and the tree spends it over its L + 1 levels: every node's sum has
discrete-Laplace noise with a = exp(-epsilon / (L + 1)) per entry (per shard).  So switching a dataset
from windowed to continual release keeps every person-level epsilon the ledger charges, and only moves
the noise between the windows' maps and their sums.

Guarantee (``guarantee``; distributed: if secure aggregation reveals only each shard's sum and no user
drops out, as ``heatmap_flat``'s): epsilon-DP under add/remove one row, 2 epsilon under replacing one
row, for the whole tree.  Proof sketch: a row lies in one window, hence in exactly one node of each
level and in one shard of that node, where it adds 1 to one entry (L1 sensitivity 1; 2 when replaced).
That shard's sum has discrete-Laplace noise of a = exp(-epsilon / (L + 1)) (one shard: drawn by the
curator; several: the sum of its users' Pólya shares, Goryczka & Xiong 2015 Thm 5.1), so each level is
epsilon / (L + 1)-DP (the Laplace mechanism, Dwork & Roth 2014 Thm 3.6; other shards and nodes are
independent of the row), and the L + 1 levels compose (basic) to epsilon.  A person with up to c rows in
each of the T windows is c T rows: group privacy gives c T epsilon (add/remove) and 2 c T epsilon
(person replaced), exactly the total of the T windowed releases (each c epsilon, 2 c epsilon), which is
what the ledger charges, once, for the tree (``locpriv.ledger``).  Equivalently, by ``dp.continual``: the
person adds at most c T to each level's L1 norm, and the noise scale (L + 1) / epsilon is that module's
(L + 1) c w / epsilon_person with w = T windows and epsilon_person = c T epsilon.

What it buys (``dp.continual``'s analysis, measured in docs/results/continual_heatmaps.md): a window's map
has (L + 1) times the noise scale of its windowed release; the running total's variance is popcount(t)
(L + 1)^2 against t, so the tree helps running totals only for T beyond a few thousand windows.  With
several shards the higher nodes hold more users, hence more shards, each with its own noise: the tree
loses more in the distributed model.
"""

from __future__ import annotations

import numpy as np

from ..dp import ADD_REMOVE, REPLACE_ONE, Guarantee
from ..dp import continual as tree
from ..quadtree import interleave
from . import polya
from .aggregation import SecAgg, UserPool, noisy_histogram, survive

CONTINUAL = "continual"
MODES = ("windowed", CONTINUAL)


def node_epsilon(epsilon: float, T: int, mode: str) -> float:
    """The epsilon of one node's histogram (per row, add/remove): the whole of it window by window, a level's
    share in the tree."""
    return epsilon / tree.levels(T) if mode == CONTINUAL else epsilon


def histogram(pixels: np.ndarray, depth: int, epsilon: float, rng: np.random.Generator, secagg: SecAgg) -> np.ndarray:
    """The flat heatmap's noisy counts of the users at flat ``pixels`` (x 2^depth + y), indexed by quadtree
    code: ``heatmap_flat``'s sub-query (users in fixed shards of ``secagg.shard_size``, in the given order).

    No user: nobody holds a noise share, so the count (0) gets one full shard's noise, the law a shard of
    users would have added (a window without rows still publishes a map that hides who could be in it)."""
    side, dim = 1 << depth, 4**depth
    if not len(pixels):
        return polya.aggregate_noise(1, dim, epsilon, 1, 1, rng)
    x, y = np.divmod(np.asarray(pixels, dtype=np.int64), side)
    pool = UserPool.from_pixels(x, y, depth, sampling="fixed", shard_size=secagg.shard_size)
    survivors = survive(pool.draw(len(x), rng), depth, secagg, rng, pool.shard_images)
    return noisy_histogram(
        survivors, lambda px, py: interleave(px, py, depth), dim, epsilon, 1, rng, secagg=secagg
    ).noisy


def release(
    windows: list[np.ndarray], depth: int, epsilon: float, rng: np.random.Generator, secagg: SecAgg, mode: str
) -> list[np.ndarray]:
    """The noisy nodes over the T windows (``windows[t]``: window t's users' flat pixels): one (nodes, 4^depth)
    integer array per level, node j of level l the windows [j 2^l, (j + 1) 2^l); window by window
    (``mode`` windowed) the leaves only, each window at the whole ``epsilon``."""
    if mode not in MODES:
        raise ValueError(f"release mode must be one of {MODES}, got {mode!r}")
    T = len(windows)
    eps = node_epsilon(epsilon, T, mode)
    out = []
    for level in range(tree.levels(T) if mode == CONTINUAL else 1):
        width = 2**level
        out.append(
            np.stack(
                [histogram(np.concatenate(windows[j : j + width]), depth, eps, rng, secagg) for j in range(0, T, width)]
            )
        )
    return out


def window_maps(nodes: list[np.ndarray]) -> np.ndarray:
    """(T, 4^depth): every window's map, its leaf."""
    return nodes[0]


def running_totals(nodes: list[np.ndarray]) -> np.ndarray:
    """(T, 4^depth): row t - 1 the sum of windows 0 .. t - 1; from the tree's popcount(t) nodes, or window by
    window (one level) the sum of the t leaves."""
    if len(nodes) == 1:
        return np.cumsum(nodes[0], axis=0)
    return np.stack([tree.running_total(nodes, t) for t in range(1, len(nodes[0]) + 1)])


def truth(windows: list[np.ndarray], depth: int) -> np.ndarray:
    """(T, 4^depth) the exact counts per window, indexed by quadtree code (as the nodes are)."""
    side = 1 << depth
    return np.stack(
        [
            np.bincount(interleave(*np.divmod(np.asarray(w, dtype=np.int64), side), depth), minlength=4**depth)
            for w in windows
        ]
    )


def guarantee(base: Guarantee, T: int) -> Guarantee:
    """The tree's row-level record from the flat heatmap's record ``base`` of one window (module docstring):
    the same epsilon per row, now for every node of the T windows."""
    if base.epsilon is None:
        return base
    return Guarantee(
        model=f"{base.model}, binary-tree continual release over {T} windows",
        epsilon=base.epsilon,
        delta=base.delta,
        relation=REPLACE_ONE,
        other_relations={ADD_REMOVE: base.other_relations.get(ADD_REMOVE, base.epsilon / 2)},
        covers=f"every dyadic node of the {T} windows' maps ({tree.levels(T)} levels, epsilon / {tree.levels(T)} "
        f"each), hence every window's map and running total; {base.covers}",
        discretisation=base.discretisation,
        note=f"a row is in one node per level: basic composition over the levels; {base.note}",
        trust_model=base.trust_model,
    )
