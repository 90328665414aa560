"""Synthetic urban environment of [GeoDP-Radio] §V: buildings, users, aerial stations.

Buildings are circles, rotated cuboids (rectangular footprints) and
irregular star-shaped polygons with heights drawn uniformly in a range
(paper: 10-130 m).  The true obstacle map h* is the building height at each
cell centre of the model grid (tallest building where footprints overlap), so
the virtual-obstacle model can represent the truth exactly and the MAE
measures learning, not discretisation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .geometry import CellGrid

SHAPES = ("circle", "cuboid", "irregular")
# Footprint sizes (metres) are this project's choice; the paper gives only
# the area (300 m x 300 m), the shape classes and the height range.
_RADIUS = (6.0, 18.0)  # circle radius / irregular mean radius
_SIDE = (10.0, 36.0)  # cuboid side lengths
_IRREGULAR_VERTICES = (5, 10)  # vertex count range of irregular footprints
_IRREGULAR_JITTER = 0.45  # relative radius jitter of irregular vertices


def make_buildings(n: int, size: float, height_range: tuple[float, float], rng: np.random.Generator) -> pd.DataFrame:
    """One row per building: shape, centre, height and its footprint parameters.

    ``vertices`` holds the footprint polygon (x0, y0, x1, y1, ...) for cuboids
    and irregular buildings; circles use ``radius``.
    """
    shape = rng.choice(np.array(SHAPES), size=n)
    cx, cy = rng.uniform(0, size, n), rng.uniform(0, size, n)
    height = rng.uniform(*height_range, n)
    radius = rng.uniform(*_RADIUS, n)
    angle = rng.uniform(0, np.pi, n)
    sides = rng.uniform(*_SIDE, (n, 2))
    n_vert = rng.integers(_IRREGULAR_VERTICES[0], _IRREGULAR_VERTICES[1] + 1, n)
    jitter = rng.uniform(1 - _IRREGULAR_JITTER, 1 + _IRREGULAR_JITTER, (n, _IRREGULAR_VERTICES[1]))
    vertices = []
    for k in range(n):  # per-building polygon construction: O(buildings), a few dozen
        if shape[k] == "cuboid":
            hx, hy = sides[k] / 2
            local = np.array([[-hx, -hy], [hx, -hy], [hx, hy], [-hx, hy]])
        elif shape[k] == "irregular":
            phi = angle[k] + np.linspace(0, 2 * np.pi, n_vert[k], endpoint=False)
            rad = radius[k] * jitter[k, : n_vert[k]]
            local = np.column_stack([rad * np.cos(phi), rad * np.sin(phi)])
        else:
            vertices.append([])
            continue
        rot = np.array([[np.cos(angle[k]), -np.sin(angle[k])], [np.sin(angle[k]), np.cos(angle[k])]])
        poly = local @ rot.T + [cx[k], cy[k]]
        vertices.append(poly.ravel().tolist())
    return pd.DataFrame(
        {
            "shape": shape,
            "cx": cx,
            "cy": cy,
            "height": height,
            "radius": np.where(shape == "circle", radius, np.nan),
            "vertices": vertices,
        }
    )


def rasterise(buildings: pd.DataFrame, grid: CellGrid) -> np.ndarray:
    """True obstacle map h* (M,): tallest building covering each cell centre, else 0."""
    c = grid.centres()
    h = np.zeros(grid.M)
    for row in buildings.itertuples():  # loop over buildings, vectorised over cells
        if row.shape == "circle":
            inside = np.hypot(c[:, 0] - row.cx, c[:, 1] - row.cy) <= row.radius
        else:
            inside = _in_polygon(c, np.asarray(row.vertices, float).reshape(-1, 2))
        h = np.where(inside, np.maximum(h, row.height), h)
    return h


def _in_polygon(pts: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Even-odd ray-casting test of every point against one polygon."""
    x, y = pts[:, :1], pts[:, 1:]
    x0, y0 = poly[:, 0][None, :], poly[:, 1][None, :]
    x1, y1 = np.roll(poly[:, 0], -1)[None, :], np.roll(poly[:, 1], -1)[None, :]
    crosses = (y0 > y) != (y1 > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        xint = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
    return (crosses & (x < xint)).sum(axis=1) % 2 == 1


def place_users(
    n: int, heights: np.ndarray, grid: CellGrid, rng: np.random.Generator, max_tries: int = 50
) -> np.ndarray:
    """(n, 2) ground positions, uniform over the area outside buildings (rejection)."""
    free = np.mean(heights == 0)
    if free == 0:
        raise ValueError("environment: buildings cover every cell; no room for ground users")
    out = np.empty((0, 2))
    for _ in range(max_tries):  # rejection rounds, each vectorised; usually one suffices
        cand = rng.uniform(0, grid.size, (int(2 * n / free) + 16, 2))
        out = np.vstack([out, cand[heights[grid.cell_of(cand)] == 0]])
        if len(out) >= n:
            return out[:n]
    raise ValueError(f"environment: could not place {n} users outside buildings")


def place_stations(n: int, altitude: float, size: float, rng: np.random.Generator) -> np.ndarray:
    """(n, 3) aerial base stations uniform over the area at a fixed altitude."""
    xy = rng.uniform(0, size, (n, 2))
    return np.column_stack([xy, np.full(n, float(altitude))])


def pick_stations(n_users: int, n_stations: int, per_user: int, rng: np.random.Generator) -> np.ndarray:
    """(n_users, per_user) station indices; without replacement when per_user <= n_stations."""
    if per_user <= n_stations:
        return np.argsort(rng.random((n_users, n_stations)), axis=1)[:, :per_user]
    return rng.integers(0, n_stations, (n_users, per_user))
