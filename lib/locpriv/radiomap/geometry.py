"""Virtual-obstacle grid and the cells under each user-station link.

For a link p = (p_u, p_d) the model needs B(p), the grid cells the link
passes over, and z_m(p), the link height above each of them ([GeoDP-Radio] §II-A2,
eq. 1).  The traversal is exact for straight links: the horizontal segment is
cut at every vertical and horizontal grid line it crosses, each piece lies in
one cell, and z_m is the link height at the middle of that piece.  Cuts are
computed for all links at once (padded to the grid size and sorted), never a
loop over links or cells.  A link that only touches a cell corner gets a
zero-length piece there, which is dropped: it does not pass over that cell.

The result is a CSR matrix (links x cells) whose stored values are z_m, so
every model quantity is a vectorised operation on its ``data`` array.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

# Pieces shorter than this fraction of the link (corner touches, duplicate
# cuts) are not a passage over a cell.
_MIN_PIECE = 1e-9
# Links per traversal batch: bounds memory at ~ batch x 2 n floats.
_BATCH = 4096


@dataclass(frozen=True)
class CellGrid:
    """n x n square cells of side ``cell`` metres covering [0, n*cell]^2."""

    n: int
    cell: float

    @property
    def M(self) -> int:
        return self.n * self.n

    @property
    def size(self) -> float:
        return self.n * self.cell

    def centres(self) -> np.ndarray:
        """(M, 2) cell centres c_m, row-major: m = iy * n + ix."""
        c = (np.arange(self.n) + 0.5) * self.cell
        xx, yy = np.meshgrid(c, c)
        return np.column_stack([xx.ravel(), yy.ravel()])

    def cell_of(self, xy: np.ndarray) -> np.ndarray:
        ij = np.clip(np.floor(np.asarray(xy) / self.cell).astype(np.int64), 0, self.n - 1)
        return ij[..., 1] * self.n + ij[..., 0]


@dataclass
class Links:
    """Geometry of L links: which cells each passes over and at what height."""

    matrix: sp.csr_matrix  # (L, M), values z_m(p) > 0
    log10_distance: np.ndarray  # (L,) log10 d(p), the 3-D link length in metres

    @cached_property
    def row(self) -> np.ndarray:
        """Link index of every stored entry (aligned with matrix.data); computed once (every epoch needs it)."""
        return np.repeat(np.arange(self.matrix.shape[0]), np.diff(self.matrix.indptr))

    @cached_property
    def cell(self) -> np.ndarray:
        """Cell index of every stored entry as intp (numpy gathers with int32 indices ~5x slower)."""
        return self.matrix.indices.astype(np.intp)

    def row_sums(self, values: np.ndarray) -> np.ndarray:
        """Per link, the sum of ``values`` over its stored entries (a link over no cell sums to 0)."""
        ptr = self.matrix.indptr
        out = (
            np.add.reduceat(values, np.minimum(ptr[:-1], max(len(values) - 1, 0)))
            if len(values)
            else np.zeros(len(ptr) - 1)
        )
        out[ptr[:-1] == ptr[1:]] = 0.0
        return out

    def to_frame(self) -> pd.DataFrame:
        coo = self.matrix.tocoo()
        return pd.DataFrame({"link": coo.row.astype(np.int32), "cell": coo.col.astype(np.int32), "z": coo.data})

    @classmethod
    def from_frame(cls, entries: pd.DataFrame, log10_distance: np.ndarray, M: int) -> Links:
        L = len(log10_distance)
        m = sp.csr_matrix(
            (entries["z"].to_numpy(float), (entries["link"].to_numpy(), entries["cell"].to_numpy())), shape=(L, M)
        )
        m.sort_indices()
        return cls(m, np.asarray(log10_distance, float))


def traverse(grid: CellGrid, start: np.ndarray, end: np.ndarray) -> Links:
    """Cells under each link start[k] -> end[k] ((L, 3) arrays of x, y, z in metres)."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    if start.shape != end.shape or start.ndim != 2 or start.shape[1] != 3:
        raise ValueError(f"start/end: expected two (L, 3) arrays, got {start.shape} and {end.shape}")
    if (
        np.any(start[:, :2] < 0)
        or np.any(start[:, :2] > grid.size)
        or np.any(end[:, :2] < 0)
        or np.any(end[:, :2] > grid.size)
    ):
        raise ValueError(f"link end points must lie in the area [0, {grid.size}]^2")
    rows, cols, zs = [], [], []
    for lo in range(0, len(start), _BATCH):  # batches bound memory; each is fully vectorised
        r, c, z = _traverse_batch(grid, start[lo : lo + _BATCH], end[lo : lo + _BATCH])
        rows.append(r + lo), cols.append(c), zs.append(z)
    L = len(start)
    matrix = sp.csr_matrix((np.concatenate(zs), (np.concatenate(rows), np.concatenate(cols))), shape=(L, grid.M))
    matrix.sort_indices()
    dist = np.linalg.norm(end - start, axis=1)
    return Links(matrix, np.log10(np.maximum(dist, 1e-3)))


def _traverse_batch(grid: CellGrid, a: np.ndarray, b: np.ndarray):
    lines = np.arange(1, grid.n) * grid.cell  # interior grid lines
    d = b - a
    with np.errstate(divide="ignore", invalid="ignore"):
        tx = (lines[None, :] - a[:, :1]) / d[:, :1]  # crossings of x = const
        ty = (lines[None, :] - a[:, 1:2]) / d[:, 1:2]
    cuts = np.concatenate([tx, ty], axis=1)
    cuts = np.where(np.isfinite(cuts) & (cuts > 0) & (cuts < 1), cuts, 1.0)  # non-crossings collapse onto t=1
    t = np.concatenate([np.zeros((len(a), 1)), cuts, np.ones((len(a), 1))], axis=1)
    t.sort(axis=1)
    t0, t1 = t[:, :-1], t[:, 1:]
    keep = (t1 - t0) > _MIN_PIECE
    link, piece = np.nonzero(keep)
    tm = 0.5 * (t0[link, piece] + t1[link, piece])
    pts = a[link] + tm[:, None] * d[link]
    return link, grid.cell_of(pts[:, :2]), pts[:, 2]
