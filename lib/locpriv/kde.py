"""Exact Gaussian KDE on a grid in tiled separable form, and kNN bandwidth selection.

k_h(g, d) = exp(-||g - d||^2 / (2 h^2)) factorises over coordinates, so
sum_i k_h(g_pq, d_i) = sum_i Kx[i, p] Ky[i, q] = (Kx^T Ky)[p, q]: a GEMM with
inner dimension N.  At realistic bandwidths (h a few grid cells) almost every
entry of the dense factors is zero or subnormal, so:

* the kernel is cut at |u| = cut (``gaussian_cut``): a point touches only the
  grid rows/columns within cut * h of it;
* points are sorted into tiles of ``side`` grid cells (one 16-bit radix sort and one
  gather of (x, y) pairs), and each tile does the GEMM on factors restricted to the
  union of its points' windows, in user chunks (memory O(chunk * span));
* factors are stored transposed, (grid rows, points), and on a regular grid the
  plain Gaussian's are a geometric sequence per point (``_gaussian_rows``): one
  multiply per entry and two exps per point per segment, with the per-row constant
  applied to each tile's small GEMM result instead of to the factors;
* inside a tile every |u| is at most about cut + (tile side + 1) step / h
  <= cut + 8 + step / h; factors are checked against SAFE_U (|u| <= 30, so
  exp(-u^2/2) >= 1e-196) and otherwise built with the cut applied entry by entry,
  so no factor entry is ever subnormal, and nothing is computed for grid
  rows/columns no point of the tile reaches.

Error bound: every term with both |u_x|, |u_y| <= cut is summed (terms just
beyond the cut that fall inside a tile's span are summed too), and each dropped
term is at most TAIL times that point's own peak ((1 + c_x)(1 + c_y) for the
deconvoluting kernel, 1 otherwise).  So for any grid node
|kde_sum - exact sum| <= TAIL * peak * (points whose kernel is cut there) <= TAIL * peak * N.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .deconv.kernels import adjusted_from_square, gaussian_cut

DEFAULT_CHUNK = 8192
TAIL = 1e-13  # dropped terms are below this fraction of the kernel's peak
TILE_REACH = 8.0  # a tile's side is at most this many h: bounds |u| inside its span
# about N / MIN_TILE_USERS tiles. Smaller tiles: smaller blocks (less GEMM work), but more GEMM
# calls; at N = 1e6 on 200 x 200, 1024 was the fastest of 512, 1024, 2048 at h/l = 0.01 and 0.03
MIN_TILE_USERS = 1024
SAFE_U = 30.0  # |u| below this: exp(-u^2/2) >= 1e-196, a normal float (subnormals start near 1e-308)
SEGMENT = 24.0  # a factor recurrence restarts every SEGMENT / d rows: intermediates <= exp(288)
SEGMENT_ROWS = 256  # and at least every 256 rows: its rounding error grows with the row count


def kernel_factor(coord: np.ndarray, grid: np.ndarray, h: float, laplace_b: float = 0.0) -> np.ndarray:
    """exp(-u^2 / 2), u = (grid - coord) / h, as an (n, P) matrix, built in place.

    With ``laplace_b`` > 0 it is the deconvoluting kernel for Laplace(b) noise on
    this coordinate (Farokhi 2020, eq. 5): K_hat = (1 - (b/h)^2 d^2/du^2) K, and for
    the Gaussian K'' = (u^2 - 1) K, so K_hat = K (1 - (b/h)^2 (u^2 - 1)).  Dense, no cut.
    """
    u2 = np.subtract.outer(coord, grid)
    np.square(u2, out=u2)
    u2 *= 1.0 / (h * h)
    return adjusted_from_square("gaussian", u2, (laplace_b / h) ** 2, normalised=False)


@dataclass(frozen=True)
class _Axis:
    """One coordinate: its grid, bandwidth, deconvolution constant, cut and factor builder."""

    grid: np.ndarray
    h: float
    c: float  # (b / h)^2 of the deconvoluting kernel, 0 for the plain Gaussian

    @classmethod
    def of(cls, grid, h: float, b: float) -> _Axis:
        return cls(np.asarray(grid, dtype=float), float(h), (b / h) ** 2)

    @cached_property
    def cut(self) -> float:
        return gaussian_cut(self.c, TAIL)

    @cached_property
    def step(self) -> float | None:
        """The grid step if the grid is regular (to 1e-12 relative), else None."""
        d = np.diff(self.grid)
        if d.size and d[0] > 0 and np.allclose(d, d[0], rtol=1e-12, atol=0):
            return float(d[0])
        return None

    def window(self, coord: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Index range [lo, hi) of the grid nodes within cut * h of each coordinate.

        On a regular grid by arithmetic (a rounding at the boundary can add or drop
        a node at |u| = cut exactly, whose term is TAIL of the peak: within the bound).
        """
        reach, p = self.cut * self.h, self.grid.size
        if self.step is None:
            return (
                np.searchsorted(self.grid, coord - reach, "left"),
                np.searchsorted(self.grid, coord + reach, "right"),
            )
        lo = np.ceil((coord - reach - self.grid[0]) / self.step)
        hi = np.floor((coord + reach - self.grid[0]) / self.step) + 1
        return (np.clip(lo, 0, p).astype(np.int64), np.clip(hi, 0, p).astype(np.int64))

    def reaches(self, coord: np.ndarray) -> np.ndarray:
        """Whether each coordinate is within cut * h of the grid."""
        reach = self.cut * self.h
        return (coord >= self.grid[0] - reach) & (coord <= self.grid[-1] + reach)

    def tile(self, coord: np.ndarray, side: int) -> np.ndarray:
        """Index of the block of ``side`` grid cells holding each coordinate (clipped to the
        grid), as floats: exact small integers, three passes on a regular grid."""
        if self.step is None:
            block = (np.searchsorted(self.grid, coord, "right") - 1) // side
        else:
            block = (coord - self.grid[0]) * (1.0 / (self.step * side))
        np.clip(block, 0, (self.grid.size - 1) // side, out=block)
        return np.floor(block, out=block) if block.dtype.kind == "f" else block.astype(float)

    def factors(
        self, coord: np.ndarray, j0: np.ndarray, width: int, buffer: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(width, n) kernel factors, column i against grid[j0_i : j0_i + width], and a row scale.

        The factors are rows * scale[:, None] (scale None: 1); the caller applies the scale
        to the GEMM's small result instead of to the factors.  Transposed (one grid node
        per row) so every step is a pass over contiguous memory and the tile GEMM reads
        row blocks without a copy.  Inside a tile |u| stays below cut + TILE_REACH + 2 d
        (d = step / h); where it stays below SAFE_U no entry is subnormal and the cut need
        not be applied, otherwise (h far below the grid step, or an irregular grid)
        ``_direct`` cuts entry by entry.  ``buffer`` (at least width x n): where the rows
        are written on the fast path, reused across chunks (fresh pages cost page faults).
        """
        v = (self.grid[j0] - coord) / self.h
        if self.step is None or not v.size:
            return self._direct(coord, j0, width), None
        d = self.step / self.h
        if max(-v.min(), v.max() + width * d) > SAFE_U:
            return self._direct(coord, j0, width), None
        if self.c:  # deconvoluting kernel: its polynomial factor per entry, one exp per entry
            u2 = np.add.outer(d * np.arange(width), v)
            np.square(u2, out=u2)
            return adjusted_from_square("gaussian", u2, self.c, normalised=False), None
        return _gaussian_rows(v, d, width, None if buffer is None else buffer[:width, : v.size])

    def _direct(self, coord: np.ndarray, j0: np.ndarray, width: int) -> np.ndarray:
        """Per-entry exps with the cut applied (irregular grids, or h far below the step), (width, n)."""
        padded = np.r_[self.grid, np.full(width, np.inf)]  # beyond the grid: cut
        u2 = padded[np.add.outer(np.arange(width), j0)]
        u2 -= coord
        np.square(u2, out=u2)
        u2 *= 1.0 / (self.h * self.h)
        outside = u2 > self.cut**2
        u2[outside] = 0.0  # never exponentiate what is cut: no subnormal arithmetic
        k = adjusted_from_square("gaussian", u2, self.c, normalised=False)
        k[outside] = 0.0
        return k


def _gaussian_rows(
    v: np.ndarray, d: float, width: int, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """exp(-(v_i + j d)^2 / 2) as (rows, scale): rows[j, i] * scale[j], one multiply per entry.

    exp(-(v + k d)^2 / 2) = exp(-v^2 / 2) r^k exp(-(k d)^2 / 2) with r = exp(-v d): a
    geometric sequence in k per point (``rows``), times a constant per row (``scale``).
    Rows go in segments of at most SEGMENT / d (and SEGMENT_ROWS) rows, each restarted
    at its own v with k = 0, so every row entry lies in [exp(-SAFE_U^2 / 2),
    exp(SEGMENT^2 / 2)] and every scale in [exp(-SEGMENT^2 / 2), 1] (normal floats, and a
    product of two rows cannot overflow).  Within a segment rows are filled in blocks:
    rows [j, j + t) are rows [j - t, j) times r^t, with t doubling (r^t by squaring) up to
    SEGMENT / (2 d), so a segment of s rows takes about 2 log2(s) array operations instead
    of s (numpy's per-call cost is 10-20 % of the rows at 40+ rows), and r^t stays a normal
    float: |t d v| <= SEGMENT SAFE_U / 2 = 360.  Rounding: r^t carries t |v d| ulps from
    exp's argument, and an entry takes a few multiplications: a few hundred ulps, below
    2e-13 relative per entry (tested).
    """
    rows = np.empty((width, v.size)) if rows is None else rows
    seg = max(1, min(SEGMENT_ROWS, int(SEGMENT / d)))
    longest = max(1, int(SEGMENT / (2 * d)))  # the largest shift t
    k = d * (np.arange(width) % seg)
    for j0 in range(0, width, seg):
        vs = v + j0 * d
        rt = np.exp(-d * vs)  # r^t
        np.exp(-0.5 * vs * vs, out=rows[j0])
        end, t, done = min(j0 + seg, width), 1, j0 + 1
        while done < end:
            take = min(t, end - done)
            np.multiply(rows[done - t : done - t + take], rt, out=rows[done : done + take])
            done += take
            if done - j0 == 2 * t and 2 * t <= longest:
                np.multiply(rt, rt, out=rt)
                t *= 2
    return rows, np.exp(-0.5 * k * k)


@dataclass(frozen=True)
class Tiling:
    """Points sorted by tile, and each tile's rows [start, stop) and grid block."""

    order: np.ndarray  # indices into the points, tile by tile
    x: np.ndarray  # the points' coordinates in that order
    y: np.ndarray
    bounds: np.ndarray  # (tiles + 1,) row offsets into ``order``
    x0: np.ndarray
    x1: np.ndarray
    y0: np.ndarray
    y1: np.ndarray

    def __len__(self) -> int:
        return self.x0.size


def _tile_side(n: int, axis: _Axis) -> int:
    """Tile side in cells: about N / MIN_TILE_USERS tiles, and at most TILE_REACH * h.

    When a tile's block (window + side) would cover the whole axis anyway, one tile
    spans the axis: smaller tiles would only add GEMM calls.
    """
    p = axis.grid.size
    if p == 1:  # a single grid line (e.g. a 1-D slice): one tile, and no step to divide by
        return 1
    step = axis.step if axis.step is not None else (axis.grid[-1] - axis.grid[0]) / max(1, p - 1)
    want = int(np.ceil(p / np.sqrt(max(1.0, n / MIN_TILE_USERS))))
    side = max(1, min(want, int(TILE_REACH * axis.h / step)))
    return p if 2 * axis.cut * axis.h / step + side >= p else side


def tiling(
    points: np.ndarray, gx: np.ndarray, gy: np.ndarray, h: float, laplace_b: tuple[float, float] = (0.0, 0.0)
) -> Tiling:
    """The tiling ``kde_sum`` uses (public so benchmarks can time a GEMM of the same shapes)."""
    return _tiling(
        np.asarray(points, dtype=float).reshape(-1, 2), _Axis.of(gx, h, laplace_b[0]), _Axis.of(gy, h, laplace_b[1])
    )


def _tiling(points: np.ndarray, ax: _Axis, ay: _Axis) -> Tiling:
    """Each point's tile is the block of ``side`` grid cells holding it (points beyond an
    edge go to the edge tile); O(N) passes, one 16-bit radix sort and one gather."""
    x, y = points[:, 0], points[:, 1]
    reach = ax.reaches(x) & ay.reaches(y)
    valid = int(np.count_nonzero(reach))
    if not valid:
        none = np.zeros(0, np.int64)
        return Tiling(none, x[:0], y[:0], np.zeros(1, np.int64), none, none, none, none)
    sx, sy = _tile_side(valid, ax), _tile_side(valid, ay)
    ny, nx = -(-ay.grid.size // sy), -(-ax.grid.size // sx)
    key = ax.tile(x, sx)
    key *= ny
    key += ay.tile(y, sy)
    np.copyto(key, nx * ny, where=~reach)  # beyond the cut of the whole grid: sorted last, dropped
    key = key.astype(np.uint16 if nx * ny < 2**16 else np.int64)
    # stable (a radix sort for 16-bit keys): same tiles, same sums, for the same input
    order = np.argsort(key, kind="stable")[:valid]
    counts = np.bincount(key, minlength=nx * ny + 1)[: nx * ny]
    bounds = np.r_[0, np.cumsum(counts[counts > 0])]
    xy = _gather_pairs(points, order)
    x, y = xy[:, 0], xy[:, 1]
    starts = bounds[:-1]
    # windows grow with the coordinate: a tile's block runs from its smallest
    # coordinate's window start to its largest one's window end
    x0 = ax.window(np.minimum.reduceat(x, starts))[0]
    x1 = ax.window(np.maximum.reduceat(x, starts))[1]
    y0 = ay.window(np.minimum.reduceat(y, starts))[0]
    y1 = ay.window(np.maximum.reduceat(y, starts))[1]
    return Tiling(order, x, y, bounds, x0, x1, y0, y1)


def _gather_pairs(points: np.ndarray, order: np.ndarray) -> np.ndarray:
    """points[order] as one gather of 16-byte (x, y) pairs: 8x faster than fancy indexing
    of the 2-D array, and through a complex view (one element per pair) about 15 % faster
    than ``np.take(points, order, axis=0)``."""
    pairs = np.ascontiguousarray(points).view(np.complex128).ravel()
    return np.take(pairs, order).view(float).reshape(-1, 2)


def kde_sum(
    points: np.ndarray,
    gx: np.ndarray,
    gy: np.ndarray,
    h: float,
    chunk: int = DEFAULT_CHUNK,
    laplace_b: tuple[float, float] = (0.0, 0.0),
) -> np.ndarray:
    """Sum over points of the unnormalised Gaussian kernel on the grid, shape (P, Q).

    ``laplace_b``: per-coordinate Laplace noise scales of the points; nonzero gives
    the deconvoluting KDE (still a product kernel, so still one GEMM per tile).
    Tiled and cut as the module docstring says: within TAIL * peak * N of the dense
    sum.  Factors are built ``chunk`` sorted points at a time (memory O(chunk (P + Q))).
    """
    if not h > 0:
        raise ValueError(f"bandwidth h must be > 0, got {h}")
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    ax, ay = _Axis.of(gx, h, laplace_b[0]), _Axis.of(gy, h, laplace_b[1])
    t = _tiling(points, ax, ay)
    total = np.zeros((ax.grid.size, ay.grid.size))
    if not len(t):
        return total
    wx, wy = (t.x1 - t.x0).tolist(), (t.y1 - t.y0).tolist()
    # Python ints for the per-tile loop: numpy scalar indexing is its main overhead at small h
    bounds, x0, y0 = t.bounds.tolist(), t.x0.tolist(), t.y0.tolist()
    n = min(chunk, t.x.size)
    bx, by = np.empty((max(wx), n)), np.empty((max(wy), n))
    for b0 in range(0, t.x.size, chunk):
        b1 = min(b0 + chunk, t.x.size)
        first, last = bisect_right(bounds, b0) - 1, bisect_right(bounds, b1 - 1)
        rows = np.diff(np.clip(t.bounds[first : last + 1], b0, b1))  # each tile's rows in the chunk
        fx, sx = ax.factors(t.x[b0:b1], np.repeat(t.x0[first:last], rows), max(wx[first:last]), bx)
        fy, sy = ay.factors(t.y[b0:b1], np.repeat(t.y0[first:last], rows), max(wy[first:last]), by)
        scale = (
            None
            if sx is None and sy is None
            else np.outer(np.ones(fx.shape[0]) if sx is None else sx, np.ones(fy.shape[0]) if sy is None else sy)
        )
        for k in range(first, last):
            s, e = max(bounds[k], b0) - b0, min(bounds[k + 1], b1) - b0
            block = fx[: wx[k], s:e] @ fy[: wy[k], s:e].T
            if scale is not None:
                block *= scale[: wx[k], : wy[k]]
            total[x0[k] : x0[k] + wx[k], y0[k] : y0[k] + wy[k]] += block
    return total


def kde_binned(
    points: np.ndarray,
    gx: np.ndarray,
    gy: np.ndarray,
    h: float,
    refine: int = 4,
    laplace_b: tuple[float, float] = (0.0, 0.0),
) -> np.ndarray:
    """``kde_sum`` approximated by linear binning: O(N) plus two small GEMMs, whatever N.

    Each point's unit mass is split bilinearly over the 4 nodes of a fine regular
    grid (step = grid step / ``refine``, padded by the cut radius), then the exact
    separable kernel is applied to the binned masses: Fx^T W Fy.  Linear binning
    keeps the mass and the mean of every point, so the error is second order,
    O((fine step / h)^2) of the peak (Wand & Jones 1995, §D.2); the benchmark reports it.
    Needs regular grids (the fine grid must be aligned with them).
    """
    if not h > 0:
        raise ValueError(f"bandwidth h must be > 0, got {h}")
    if int(refine) < 1:
        raise ValueError(f"refine must be an integer >= 1, got {refine}")
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    axes = (_Axis.of(gx, h, laplace_b[0]), _Axis.of(gy, h, laplace_b[1]))
    nodes, cells = [], []
    for axis, coord in zip(axes, points.T, strict=True):
        if axis.step is None:
            raise ValueError("kde_binned needs regular grids; use kde_sum for irregular ones")
        fine = axis.step / int(refine)
        pad = int(np.ceil(axis.cut * h / fine)) + 1
        node = axis.grid[0] + fine * np.arange(-pad, (axis.grid.size - 1) * int(refine) + pad + 1)
        nodes.append(node)
        cells.append((coord - node[0]) / fine)
    (tx, ty), (mx, my) = cells, (nodes[0].size, nodes[1].size)
    inside = (tx >= 0) & (tx < mx - 1) & (ty >= 0) & (ty < my - 1)  # the rest is beyond the cut
    tx, ty = tx[inside], ty[inside]
    ix, iy = np.floor(tx).astype(np.int64), np.floor(ty).astype(np.int64)
    wx, wy = tx - ix, ty - iy
    mass = np.zeros(mx * my)
    for dx, fx in ((0, 1 - wx), (1, wx)):
        for dy, fy in ((0, 1 - wy), (1, wy)):
            mass += np.bincount((ix + dx) * my + iy + dy, fx * fy, minlength=mx * my)
    kx, ky = (
        axis._direct(node, np.zeros(node.size, np.int64), axis.grid.size)
        for axis, node in zip(axes, nodes, strict=True)
    )
    return kx @ (mass.reshape(mx, my) @ ky.T)


def kernel_surfaces(points: np.ndarray, gx: np.ndarray, gy: np.ndarray, h: float) -> np.ndarray:
    """Each point's own kernel surface, shape (n, P, Q): what a Fed-KDE user sends.

    Cut like ``kde_sum`` (entries beyond cut * h are exactly 0, never subnormal).
    """
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    ax, ay = _Axis.of(gx, h, 0.0), _Axis.of(gy, h, 0.0)
    start = np.zeros(len(points), dtype=np.int64)
    kx = ax._direct(points[:, 0], start, ax.grid.size)
    ky = ay._direct(points[:, 1], start, ay.grid.size)
    return kx.T[:, :, None] * ky.T[:, None, :]


def normaliser(h: float) -> float:
    """Integral of the unnormalised 2-D Gaussian kernel: turns sums into a pdf."""
    return 2 * np.pi * h * h


def knn_bandwidth(points: np.ndarray, k: int, rng: np.random.Generator, sample_fraction: float = 0.1) -> float:
    """Mean distance from a random sample of points to their k-th nearest neighbour (§4.2.4).

    The paper's server holds a 10 % sample M and averages ||k_Mi - x_Mi||.  With
    N = 1000 and k = 200 the neighbour cannot come from M alone (|M| = 100), so
    the k-th neighbour is taken among all points and only the query points are
    sampled; a point is not its own neighbour.
    """
    from scipy.spatial import cKDTree  # ~0.3 s to import: only the bandwidth stage needs it

    points = np.asarray(points, dtype=float)
    n = len(points)
    if not 1 <= k < n:
        raise ValueError(f"knn_k must be in [1, {n - 1}] for {n} points, got {k}")
    m = max(1, int(round(sample_fraction * n)))
    idx = rng.choice(n, size=m, replace=False)
    tree = cKDTree(points)
    dist, _ = tree.query(points[idx], k=[k + 1])  # k+1: the nearest is the point itself
    return float(dist.mean())
