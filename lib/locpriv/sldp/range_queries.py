"""Rectangular range queries over a partition (seed 001 §5.2, App. A.2).

Answers are area-weighted sums of cell counts (uniformity inside a cell), as one
(queries x cells) overlap matrix product.  The anchored multi-scale workload of
App. A.2: centres at random data points, side log-uniform in [1/256, 1/8] of the
domain side, kept if the true count is in [20, 0.05 N]; error is the mean
relative error with smoothing τ = 10 max(1, 1e-4 N).
"""

from __future__ import annotations

import numpy as np

from ..quadtree import cell_box


def overlap_fraction(queries: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Fraction of each cell's area inside each query: (Q, 4) x (K, 4) boxes -> (Q, K)."""
    wx = np.clip(np.minimum(queries[:, None, 1], cells[None, :, 1])
                 - np.maximum(queries[:, None, 0], cells[None, :, 0]), 0, None)
    wy = np.clip(np.minimum(queries[:, None, 3], cells[None, :, 3])
                 - np.maximum(queries[:, None, 2], cells[None, :, 2]), 0, None)
    area = (cells[:, 1] - cells[:, 0]) * (cells[:, 3] - cells[:, 2])
    return wx * wy / area[None, :]


def answer(queries: np.ndarray, partition, box) -> np.ndarray:
    """Estimated counts: partition has level, code, count (noisy) per cell."""
    cells = cell_box(partition["level"].to_numpy(), partition["code"].to_numpy(), box)
    return overlap_fraction(queries, cells) @ partition["count"].to_numpy(dtype=float)


def true_counts(queries: np.ndarray, points: np.ndarray) -> np.ndarray:
    x, y = points[:, 0], points[:, 1]
    inside = ((x[None, :] >= queries[:, [0]]) & (x[None, :] < queries[:, [1]])
              & (y[None, :] >= queries[:, [2]]) & (y[None, :] < queries[:, [3]]))
    return inside.sum(axis=1)


def anchored_workload(points: np.ndarray, box, n_queries: int, rng: np.random.Generator,
                      side=(1 / 256, 1 / 8), max_tries: int = 50) -> np.ndarray:
    """App. A.2 queries (n_queries, 4); raises if the count filter rejects too many."""
    xmin, xmax, ymin, ymax = box
    n = len(points)
    kept = []
    for _ in range(max_tries):  # rejection rounds, each vectorised over a batch of candidates
        m = 4 * n_queries
        centre = points[rng.integers(0, n, m)]
        s = np.exp(rng.uniform(np.log(side[0]), np.log(side[1]), m))
        half = np.stack([s * (xmax - xmin), s * (ymax - ymin)], axis=1) / 2
        q = np.stack([centre[:, 0] - half[:, 0], centre[:, 0] + half[:, 0],
                      centre[:, 1] - half[:, 1], centre[:, 1] + half[:, 1]], axis=1)
        c = true_counts(q, points)
        kept.append(q[(c >= 20) & (c <= 0.05 * n)])
        if sum(len(k) for k in kept) >= n_queries:
            return np.concatenate(kept)[:n_queries]
    raise ValueError(f"only {sum(len(k) for k in kept)} of {n_queries} anchored queries have a true count "
                     f"in [20, {0.05 * n:g}]: too few points (N = {n}) for this workload")


def mean_relative_error(estimate: np.ndarray, truth: np.ndarray, n: int) -> float:
    tau = 10 * max(1.0, 1e-4 * n)
    return float(np.mean(np.abs(estimate - truth) / np.maximum(truth, tau)))
