"""LDP-KDTree (Alptekin, Balioglu & Gürsoy, ACM TKDD 19(7), 2025): a kd-tree built top-down under
user-level ε-LDP, [SLDP]'s local-DP baseline for range queries (§5.3, App. A.2).

The paper's text was not available to us.  What is taken from it: the kd-tree is built level by
level, top-down, with one data collection per depth, and each node is split at a private median
(its abstract).  What is taken from the algorithms as the [SLDP] authors' notebook transcribes them
(its Alg. 4 and CALC_MED, Alg. 6): the split axis alternates x, y, x, ... with the depth; a node's
extent along the axis is cut into ``buckets`` equal buckets (20 there); the median is the midpoint
of the bucket where the cumulative noisy count first reaches half the node's noisy total D, and
the two children get c1 = S_{j*} - c_{j*} / 2 and c2 = D - c1 (the notebook's floor(c/2) is
dropped: our counts are real-valued estimates); the leaves keep the counts their parent's split
gave them.  Reconstructed by us (the notebook adds central Laplace noise to exact histograms,
which is not local DP): the local model.  Users are split uniformly at random, independently of
their data, into ``height`` groups of (nearly) equal size; group l reports only at depth l, once,
with the whole ε (population division: no composition across levels), through optimized unary
encoding (OUE, Wang et al., USENIX Security 2017) over the 2^l x buckets values (node, bucket)
of that depth; the server debiases the counts, (C - N_l q) / (p - q), and scales them by
N / N_l to the whole population.  A node whose noisy total is <= 0 splits at its middle.

Guarantee (ε-LDP, any two inputs of one user): a user's only message is one OUE report, whose
likelihood ratio between any two values is at most p (1 - q) / (q (1 - p)) = e^ε; the value
depends on the public tree so far, which the user's own data do not influence (its group answers
once, after the levels above were fixed by other users).  So for any two locations of one user
and any transcript, the ratio of the transcript's probabilities is that of the user's report
given the same prefix, <= e^ε, and every later report's law given the prefix is the same under
both: the whole transcript, hence the released tree and counts (post-processing), is ε-LDP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..dp.grid import finite
from .ldp_grid import oue_bits, oue_probabilities

DEFAULT_BUCKETS = 20  # the transcribed CALC_MED's bucket count
# Measured on anchored range queries (synthetic clusters, N = 20,000; docs/results/sldp_range_methods.md):
# height 5 is best at epsilon 2, worse at epsilon <= 1; deeper trees lose (smaller groups, wider
# domains).  The notebook uses 5.
DEFAULT_HEIGHT = 4


@dataclass(frozen=True)
class KDTreeResult:
    leaves: pd.DataFrame  # x0, x1, y0, y1, count (scaled to the whole population)
    splits: list[np.ndarray]  # splits[l][i]: split coordinate of node i at depth l (axis l mod 2)
    group: np.ndarray  # each user's group = the depth it reported at
    reports: list[np.ndarray]  # per depth: the group's OUE bits (N_l, 2^l x buckets), in user order
    members: list[np.ndarray]  # per depth: who reported (the server knows whose report is whose)


def node_boxes(splits: list[np.ndarray], box) -> np.ndarray:
    """(2^L, 4) boxes (x0, x1, y0, y1) of the nodes at depth L = len(splits); children 2i, 2i + 1."""
    boxes = np.asarray([box], dtype=float)
    for level, cut in enumerate(splits):
        axis = level % 2
        low, high = boxes.copy(), boxes.copy()
        low[:, 2 * axis + 1] = cut  # lower child: the axis' upper edge moves to the split
        high[:, 2 * axis] = cut
        boxes = np.stack([low, high], axis=1).reshape(-1, 4)
    return boxes


def node_of(points: np.ndarray, splits: list[np.ndarray]) -> np.ndarray:
    """Index of the node at depth len(splits) holding each point (upper side of a split: right child)."""
    index = np.zeros(len(points), dtype=np.int64)
    for level, cut in enumerate(splits):
        index = 2 * index + (points[:, level % 2] >= cut[index])
    return index


def values(points: np.ndarray, splits: list[np.ndarray], box, buckets: int) -> np.ndarray:
    """What a user at depth len(splits) encodes: node * buckets + its bucket along the depth's axis."""
    level = len(splits)
    axis = level % 2
    node = node_of(points, splits)
    lo, hi = node_boxes(splits, box)[node][:, [2 * axis, 2 * axis + 1]].T
    bucket = np.floor((points[:, axis] - lo) / (hi - lo) * buckets).astype(np.int64)
    return node * buckets + np.clip(bucket, 0, buckets - 1)


def calc_median(counts: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """CALC_MED per node: counts (nodes, buckets) of noisy bucket counts over [lo, hi] along the axis.

    Returns (split, c1, c2, crossing bucket j*).  With E = max_j |S_hat_j - S_j| over the cumulative
    counts (``cumulative_error_bound``), the true cumulative counts satisfy S_{j*} >= n/2 - 1.5 E and
    S_{j*-1} <= n/2 + 1.5 E: S_hat_{j*} >= D/2 and S_hat_{j*-1} < D/2, with |D - n| <= E.  So the
    split's rank among the node's reporting users is within c_{j*} + 1.5 E of n/2.
    """
    buckets = counts.shape[1]
    total = counts.sum(axis=1)
    cum = np.cumsum(counts, axis=1)
    crossing = np.argmax(cum >= total[:, None] / 2, axis=1)  # first bucket reaching half
    usable = total > 0
    crossing = np.where(usable, crossing, buckets // 2)  # no mass: split at the middle
    width = (hi - lo) / buckets
    split = np.where(usable, lo + (crossing + 0.5) * width, (lo + hi) / 2)
    at = np.arange(len(counts))
    c1 = np.where(usable, cum[at, crossing] - counts[at, crossing] / 2, total / 2)
    return split, c1, total - c1, crossing


def cumulative_error_bound(n_group: int, n_node: int, buckets: int, epsilon: float, alpha: float) -> float:
    """E such that w.p. >= 1 - alpha every cumulative count of one node's debiased OUE histogram,
    S_hat_j for j = 1..buckets, is within E of the true one (unscaled, in the group's users).

    S_hat_j - S_j = sum over the group's N_l users and buckets k <= j of (bit - E bit) / (p - q):
    independent Bernoulli terms in [0, 1] with total variance V_j <= N_l j q (1 - q) + n_node
    (p (1 - p) - q (1 - q)).  Bernstein: P(|sum| >= t) <= 2 exp(-t^2 / (2 V + 2 t / 3)); a union
    over the ``buckets`` sums sets L = ln(2 buckets / alpha) and t = L/3 + sqrt((L/3)^2 + 2 V L).
    """
    p, q = oue_probabilities(epsilon)
    var = n_group * buckets * q * (1 - q) + n_node * (p * (1 - p) - q * (1 - q))
    log_term = math.log(2 * buckets / alpha)
    t = log_term / 3 + math.sqrt((log_term / 3) ** 2 + 2 * var * log_term)
    return t / (p - q)


def debiased(bits_sum: np.ndarray, n_group: int, epsilon: float) -> np.ndarray:
    """OUE's unbiased counts from the column sums of a group's reports."""
    p, q = oue_probabilities(epsilon)
    return (bits_sum - n_group * q) / (p - q)


def level_members(group: np.ndarray, level: int) -> np.ndarray:
    """The users reporting at depth ``level``: its group only, so each user sends one report (its ε)."""
    return np.flatnonzero(group == level)


def ldp_kdtree(
    points: np.ndarray,
    box,
    epsilon: float,
    height: int,
    rng: np.random.Generator,
    buckets: int = DEFAULT_BUCKETS,
    keep_reports: bool = False,
) -> KDTreeResult:
    """The released kd-tree of ``points`` (N, 2) in ``box``: 2^height leaves with counts."""
    if not (isinstance(height, (int, np.integer)) and 1 <= height <= 12):
        raise ValueError(f"height must be an integer in [1, 12], got {height!r}")
    if not (isinstance(buckets, (int, np.integer)) and buckets >= 2):
        raise ValueError(f"buckets must be an integer >= 2, got {buckets!r}")
    points = finite(points, "LDP-KDTree locations")
    n = len(points)
    group = rng.permutation(n) % height  # public and data-independent
    splits, reports, who = [], [], []
    for level in range(height):
        members = level_members(group, level)
        who.append(members)
        # client side: each member encodes its (node, bucket) under the public tree so far
        bits = oue_bits(values(points[members], splits, box, buckets), (2**level) * buckets, epsilon, rng)
        if keep_reports:
            reports.append(bits)
        # server side: debiased histogram per node, scaled to the population, then CALC_MED
        counts = debiased(bits.sum(axis=0), len(members), epsilon).reshape(2**level, buckets)
        counts = counts * (n / max(len(members), 1))
        axis = level % 2
        extent = node_boxes(splits, box)[:, [2 * axis, 2 * axis + 1]]
        split, c1, c2, _ = calc_median(counts, extent[:, 0], extent[:, 1])
        splits.append(split)
    boxes = node_boxes(splits, box)
    leaves = pd.DataFrame(
        {
            "x0": boxes[:, 0],
            "x1": boxes[:, 1],
            "y0": boxes[:, 2],
            "y1": boxes[:, 3],
            "count": np.stack([c1, c2], axis=1).ravel(),
        }
    )
    return KDTreeResult(leaves=leaves, splits=splits, group=group, reports=reports, members=who)
