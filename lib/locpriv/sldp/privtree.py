"""PrivTree (Zhang, Xiao & Xie, SIGMOD 2016), the central-DP baseline of seed 001 §5.2.

A node v at depth d(v) with c(v) points gets the biased count
b(v) = max(c(v) − d(v) δ, θ − δ) and is split when b(v) + Lap(λ) > θ.  Seed 001
uses λ = 7 / (3 ε_tree), δ = λ ln 4, θ = 0 (the fanout-4 constants of PrivTree's
Theorem); the leaves' counts are then released with Lap(1 / ε_count).
Processed level by level on the shared quadtree codes, so the cost is a few
array passes per level, not a Python loop over nodes.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..quadtree import cell_codes


def constants(epsilon_tree: float) -> tuple[float, float]:
    """(λ, δ) of seed 001: λ = 7 / (3 ε_tree), δ = λ ln 4."""
    if not (math.isfinite(epsilon_tree) and epsilon_tree > 0):
        raise ValueError(f"epsilon_tree must be a finite number > 0, got {epsilon_tree}")
    lam = 7.0 / (3.0 * epsilon_tree)
    return lam, lam * math.log(4.0)


def biased_count(count, depth, theta: float, delta: float):
    """b(v) = max(c(v) − d(v) δ, θ − δ)."""
    return np.maximum(np.asarray(count, dtype=float) - np.asarray(depth) * delta, theta - delta)


def privtree(points: np.ndarray, box, epsilon_tree: float, epsilon_count: float, rng: np.random.Generator,
             theta: float = 0.0, max_depth: int = 20) -> pd.DataFrame:
    """Leaves (level, code, count) with Laplace-noised counts.

    ``max_depth`` only bounds the code width (PrivTree stops with probability 1
    long before it: the bias grows by δ per level).
    """
    lam, delta = constants(epsilon_tree)
    if not (math.isfinite(epsilon_count) and epsilon_count > 0):
        raise ValueError(f"epsilon_count must be a finite number > 0, got {epsilon_count}")
    path = cell_codes(points, box, max_depth)
    nodes = np.zeros(1, dtype=np.int64)
    leaves = []
    for level in range(max_depth + 1):
        prefix = path >> (2 * (max_depth - level))
        in_open_node = np.isin(prefix, nodes)  # points of finished leaves drop out
        counts = np.bincount(np.searchsorted(nodes, prefix[in_open_node]), minlength=nodes.size)
        noisy = biased_count(counts, level, theta, delta) + rng.laplace(0.0, lam, nodes.size)
        split = (noisy > theta) & (level < max_depth)
        leaf = ~split
        leaves.append(pd.DataFrame({"level": level, "code": nodes[leaf],
                                    "count": counts[leaf] + rng.laplace(0.0, 1.0 / epsilon_count, leaf.sum())}))
        if not split.any():
            break
        nodes = np.sort(((nodes[split] << 2)[:, None] | np.arange(4)).ravel())
    return pd.concat(leaves, ignore_index=True)
