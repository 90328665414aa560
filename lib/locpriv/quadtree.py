"""Canonical quadtree over a box: cell ids as interleaved bit paths (shared by [SLDP] and [DDP-Heatmaps]).

A cell at level l is the 2 l-bit code of its path from the root, two bits per
level, most significant first (digit 2 bx + by of the x and y bits at that
level); its children are code * 4 + {0, 1, 2, 3}.  The hierarchy is fixed and
data-independent, and (level, code) is a plain integer key for Parquet.
"""

from __future__ import annotations

import numpy as np

from .dp.grid import finite


def interleave(x: np.ndarray, y: np.ndarray, depth: int) -> np.ndarray:
    """Full-depth path codes of pixels (x, y) in [0, 2^depth)^2."""
    x = np.asarray(x, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    side = 1 << depth
    if x.shape != y.shape or (x < 0).any() or (y < 0).any() or (x >= side).any() or (y >= side).any():
        raise ValueError(
            f"pixel coordinates must be equal-shape integers in [0, {side}), got shapes {x.shape}, {y.shape}"
        )
    code = np.zeros_like(x)
    for bit in range(depth - 1, -1, -1):  # a loop over levels, not pixels
        code = (code << 2) | (((x >> bit) & 1) << 1) | ((y >> bit) & 1)
    return code


def deinterleave(code: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) corner, in units of the level's cell size, of nodes given by their codes."""
    code = np.asarray(code, dtype=np.int64)
    x = np.zeros_like(code)
    y = np.zeros_like(code)
    for i in range(level):
        digit = (code >> (2 * (level - 1 - i))) & 3
        x = (x << 1) | (digit >> 1)
        y = (y << 1) | (digit & 1)
    return x, y


def cell_codes(points: np.ndarray, box, depth: int) -> np.ndarray:
    """Full-depth codes of points (N, 2) in box (xmin, xmax, ymin, ymax); the box's
    upper edges belong to the last cell."""
    xmin, xmax, ymin, ymax = box
    side = 1 << depth
    pts = finite(points, "quadtree points")
    inside = (pts[:, 0] >= xmin) & (pts[:, 0] <= xmax) & (pts[:, 1] >= ymin) & (pts[:, 1] <= ymax)
    if not inside.all():
        raise ValueError(f"{int((~inside).sum())} points lie outside the quadtree box {list(box)}")
    ix = np.minimum(((pts[:, 0] - xmin) / (xmax - xmin) * side).astype(np.int64), side - 1)
    iy = np.minimum(((pts[:, 1] - ymin) / (ymax - ymin) * side).astype(np.int64), side - 1)
    return interleave(ix, iy, depth)


def prefix_counts(paths, levels, codes, depth: int) -> np.ndarray:
    """How many of the full-depth codes ``paths`` each cell (``levels``, ``codes``) holds (int64, the cells' order)."""
    levels, codes = np.asarray(levels, dtype=np.int64), np.asarray(codes, dtype=np.int64)
    counts = np.zeros(len(levels), dtype=np.int64)
    ordered = np.sort(np.asarray(paths, dtype=np.int64))  # prefixes of sorted codes are sorted
    for lv in np.unique(levels):
        at = levels == lv
        prefix = ordered >> (2 * (depth - lv))
        counts[at] = np.searchsorted(prefix, codes[at], "right") - np.searchsorted(prefix, codes[at], "left")
    return counts


def cell_box(level: np.ndarray, code: np.ndarray, box) -> np.ndarray:
    """(xmin, xmax, ymin, ymax) of cells, shape (K, 4)."""
    xmin, xmax, ymin, ymax = box
    level = np.asarray(level, dtype=np.int64)
    code = np.asarray(code, dtype=np.int64)
    x = np.zeros_like(code)
    y = np.zeros_like(code)
    for i in range(int(level.max(initial=0))):  # digits from the root down; shallower cells stop early
        active = i < level
        digit = (code >> np.maximum(2 * (level - 1 - i), 0)) & 3
        x = np.where(active, (x << 1) | (digit >> 1), x)
        y = np.where(active, (y << 1) | (digit & 1), y)
    size = 1.0 / (1 << level)
    wx, wy = (xmax - xmin) * size, (ymax - ymin) * size
    return np.stack([xmin + x * wx, xmin + (x + 1) * wx, ymin + y * wy, ymin + (y + 1) * wy], axis=1)


def cell_overlaps(level: np.ndarray, code: np.ndarray, box, gx: np.ndarray, gy: np.ndarray):
    """Fraction of each grid cell's width (height) that each quadtree cell covers: (L, P), (L, Q).

    ``gx``, ``gy`` are the centres of a regular grid.  A piecewise-constant map with
    value v_l on cell l, averaged over the grid cells, is ``ox.T @ (oy * v[:, None])``
    — separable, no loop over cells or grid points, and exact: a cell smaller than a
    grid cell still contributes its mass.
    """
    x0, x1, y0, y1 = cell_box(np.asarray(level), np.asarray(code), box).T

    def overlap(lo, hi, centres):
        half = (centres[1] - centres[0]) / 2
        left = np.maximum(lo[:, None], centres[None, :] - half)
        right = np.minimum(hi[:, None], centres[None, :] + half)
        return np.clip(right - left, 0.0, None) / (2 * half)

    return overlap(x0, x1, gx), overlap(y0, y1, gy)
