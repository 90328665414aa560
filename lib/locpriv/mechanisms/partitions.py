"""[SLDP]'s mechanisms as branches of the location DAG: ``sldp``, ``privtree``, ``ldp_oue_grid``.

Each releases a partition of the domain with per-cell counts, i.e. a
piecewise-constant density; averaged over the grid cells it is one separable
product (``quadtree.cell_overlaps``).

* ``sldp`` (interactive, [SLDP] Alg. 1/2): the protocol needs every user's
  answers each round, so the run is one shard holding all its users
  (``interactive``).  The server learns the partition with noisy counts and, per
  user, its privacy region (where the user stopped answering): the attack's
  surface for a user is uniform on that region — SLDP protects a location only
  inside its region.  Whole budget on the partition; split threshold Q =
  ``threshold`` (default k = 20 users per region, the paper's §5.2 / App. A.2);
  noise calibrated to the indicators' L1 sensitivity 2 unless ``calibration:
  paper`` (Alg. 1 as printed, recorded at its true cost 2 eps per round);
  ``leaves`` (children | merge) only changes which cells the server publishes;
  ``counts: regions`` (default) gives each released region its exact number of
  users, free under the SLDP relation (``noisy``: the transcript's n_hat);
  under ``leaves: children`` the child cells inside a region carry the transcript's
  n_hat shifted to the region's exact count (``sldp.protocol``).
  Guarantee (Kroshnin & Suvorikova 2025, Thm 4.1, ``all_children`` = Alg. 2 as
  printed): (eps, delta)-DP for replacing one user's location by another inside
  its privacy region U*(X), the cell of the ideal partition holding it; the
  region itself is revealed.  ``per_child`` (the authors' code, the default: Alg. 2 as
  printed stops a parent as soon as any child is sparse, which on concentrated data
  leaves every user at level 1) has no proof: its record has no epsilon ("none proven").
* ``privtree`` (central DP, Zhang et al. 2016): a trusted curator holds the raw
  points (one shard); nothing per user is released, so every user's attack
  surface is the published density (the attack learns what it learns about
  anyone).  Budget halves: tree and leaf counts, as the sldp study; the record's
  epsilon is for replacing one user (2 eps, n is public), add/remove beside it.
* ``ldp_oue_grid`` (LDP; optimized unary encoding, Wang et al., USENIX Security
  2017): each user sends a perturbed bit vector over a 2^level x 2^level grid
  (bit of its own cell kept w.p. p = 1/2, others set w.p. q = 1/(e^ε + 1));
  shardable.  ``level: auto`` takes the level from the granularity guideline (N and ε
  only, ``sldp.ldp_grid.grid_level``), resolved with the run's N before any stage
  (``Mechanism.for_users``).  The attack surface is the exact posterior over cells under a
  uniform prior: weight e^ε on reported ones, 1 on zeros.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa

from ..dp import Guarantee
from ..params import Param
from ..quadtree import cell_codes, cell_overlaps
from ..sldp import privtree as privtree_lib
from ..sldp.ldp_grid import grid_level, oue_bits, oue_probabilities
from ..sldp.margin import MIN_DELTA
from ..sldp.protocol import CALIBRATIONS, COUNTS, DEFAULT_THRESHOLD, LEAVES, SPLIT_RULES, run_protocol
from ..sldp.protocol import guarantee as sldp_guarantee
from . import register
from .base import Mechanism, clamp_to_domain

EPSILON = Param("epsilon", "float", "privacy budget", low=0.0)


def _box(grid) -> list[float]:
    return grid.domain.as_list()


def _area(level, box) -> np.ndarray:
    return (box[1] - box[0]) * (box[3] - box[2]) / 4.0 ** np.asarray(level, dtype=float)


def ones_column(bits: np.ndarray) -> pd.Series:
    """Each row's set bits as a list column (the compact form of OUE reports in a view)."""
    rows, cols = np.nonzero(bits)          # row-major: each user's ones, in order
    offsets = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(bits)))])
    return pa.ListArray.from_arrays(offsets, cols).to_pandas()


def oue_guarantee(epsilon: float, covers: str, note: str) -> dict:
    """The record of one OUE report per user (Wang et al. 2017): epsilon-LDP, p (1 - q) / (q (1 - p)) = e^eps."""
    return Guarantee(
        model="epsilon-LDP", epsilon=epsilon, delta=0.0, relation="any two inputs (local)", covers=covers,
        discretisation="bits only (OUE); each bit's probability is a double, so the exact epsilon exceeds "
                       "the recorded one by at most float rounding (< 1e-15)", note=note).as_dict()


def _release_surface(release: dict, grid) -> np.ndarray:
    """The released cells' counts (negatives set to 0) as a density averaged over each grid cell."""
    box = _box(grid)
    level, code = np.asarray(release["level"]), np.asarray(release["code"])
    ox, oy = cell_overlaps(level, code, box, grid.x, grid.y)
    value = np.maximum(np.asarray(release["count"], dtype=float), 0.0) / _area(level, box)
    return ox.T @ (oy * value[:, None])


class _Released(Mechanism):
    """A single-shard mechanism whose server output is a partition with counts (in view.attrs)."""

    interactive = True

    def partial(self, view, params, grid):
        return _release_surface(view.attrs["release"], grid)

    def estimate(self, total, n_users, params, grid):
        mass = total.sum() * grid.cell_area
        return total / mass if mass > 0 else total

    @staticmethod
    def _with_release(view: pd.DataFrame, cells: pd.DataFrame, moved: int) -> pd.DataFrame:
        view.attrs["release"] = {k: cells[k].tolist() for k in ("level", "code", "count")}
        view.attrs["clamped_to_box"] = moved
        return view


@register
class SLDP(_Released):
    name = "sldp"
    params = {"epsilon": EPSILON,
              "delta": Param("delta", "float", "SLDP delta: P(the split margin is exceeded), exact tail bound",
                             default=0.05, low=MIN_DELTA, high=0.5),
              "max_depth": Param("max_depth", "int", "deepest quadtree level", default=8, low=0, high=20),
              "split_rule": Param("split_rule", "choice", "per_child (authors' code; no privacy proof) or "
                                  "all_children (Alg. 2 as printed, Thm 4.1)", default="per_child",
                                  choices=SPLIT_RULES),
              "threshold": Param("threshold", "float", "split threshold Q: least users per privacy region "
                                 "(the paper's k)", default=DEFAULT_THRESHOLD, low=0.0),
              "calibration": Param("calibration", "choice", "sensitivity2 (Laplace(2/eps): eps per round) or "
                                   "paper (Alg. 1's Laplace(1/eps): 2 eps per round)", default="sensitivity2",
                                   choices=CALIBRATIONS),
              "leaves": Param("leaves", "choice", "merge (a parent whose children all stopped is one cell; "
                              "measured lower MRE) or children (the authors' code: its four children); "
                              "post-processing", default="merge", choices=LEAVES),
              "counts": Param("counts", "choice", "regions (each released region's exact user count, free under "
                              "the SLDP relation) or noisy (the transcript's n_hat)", default="regions",
                              choices=COUNTS, omit_default=True)}

    def guarantee(self, params):
        return sldp_guarantee(params["epsilon"], params["delta"], params["threshold"], params["split_rule"],
                              params["calibration"]).as_dict()

    def communication(self, params, grid):
        return 4.0 * params["max_depth"]   # at most 4 noisy indicators per round answered

    def randomize(self, points, params, grid, rng):
        xy, moved = clamp_to_domain(points, grid)
        res = run_protocol(xy, _box(grid), params["epsilon"], params["threshold"], params["max_depth"],
                           params["delta"], rng, split_rule=params["split_rule"], keep_reports=False,
                           calibration=params["calibration"], leaves=params["leaves"],
                           counts=self.params["counts"].value(params))
        region = res.user_cell.sort_values("user")
        view = pd.DataFrame({"user": points["user"].to_numpy(), "level": region["level"].to_numpy(),
                             "code": region["code"].to_numpy()})
        return self._with_release(view, res.cells, moved)

    def surfaces(self, view, params, grid):
        """Uniform on the user's region, averaged over the grid cells (a pdf on the grid)."""
        level = view["level"].to_numpy()
        ox, oy = cell_overlaps(level, view["code"].to_numpy(), _box(grid), grid.x, grid.y)
        return ox[:, :, None] * oy[:, None, :] / _area(level, _box(grid))[:, None, None]

    def likelihood(self, view, params, grid):
        """Uniform on the released region: proportional to the fraction of each grid cell inside
        it.  The protocol's stopping law inside the region is taken as location-independent."""
        return self.surfaces(view, params, grid)


@register
class PrivTree(_Released):
    name = "privtree"
    aggregate_only = True     # only the release leaves the curator: the posterior is the prior
    params = {"epsilon": EPSILON}

    def guarantee(self, params):
        return privtree_lib.guarantee(params["epsilon"] / 2, params["epsilon"] / 2).as_dict()

    def communication(self, params, grid):
        return 2.0    # each user hands its location to the curator

    def randomize(self, points, params, grid, rng):
        xy, moved = clamp_to_domain(points, grid)
        eps = params["epsilon"]
        leaves = privtree_lib.privtree(xy, _box(grid), eps / 2, eps / 2, rng)
        return self._with_release(points[["user"]].reset_index(drop=True), leaves, moved)

    def surfaces(self, view, params, grid):
        release = _release_surface(view.attrs["release"], grid)
        return np.broadcast_to(release, (len(view), *grid.shape))


@register
class OUEGrid(Mechanism):
    name = "ldp_oue_grid"
    params = {"epsilon": EPSILON,
              # each user's bit vector is materialised per shard: 4^6 bits x 5000 users = 20 MB
              "level": Param("level", "int", "grid of 2^level x 2^level cells, or 'auto': the granularity "
                             "guideline from the run's N and epsilon (locpriv.sldp.ldp_grid.grid_level)",
                             default=4, low=0, high=6, special=("auto",))}

    def for_users(self, params, n_users):
        if params["level"] != "auto":
            return params
        if n_users is None:
            raise ValueError("level: 'auto' sizes the grid from the run's number of users, which is known only "
                             "once the dataset is read here; give n as numbers or an explicit level")
        return {**params, "level": grid_level(n_users, params["epsilon"], self.params["level"].high)}

    def guarantee(self, params):
        return Guarantee(
            model="epsilon-LDP", epsilon=params["epsilon"], delta=0.0, relation="any two inputs (local)",
            covers="each user's location (clamped to the public domain box first)",
            discretisation="bits only (no real values released); each bit's probability is a double, so the "
                           "exact epsilon exceeds the recorded one by at most float rounding (< 1e-15)",
            note="optimized unary encoding (Wang et al. 2017) over a uniform grid of the public box").as_dict()

    def communication(self, params, grid):
        return float(4 ** params["level"])

    def randomize(self, points, params, grid, rng):
        xy, moved = clamp_to_domain(points, grid)
        cells = 4 ** params["level"]
        own = cell_codes(xy, _box(grid), params["level"])
        view = pd.DataFrame({"user": points["user"].to_numpy(),
                             "ones": ones_column(oue_bits(own, cells, params["epsilon"], rng))})
        view.attrs["clamped_to_box"] = moved
        return view

    def _cell_surface(self, values: np.ndarray, params, grid) -> np.ndarray:
        """(n, 4^level) cell values as (n, P, Q) densities on the grid (value / cell area)."""
        gx, gy = np.meshgrid(grid.x, grid.y, indexing="ij")
        code = cell_codes(np.column_stack([gx.ravel(), gy.ravel()]), _box(grid), params["level"])
        per_cell = values / _area(params["level"], _box(grid))
        return per_cell[:, code].reshape(len(values), *grid.shape)

    def partial(self, view, params, grid):
        ones = np.bincount(np.concatenate(view["ones"].to_numpy()).astype(np.int64), minlength=4 ** params["level"])
        return self._cell_surface(ones[None, :].astype(float), params, grid)[0]

    def estimate(self, total, n_users, params, grid):
        p, q = oue_probabilities(params["epsilon"])
        area = _area(params["level"], _box(grid))
        dens = (total - n_users * q / area) / (p - q) / n_users   # unbiased per cell (OUE)
        dens = np.maximum(dens, 0.0)
        mass = dens.sum() * grid.cell_area
        return dens / mass if mass > 0 else dens

    def likelihood(self, view, params, grid):
        """The bit probabilities as a function of the own cell: e^eps on reported ones, 1 on zeros
        (``adversary.likelihoods.oue_log_probability``), which is the surface normalised."""
        return self.surfaces(view, params, grid)

    def surfaces(self, view, params, grid):
        cells = 4 ** params["level"]
        weight = np.ones((len(view), cells))
        ones = view["ones"].to_numpy()
        weight[np.repeat(np.arange(len(view)), [len(o) for o in ones]),
               np.concatenate(ones).astype(np.int64)] = math.exp(params["epsilon"])
        return self._cell_surface(weight / weight.sum(axis=1, keepdims=True), params, grid)
