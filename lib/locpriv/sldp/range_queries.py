"""Rectangular range queries over a partition ([SLDP] §5.2, App. A.2).

Answers are area-weighted sums of cell counts (uniformity inside a cell), as one
(queries x cells) overlap matrix product.  The anchored multi-scale workload of
App. A.2: centres at random data points, side log-uniform in [1/256, 1/8] of the
domain side, kept if the true count is in [20, 0.05 N]; the uniform workload of
the synthetic appendix; error is the mean relative error with smoothing
τ = 10 max(1, 1e-4 N).
"""

from __future__ import annotations

import numpy as np

from ..quadtree import cell_box


def overlap_fraction(queries: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Fraction of each cell's area inside each query: (Q, 4) x (K, 4) boxes -> (Q, K)."""
    wx = np.clip(
        np.minimum(queries[:, None, 1], cells[None, :, 1]) - np.maximum(queries[:, None, 0], cells[None, :, 0]), 0, None
    )
    wy = np.clip(
        np.minimum(queries[:, None, 3], cells[None, :, 3]) - np.maximum(queries[:, None, 2], cells[None, :, 2]), 0, None
    )
    area = (cells[:, 1] - cells[:, 0]) * (cells[:, 3] - cells[:, 2])
    return wx * wy / area[None, :]


def partition_boxes(partition, box) -> np.ndarray:
    """(K, 4) cell boxes of a partition: quadtree cells (level, code) or rectangles (x0, x1, y0, y1)."""
    if "level" in partition:
        return cell_box(partition["level"].to_numpy(), partition["code"].to_numpy(), box)
    return partition[["x0", "x1", "y0", "y1"]].to_numpy(dtype=float)


def answer(queries: np.ndarray, partition, box) -> np.ndarray:
    """Estimated counts from a partition's cells (``partition_boxes``) and their noisy counts."""
    return overlap_fraction(queries, partition_boxes(partition, box)) @ partition["count"].to_numpy(dtype=float)


def true_counts(queries: np.ndarray, points: np.ndarray) -> np.ndarray:
    x, y = points[:, 0], points[:, 1]
    inside = (
        (x[None, :] >= queries[:, [0]])
        & (x[None, :] < queries[:, [1]])
        & (y[None, :] >= queries[:, [2]])
        & (y[None, :] < queries[:, [3]])
    )
    return inside.sum(axis=1)


def _rectangles(x0, y0, w, h) -> np.ndarray:
    return np.stack([x0, x0 + w, y0, y0 + h], axis=1)


def anchored_workload(
    points: np.ndarray, box, n_queries: int, rng: np.random.Generator, side=(1 / 256, 1 / 8), max_tries: int = 50
) -> np.ndarray:
    """App. A.2 queries (n_queries, 4): a random data point as anchor, width and height
    log-uniform in ``side`` (fractions of the domain), the rectangle placed uniformly among
    positions containing the anchor, kept if its true count is in [20, 0.05 N]."""
    xmin, xmax, ymin, ymax = box
    n = len(points)
    kept = []
    for _ in range(max_tries):  # rejection rounds, each vectorised over a batch of candidates
        m = 4 * n_queries
        anchor = points[rng.integers(0, n, m)]
        w, h = (np.exp(rng.uniform(np.log(side[0]), np.log(side[1]), m)) * span for span in (xmax - xmin, ymax - ymin))
        q = _rectangles(anchor[:, 0] - rng.uniform(0, 1, m) * w, anchor[:, 1] - rng.uniform(0, 1, m) * h, w, h)
        c = true_counts(q, points)
        kept.append(q[(c >= 20) & (c <= 0.05 * n)])
        if sum(len(k) for k in kept) >= n_queries:
            return np.concatenate(kept)[:n_queries]
    raise ValueError(
        f"only {sum(len(k) for k in kept)} of {n_queries} anchored queries have a true count "
        f"in [20, {0.05 * n:g}]: too few points (N = {n}) for this workload"
    )


def uniform_workload(box, n_queries: int, rng: np.random.Generator, side=(1 / 256, 1 / 8)) -> np.ndarray:
    """The synthetic appendix's workload: width and height uniform in ``side`` (fractions of the
    domain; the paper's s_min, s_max are not given, ours match App. A.2's range), the corner
    uniform among positions keeping the rectangle inside the box."""
    xmin, xmax, ymin, ymax = box
    w = rng.uniform(*side, n_queries) * (xmax - xmin)
    h = rng.uniform(*side, n_queries) * (ymax - ymin)
    return _rectangles(
        xmin + rng.uniform(0, 1, n_queries) * (xmax - xmin - w),
        ymin + rng.uniform(0, 1, n_queries) * (ymax - ymin - h),
        w,
        h,
    )


def mean_relative_error(estimate: np.ndarray, truth: np.ndarray, n: int) -> float:
    tau = 10 * max(1.0, 1e-4 * n)
    return float(np.mean(np.abs(estimate - truth) / np.maximum(truth, tau)))
