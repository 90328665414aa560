"""Localisation attacks on what the server saw.

The local-maxima attack of [RFF-KDE] §4.2.2 works on any report that is a
surface on the grid: user i's local maxima e_ij at g_ij, kept if
e_ij >= e_max / ratio (ratio = 1.1 in the paper), weighted by e_ij / sum e,
give the privacy score Z_i = sum_j w_ij ||g_ij - d_i|| (eq. 16, read as the
weighted mean the text describes; the printed 1/K_i factor would double-count
the normalised weights).  A constant surface makes every grid point a
maximum with equal weight, so the same code yields the 0-feature score, the
mean distance to all grid points, without a special case.

A person-level attack (data with a person column) targets everything one person
sent: the person's surface is the sum of their reports' surfaces, and distances
are to the nearest of the person's true points (:class:`PersonTargets`), so
locating any one of them counts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.ndimage import maximum_filter

from ..domain import Grid

DEFAULT_BATCH = 256


RESULT_COLUMNS = {
    "user": "int64",
    "Z": "float64",
    "guess_x": "float64",
    "guess_y": "float64",
    "argmax_error": "float64",
    "n_maxima": "int64",
}


class PersonTargets:
    """The attacked persons' true points: ``points[k]`` is person k's (m_k, 2) array.

    Stands where a batch of single-point targets (an (n, 2) array) does: slicing gives
    the persons of a batch, and distances are to the nearest of each person's points.
    """

    def __init__(self, points: list[np.ndarray]):
        self.points = points

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, sl: slice) -> PersonTargets:
        return PersonTargets(self.points[sl])

    #: the most (query, point) distances :meth:`distance` holds at once (32 MB of float64)
    chunk = 1 << 22

    def distance(self, who: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Distance from (x[t], y[t]) to the nearest point of person who[t].

        Each query's minimum over all the person's points, a block of queries at a time, so memory is
        bounded by ``chunk`` distances: a flat surface (the ``zero`` mechanism's, or a weak LDP one)
        keeps all 10,000 cells of a 100 x 100 grid as maxima, and a Geolife person has up to ~70,000
        points, 5.6 GB per temporary in one block (an N = all attack job peaked at 17 GB).  Each
        minimum is over the same values as in one block, so the result is the same to the bit.
        """
        out = np.empty(len(who))
        for k in np.unique(who):
            at, pts = np.flatnonzero(who == k), self.points[k]
            step = max(1, self.chunk // len(pts))
            for start in range(0, len(at), step):
                rows = at[start : start + step]
                out[rows] = np.hypot(x[rows, None] - pts[:, 0], y[rows, None] - pts[:, 1]).min(axis=1)
        return out

    def field(self, grid: Grid) -> np.ndarray:
        """(n, P, Q): distance from every grid point to each person's nearest point.

        The nearest point of each grid point comes from a k-d tree (O(m log m + P Q log m) per
        person, not O(m P Q): persons have up to ~70,000 points), and the distance to it is
        np.hypot of the coordinate differences, the formula of the minimum over all points.  So
        the field is that minimum exactly, except where two points are equidistant to within the
        tree's rounding: there it may be the other's distance, within a few ulps.
        """
        from scipy.spatial import cKDTree  # ~0.3 s to import: only the person attack needs it

        gx, gy = np.meshgrid(grid.x, grid.y, indexing="ij")
        cells = np.column_stack([gx.ravel(), gy.ravel()])
        out = np.empty((len(self.points), *grid.shape))
        for k, pts in enumerate(self.points):
            nearest = pts[cKDTree(pts).query(cells)[1]]
            out[k] = np.hypot(cells[:, 0] - nearest[:, 0], cells[:, 1] - nearest[:, 1]).reshape(grid.shape)
        return out


def target_distance(target, who: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Distance from (x, y) to target ``who``: a row of an (n, 2) array of true points, or a person."""
    if isinstance(target, PersonTargets):
        return target.distance(who, x, y)
    return np.hypot(x - target[who, 0], y - target[who, 1])


def _per_user_mean(user: np.ndarray, values: np.ndarray, weights: np.ndarray | None, n: int) -> np.ndarray:
    return np.bincount(user, weights=values if weights is None else weights * values, minlength=n) / np.bincount(
        user, weights=weights, minlength=n
    )


def _per_user(found: tuple[np.ndarray, ...], n: int) -> tuple[np.ndarray, ...]:
    """np.nonzero's (user, i, j) of one surface repeated for ``n`` users (n = 0: as found)."""
    if not n:
        return found
    _, i, j = found
    return np.repeat(np.arange(n), len(i)), np.tile(i, n), np.tile(j, n)


def local_maxima_batch(surfaces: np.ndarray, grid: Grid, true_xy, ratio: float = 1.1) -> dict[str, np.ndarray]:
    """Z, best-guess error and maxima count for a batch of surfaces (n, P, Q).

    ``true_xy``: the targets' true locations (n, 2), or :class:`PersonTargets`.

    Plateaus count as maxima (>= every 8-neighbour).  Where the global maximum
    is not positive the paper's e_max/ratio filter and e-proportional weights
    are undefined; there the maxima within a factor ``ratio`` below e_max are
    kept with equal weights.  The single best guess is the centroid of the grid
    points tied at the global maximum (a unique point for a peaked surface, the
    domain centre for a constant one).  Distances are computed only at the kept
    maxima (a handful per peaked surface), not on the whole (n, P, Q) batch.
    """
    if ratio < 1:
        raise ValueError(f"attack ratio must be >= 1, got {ratio}")
    n = surfaces.shape[0]
    # one surface broadcast to every user (an aggregate-only release, ``stages.attack._surfaces_of``): its
    # maxima are found once and repeated per user, the index arrays np.nonzero gives on the whole batch
    shared = n > 1 and surfaces.strides[0] == 0
    analysed = surfaces[:1] if shared else surfaces
    m = analysed.shape[0]
    emax = analysed.reshape(m, -1).max(axis=1)
    positive = emax > 0
    thr = np.where(positive, emax / ratio, emax * ratio)
    keep = analysed >= maximum_filter(analysed, size=(1, 3, 3), mode="nearest")
    keep &= analysed >= thr[:, None, None]
    u, i, j = _per_user(np.nonzero(keep), n if shared else 0)
    weights = np.where(positive[0 if shared else u], surfaces[u, i, j], 1.0)
    dist = target_distance(true_xy, u, grid.x[i], grid.y[j])
    Z = _per_user_mean(u, dist, weights, n)

    scale = np.maximum(np.abs(analysed).reshape(m, -1).max(axis=1), np.finfo(float).tiny)
    tu, ti, tj = _per_user(np.nonzero(analysed >= (emax - 1e-12 * scale)[:, None, None]), n if shared else 0)
    guess = np.stack([_per_user_mean(tu, grid.x[ti], None, n), _per_user_mean(tu, grid.y[tj], None, n)], axis=1)
    return {
        "Z": Z,
        "guess_x": guess[:, 0],
        "guess_y": guess[:, 1],
        "argmax_error": target_distance(true_xy, np.arange(n), guess[:, 0], guess[:, 1]),
        "n_maxima": np.bincount(u, minlength=n),
    }


def local_maxima_attack(surface_batches, grid: Grid, users: np.ndarray, true_xy, ratio: float = 1.1) -> pd.DataFrame:
    """Run the attack over an iterable of (slice, surfaces) batches; one row per user."""
    parts = []
    for sl, surfaces in surface_batches:
        res = local_maxima_batch(surfaces, grid, true_xy[sl], ratio)
        parts.append(pd.DataFrame({"user": users[sl], **res}))
    return pd.concat(parts, ignore_index=True)


def batches(n: int, size: int = DEFAULT_BATCH):
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def person_sums(values_of, owner: np.ndarray, n_persons: int, batch: int, persons=None) -> np.ndarray | None:
    """(n_persons, ...): each person's sum of ``values_of(rows)`` over their rows, added in ascending row order.

    ``owner[t]``: the person (0..n_persons-1) of row t; ``values_of(rows)`` gives the values of the
    rows at the given positions (an index array), e.g. their (len(rows), P, Q) surfaces.  The rows
    are visited person by person (``batch`` at a time), each person's in ascending order, so every
    person's sum takes the same additions in the same order as a pass over the rows in order (same
    bits), while the sum being added to stays in cache (a pass in row order hops between persons).
    ``persons``: only these persons' rows, summed into row k of the result for persons[k]
    (sorted, unique); None (no rows) when they have none.
    """
    order = np.argsort(owner, kind="stable")
    if persons is not None:
        order = order[np.isin(owner[order], persons)]
        slot = np.searchsorted(persons, owner)
        n_persons = len(persons)
    else:
        slot = owner
    total = None
    for sl in batches(len(order), batch):
        rows = order[sl]
        part = values_of(rows)
        if total is None:
            total = np.zeros((n_persons, *part.shape[1:]))
        add_rows(total, slot[rows], part)
    return total


def add_rows(total: np.ndarray, owner: np.ndarray, rows: np.ndarray) -> None:
    """total[owner[t]] += rows[t], t in order: ``np.add.at``'s result, the same additions in the same order.

    A loop over rows, each a whole (P, Q) surface added in place: np.add.at goes
    element by element and was the slowest step of a person-level attack.
    """
    for who, row in zip(owner.tolist(), rows, strict=True):
        total[who] += row
