"""Worst-case neighbouring inputs per mechanism: the audit cases behind ``audit_epsilon_lb``.

Each case builds pairs of samplers (outputs at x and at x′, through the
mechanism's own client code: ``Mechanism.randomize`` or the per-user
randomizer it calls) for one parameter setting on one public domain:

* ``laplace_ldp``: opposite corners of the box; a point outside the box (clamped)
  against the far corner; the centre against a corner (the floating-point
  attack on continuous samplers lives there, Mironov 2012);
* ``geoind``: two points at distance d = 1/ε (ε d = 1), at the centre and at a
  corner; the bound is divided by d (metric DP);
* ``ldp_oue_grid``: users in two different cells (opposite corners), the two
  cells' bits;
* ``sldp``: one user moved between two children in a round (Kroshnin &
  Suvorikova 2025, Alg. 1: its four noisy indicators);
* ``ldp_kdtree``: one user's OUE report at the root, its location in the first vs the last
  bucket (Alptekin et al. 2025 as in ``sldp.ldp_kdtree``; a deeper level's report is the same
  OUE over more values);
* ``hdg``: users at opposite corners (different cells of every group's grid), through the
  mechanism's randomize: each user's group and its report's bits of the two corners' cells
  (Yang et al. 2021 as in ``sldp.hdg``; the group is a function of the user id, the same under
  both inputs);
* ``privtree`` (central DP): a dataset with and without one user (add/remove);
* ``dp_heatmap`` / ``heatmap_flat``: one secure-
  aggregation shard's noisy sum with and without one user (Bagdasaryan et al.
  2022 Alg. 1, Pólya shares summed to discrete Laplace), one sub-query spending
  the whole budget (every sub-query spends at most ε);
* ``zero``: any two locations.

(``heatmap_hierarchical`` picks its published level against the true map, so it
states no ε and has nothing to audit; ``fedkde`` and ``rff`` claim no formal DP.)

Every feature the estimator sees is a public function of the released output,
so an event on it is an output event and the bound is sound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from .. import mechanisms
from ..domain import Grid
from ..dp import ADD_REMOVE
from ..heatmaps import polya
from ..planar_laplace import grid_step
from ..quadtree import cell_codes
from ..sldp import hdg as hdg_lib
from ..sldp.ldp_grid import oue_bits
from ..sldp.protocol import child_reports

Sampler = Callable[[int, np.random.Generator], np.ndarray]

# Parameters that only change what the server computes from the reports (or the
# run's size): they cannot change a user's output law, so audits ignore them.
SERVER_SIDE = {"n", "h", "estimator", "kde"}
# Central-DP curators run on the whole dataset per draw (~3 ms of CPU), so their draws are capped.
CENTRAL_MAX_DRAWS = 1_000
# Users per randomize call for mechanisms whose view is large per user (OUE: 4^level bits each).
CHUNK = 20_000


@dataclass(frozen=True)
class Pair:
    name: str                       # which neighbouring inputs
    sample_x: Sampler
    sample_xp: Sampler
    statistic: Callable[[np.ndarray], np.ndarray] | None = None
    distance: float = 1.0           # d(x, x′) for metric DP, else 1
    max_draws: int | None = None    # cost cap, recorded in the result
    # the output law is the same on every domain box (outputs are cell codes, bits or counts
    # of points placed at the same relative positions), so one audit serves every dataset
    box_free: bool = False
    # the neighbouring relation the pair instantiates, when it is not the guarantee's main one
    relation: str | None = None


def audit_params(params: dict) -> dict:
    """The parameters that can change a user's output law (the audit's identity)."""
    return {k: v for k, v in sorted(params.items()) if k not in SERVER_SIDE}


def _points(xy, n: int) -> pd.DataFrame:
    return pd.DataFrame({"user": np.arange(n, dtype=np.int64), "x": float(xy[0]), "y": float(xy[1])})


def _randomized(name: str, params: dict, grid: Grid, xy, columns) -> Sampler:
    """Sampler: n users at xy through the mechanism's client side, ``columns(view)`` as (n, k)."""
    mech = mechanisms.get(name)

    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        parts = [columns(mech.randomize(_points(xy, min(CHUNK, n - i)), params, grid, rng))
                 for i in range(0, n, CHUNK)]
        return np.concatenate(parts)
    return sample


def _box(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    d = grid.domain
    return np.array([d.xmin, d.ymin]), np.array([d.xmax, d.ymax])


def _xy(view: pd.DataFrame) -> np.ndarray:
    return view[["x", "y"]].to_numpy()


def _laplace_ldp(params: dict, grid: Grid) -> list[Pair]:
    lo, hi = _box(grid)
    side = hi - lo

    def clipped_sum(out):
        # the Laplace log-likelihood ratio between the corners is increasing in this (public) sum
        return (np.clip(out, lo, hi) / side).sum(axis=1)

    def pair(name, a, b):
        return Pair(name, _randomized("laplace_ldp", params, grid, a, _xy),
                    _randomized("laplace_ldp", params, grid, b, _xy), clipped_sum)
    return [pair("opposite corners", lo, hi),
            pair("outside the box (clamped) vs far corner", lo - side, hi),
            pair("centre vs corner", (lo + hi) / 2, hi)]


def _geoind(params: dict, grid: Grid) -> list[Pair]:
    lo, hi = _box(grid)
    # inputs on the mechanism's public grid, where its guarantee is exactly ε d (off the grid
    # snapping adds a constant); d = 1/ε rounded to the grid, so ε d ≈ 1
    step = grid_step(params["epsilon"])
    d = max(step, step * round(1.0 / params["epsilon"] / step))

    def pair(name, a):
        a = step * np.round(np.asarray(a) / step)
        b = a + np.array([d, 0.0])

        def llr(out):   # planar Laplace: the log-likelihood ratio is ε (|y − b| − |y − a|)
            return np.linalg.norm(out - b, axis=1) - np.linalg.norm(out - a, axis=1)
        return Pair(name, _randomized("geoind", params, grid, a, _xy),
                    _randomized("geoind", params, grid, b, _xy), llr, distance=d)
    return [pair("two grid points at distance ~1/epsilon, domain centre", (lo + hi) / 2),
            pair("two grid points at distance ~1/epsilon, domain corner", lo)]


def _oue(params: dict, grid: Grid) -> list[Pair]:
    lo, hi = _box(grid)
    level = params["level"]
    half_cell = (hi - lo) / 2 ** level / 2
    a, b = lo + half_cell, hi - half_cell
    box = grid.domain.as_list()
    cells = cell_codes(np.array([a, b]), box, level)

    def bits(view):
        ones = view["ones"].to_numpy()
        rows = np.repeat(np.arange(len(ones)), [len(o) for o in ones])
        flat = np.concatenate(ones).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
        out = np.zeros((len(ones), 2))
        for j, cell in enumerate(cells):
            out[rows[flat == cell], j] = 1.0
        return out

    return [Pair("users in two opposite corner cells: their two bits",
                 _randomized("ldp_oue_grid", params, grid, a, bits),
                 _randomized("ldp_oue_grid", params, grid, b, bits),
                 lambda out: 2 * out[:, 0] + out[:, 1], box_free=True)]


def _sldp(params: dict, grid: Grid) -> list[Pair]:
    def child(c):
        return lambda n, rng: child_reports(np.full(n, c), params["epsilon"], rng, params["calibration"])
    return [Pair("one user moved between two children in a round",
                 child(0), child(3), lambda out: out[:, 0] - out[:, 3], box_free=True)]


def _ldp_kdtree(params: dict, grid: Grid) -> list[Pair]:
    last = params["buckets"] - 1

    def report(value):
        return lambda n, rng: oue_bits(np.full(n, value), params["buckets"], params["epsilon"], rng)[:, [0, last]]
    return [Pair("one user in the first vs the last bucket at the root: their two bits", report(0), report(last),
                 lambda out: 2 * out[:, 0] + out[:, 1], box_free=True)]


def _hdg(params: dict, grid: Grid) -> list[Pair]:
    lo, hi = _box(grid)
    corners = np.array([lo, hi])
    box = grid.domain.as_list()
    names = hdg_lib.GROUPS[params["variant"]]

    def group_and_bits(view):
        """(group, bit of the low corner's cell, bit of the high corner's cell) of each user's report."""
        r = view.attrs["release"]
        # cells[j]: the two corners' cells in group j's grid
        cells = np.array([hdg_lib.values(corners, box, name, r["g1"], r["g2"]) for name in names])
        group = view["group"].to_numpy()
        ones = view["ones"].to_numpy()
        rows = np.repeat(np.arange(len(ones)), [len(o) for o in ones])
        flat = np.concatenate(ones).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
        out = np.zeros((len(view), 3))
        out[:, 0] = group
        for corner in (0, 1):
            out[rows[flat == cells[group[rows], corner]], 1 + corner] = 1.0
        return out

    def sample(xy):
        return _randomized("hdg", params, grid, xy, group_and_bits)
    return [Pair("users at opposite corners: their group and the two corners' bits", sample(lo), sample(hi),
                 lambda out: 4 * out[:, 0] + 2 * out[:, 1] + out[:, 2], box_free=True)]


def _privtree(params: dict, grid: Grid) -> list[Pair]:
    lo, hi = _box(grid)
    mech = mechanisms.get("privtree")
    base = pd.DataFrame({"user": [0], "x": [(lo[0] + hi[0]) / 2], "y": [(lo[1] + hi[1]) / 2]})
    plus = pd.concat([base, pd.DataFrame({"user": [1], "x": [lo[0]], "y": [lo[1]]})], ignore_index=True)

    def released(points):
        def sample(n, rng):
            out = np.empty((n, 3))
            for i in range(n):
                r = mech.randomize(points, params, grid, rng).attrs["release"]
                level, count = np.asarray(r["level"]), np.asarray(r["count"], dtype=float)
                out[i] = len(level), count.sum(), level.max()
            return out
        return sample
    return [Pair("dataset with and without one user (corner)", released(plus), released(base),
                 max_draws=CENTRAL_MAX_DRAWS, box_free=True, relation=ADD_REMOVE)]


def _heatmap(params: dict, grid: Grid) -> list[Pair]:
    shard = [params["shard_size"]]

    def shard_sum(extra):
        # the noise noisy_histogram adds for a full shard (no dropout: the DAG simulates none),
        # drawn for n independent sub-queries at the whole budget
        return lambda n, rng: (extra + polya.sharded_aggregate_noise(shard, shard, n, params["epsilon"], 1,
                                                                     rng))[:, None]
    return [Pair("one shard's noisy sum with and without one user", shard_sum(1), shard_sum(0), box_free=True,
                 relation=ADD_REMOVE)]


def _zero(params: dict, grid: Grid) -> list[Pair]:
    lo, hi = _box(grid)

    def released(view):   # everything in the view but the user id: no columns, i.e. one constant
        rest = view.drop(columns="user")
        return rest.to_numpy(dtype=float) if rest.shape[1] else np.zeros((len(view), 1))
    return [Pair("opposite corners", _randomized("zero", params, grid, lo, released),
                 _randomized("zero", params, grid, hi, released), box_free=True)]


CASES: dict[str, Callable[[dict, Grid], list[Pair]]] = {
    "laplace_ldp": _laplace_ldp,
    "geoind": _geoind,
    "ldp_oue_grid": _oue,
    "sldp": _sldp,
    "ldp_kdtree": _ldp_kdtree,
    "hdg": _hdg,
    "privtree": _privtree,
    "dp_heatmap": _heatmap,
    "heatmap_flat": _heatmap,
    "zero": _zero,
}


def pairs(mechanism: str, params: dict, grid: Grid) -> list[Pair]:
    if mechanism not in CASES:
        raise ValueError(f"no audit case for mechanism {mechanism!r}; add one to locpriv.audit.cases.CASES")
    return CASES[mechanism](params, grid)
