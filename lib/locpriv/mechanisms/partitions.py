"""What the partition mechanisms share (``sldp``, ``privtree``, ``ldp_oue_grid``, ``ldp_kdtree``, the heatmaps).

Each releases a partition of the domain with per-cell counts, i.e. a
piecewise-constant density; averaged over the grid cells it is one separable
product (``quadtree.cell_overlaps``).  The OUE-based ones (``ldp_oue_grid``,
``ldp_kdtree``, ``hdg``) share the reports' compact column and the OUE claim.
Not a mechanism itself: helpers only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..dp import Guarantee
from ..params import Param
from ..quadtree import cell_overlaps
from .base import Mechanism

EPSILON = Param("epsilon", "float", "privacy budget", low=0.0)


def domain_box(grid) -> list[float]:
    return grid.domain.as_list()


def level_area(level, box) -> np.ndarray:
    """Area of a quadtree cell at ``level`` below the box."""
    return (box[1] - box[0]) * (box[3] - box[2]) / 4.0 ** np.asarray(level, dtype=float)


def ones_column(bits: np.ndarray) -> pd.Series:
    """Each row's set bits as a list column (the compact form of OUE reports in a view)."""
    rows, cols = np.nonzero(bits)  # row-major: each user's ones, in order
    offsets = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(bits)))])
    return pa.ListArray.from_arrays(offsets, cols).to_pandas()


def oue_noise(ones, own: np.ndarray, bits: int, epsilon: float, statistic: str):
    """The realised noise of OUE reports (``ones``: each report's set bits; ``own``: its user's cell): per
    report, the bits set among its ``bits`` − 1 cells that are not its own, Binomial(bits − 1, q) at ε."""
    from ..audit.noise import Noise, OUEZeros

    ones = np.asarray(ones, dtype=object)
    sizes = np.array([len(o) for o in ones], dtype=np.int64)
    flat = np.concatenate(ones).astype(np.int64) if sizes.sum() else np.zeros(0, np.int64)
    rows = np.repeat(np.arange(len(ones)), sizes)
    own_set = np.bincount(rows[flat == np.asarray(own)[rows]], minlength=len(ones))
    return Noise(statistic, (sizes - own_set).astype(float), OUEZeros(epsilon, bits - 1))


def oue_point_log_likelihood(ones, cells: np.ndarray, epsilon: float) -> np.ndarray:
    """OUE's log-likelihood at points (Wang et al. 2017): (rows, k), eps where row i's report set the bit of
    ``cells[i, j]`` (the cell point j encodes to in that row's grid), 0 elsewhere (up to a constant per row)."""
    ones = np.asarray(ones, dtype=object)
    rows = np.repeat(np.arange(len(ones)), [len(o) for o in ones])
    flat = np.concatenate(ones).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
    out = np.zeros(cells.shape)
    for j in range(cells.shape[1]):
        out[rows[flat == cells[rows, j]], j] = epsilon
    return out


def oue_guarantee(epsilon: float, covers: str, note: str) -> Guarantee:
    """The claim of one OUE report per user (Wang et al. 2017; ``ldp_kdtree``, ``hdg``): epsilon-LDP,
    as p (1 - q) / (q (1 - p)) = e^eps bounds the report's probability ratio between any two inputs."""
    return Guarantee(
        model="epsilon-LDP",
        epsilon=epsilon,
        delta=0.0,
        relation="any two inputs (local)",
        covers=covers,
        discretisation="bits only (OUE); each bit's probability is a double, so the exact epsilon exceeds "
        "the recorded one by at most float rounding (< 1e-15)",
        note=note,
    )


def release_surface(release: dict, grid) -> np.ndarray:
    """The released cells' counts (negatives set to 0) as a density averaged over each grid cell."""
    box = domain_box(grid)
    level, code = np.asarray(release["level"]), np.asarray(release["code"])
    ox, oy = cell_overlaps(level, code, box, grid.x, grid.y)
    value = np.maximum(np.asarray(release["count"], dtype=float), 0.0) / level_area(level, box)
    return ox.T @ (oy * value[:, None])


class Released(Mechanism):
    """A single-shard mechanism whose server output is a partition with counts (in view.attrs)."""

    interactive = True
    partial_per_area = True  # release_surface: counts over each cell's area

    def partial(self, view, grid):
        return release_surface(view.attrs["release"], grid)

    def density(self, total, n_users, grid):
        mass = total.sum() * grid.cell_area
        return total / mass if mass > 0 else total

    @staticmethod
    def with_release(view: pd.DataFrame, cells: pd.DataFrame, moved: int) -> pd.DataFrame:
        view.attrs["release"] = {k: cells[k].tolist() for k in ("level", "code", "count")}
        view.attrs["clamped_to_box"] = moved
        return view
