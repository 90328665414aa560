"""Bagdasaryan et al. 2022's distributed-DP location heatmaps as branches of the location DAG.

``dp_heatmap`` (adaptive hierarchical histogram, Bagdasaryan et al. 2022 Alg. 2)
and its ``heatmap_flat`` and ``heatmap_hierarchical`` baselines (their §6.2).
Users are the DAG's points: each is encoded on the canonical quadtree of the
evaluation domain (``locpriv.quadtree``, ``depth`` levels below the domain box)
and the three call the heatmaps library (``locpriv.heatmaps.adaptive.run_adaptive``,
``locpriv.heatmaps.baselines.flat`` / ``hierarchical``) — one implementation for
the DAG and the population-image study.  In that library each user's round
vector (a one-hot over the round's reporting nodes) carries its Pólya noise
share and the shards of ``shard_size`` users are summed per round; the
``aggregation`` parameter picks how that sum is formed: ``population`` draws
the exact law of the summed shares (discrete Laplace per shard; fast, equal in
distribution), ``per_client`` adds each user's own share to its vector and sums
mod 2^bits, ``secure`` runs the pairwise-masking protocol (slow: minutes for a
few thousand users).

Adapter: the library takes per-pixel user counts of a 2^D x 2^D image; users
in one pixel are exchangeable, so the points' finest-level quadtree cells are
that image (``UserPool.from_pixels``).  All of a run's users answer every
sub-query (``sampling="fixed"``): the DAG's N is the population.

The server publishes the rendered map only; it is a per-pixel density on the
quadtree's finest level, averaged over the evaluation grid by exact overlaps
(as the partitions of ``partitions.py``).  Nothing per user is released, so
every user's attack surface is the published map (as ``privtree``): an
aggregate-only mechanism whose Bayes adversary learns nothing beyond its prior.

Guarantee (distributed DP, add/remove one user; 2ε for replacing one user's
location, i.e. remove then add).  Proof sketch: a user adds 1 to one entry of
each sub-query's vector (L1 sensitivity 1 under add/remove); each shard's noise
is the sum of its users' Pólya(1/n, a) − Pólya(1/n, a) shares, i.e. discrete
Laplace with a = exp(−ε_t), so sub-query t is ε_t-DP (Goryczka & Xiong 2015,
Thm 5.1; Bagdasaryan et al. 2022 Thm 4.2), other shards' sums are independent
of the user, and basic composition gives Σ_t ε_t = ε (the library's budget
schedule spends exactly ε; ``hierarchical`` spends ε / L on each of L levels).
It holds only if secure aggregation reveals nothing but each shard's sum and
no user drops out (the DAG simulates no dropout).  ``heatmap_hierarchical``
keeps the level whose map is closest (MSE) to the true map, as the paper's
evaluation does: that choice reads the raw data, so its record has no epsilon
(``Guarantee.leaked``) — it is a reference for what the best level achieves.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..dp import ADD_REMOVE, REPLACE_ONE, Guarantee
from ..heatmaps import baselines
from ..heatmaps.adaptive import OPTIONS, AdaptiveParams, run_adaptive
from ..heatmaps.aggregation import AGGREGATIONS, SecAgg, UserPool
from ..heatmaps.guarantee import heatmap_guarantee
from ..params import Param
from ..quadtree import cell_codes, deinterleave, interleave
from . import register
from .base import clamp_to_domain
from .partitions import EPSILON, _Released

# 64 x 64 pixels by default, about the default 100 x 100 grid's resolution; the published map is up to
# 4^depth floats in the view's metadata, hence the cap
DEPTH = Param("depth", "int", "quadtree levels below the domain box (map of 2^depth x 2^depth pixels)",
              default=6, low=0, high=9)
AGGREGATION = Param("aggregation", "choice", "how shard sums are formed: population (exact law of the summed "
                    "Pólya shares, fast), per_client (each user's vector + its own share, mod 2^bits) or secure "
                    "(pairwise-masking secure aggregation)", default="population", choices=AGGREGATIONS)
SHARD_SIZE = Param("shard_size", "int", "users per secure-aggregation shard (Bagdasaryan et al. 2022 §6: 10 000)",
                   default=10_000, low=0)


def _secagg(params: dict) -> SecAgg:
    """The run's secure-aggregation setting; the secure mode's secrets come from the OS (never from the run's
    DP stream; no output depends on them) and its public layout too (no transcript is published here)."""
    return SecAgg(shard_size=params["shard_size"], mode=params["aggregation"])


def _pixels(points: pd.DataFrame, grid, depth: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Each user's finest-level quadtree pixel (x, y) in the domain box, and how many were clamped."""
    xy, moved = clamp_to_domain(points, grid)
    x, y = deinterleave(cell_codes(xy, grid.domain.as_list(), depth), depth)
    return x, y, moved


def _image(x: np.ndarray, y: np.ndarray, depth: int) -> np.ndarray:
    side = 1 << depth
    return np.bincount(x * side + y, minlength=side * side).reshape(side, side)


def _published(view: pd.DataFrame, heatmap: np.ndarray, depth: int, moved: int, detail: dict) -> pd.DataFrame:
    """The rendered map as a release of finest-level quadtree cells (mass per pixel, zeros dropped)."""
    side = 1 << depth
    x, y = np.divmod(np.flatnonzero(heatmap), side)
    cells = pd.DataFrame({"level": depth, "code": interleave(x, y, depth), "count": heatmap[x, y]})
    view = _Released._with_release(view, cells, moved)
    view.attrs.update(detail)
    return view


class _Heatmap(_Released):
    """Interactive (one shard of all users): the sub-queries need every user's answer."""

    aggregate_only = True    # the server sees the summed shards only: the Bayes adversary keeps its prior
    leak = ""                # private data the published map depends on beyond the noisy sums

    def guarantee(self, params):
        eps = params["epsilon"]
        # the heatmap study's wording of the model, so the DAG and the study state one guarantee
        model = heatmap_guarantee(eps, eps, params["aggregation"])["model"]
        record = Guarantee(
            # n is public in the DAG, so the implied relation is replace-one (2 eps), as for privtree
            model=model, epsilon=2 * eps, delta=0.0,
            relation=REPLACE_ONE, other_relations={ADD_REMOVE: eps},
            covers="the published map and every sub-query's shard sums, assuming the server learns only each "
                   "shard's sum and no user drops out",
            discretisation="integer counts plus integer (discrete Laplace) noise: exact",
            note="Bagdasaryan et al. 2022 §4-5: discrete-Laplace sum per shard and sub-query, basic "
                 "composition over sub-queries")
        return (record.leaked(self.leak) if self.leak else record).as_dict()

    def surfaces(self, view, params, grid):
        release = self.partial(view, params, grid)
        mass = release.sum() * grid.cell_area
        return np.broadcast_to(release / mass if mass > 0 else release, (len(view), *grid.shape))


@register
class DPHeatmap(_Heatmap):
    name = "dp_heatmap"
    defaults = AdaptiveParams()
    params = {"epsilon": EPSILON, "depth": DEPTH, "shard_size": SHARD_SIZE, "aggregation": AGGREGATION,
              "calibration": Param("calibration", "float", "c of Eq. 7: target noise std as a fraction of the "
                                   "mean count per node", default=defaults.calibration, low=0.0),
              "k_sigma": Param("k_sigma", "float", "split threshold in noise standard deviations (Eq. 6)",
                               default=defaults.k_sigma, low=0.0),
              "max_rounds": Param("max_rounds", "int", "sub-queries at most", default=defaults.max_rounds,
                                  low=0, high=30),
              "threshold": Param("threshold", "choice", "split threshold's noise level: paper sigma(max(eps_t, "
                                 "eps left)) or authors sigma(eps_t) (adaptive.py)", default=defaults.threshold,
                                 choices=OPTIONS["threshold"], omit_default=True),
              "start": Param("start", "choice", "first sub-query's tree: root, or children (the root's four)",
                             default=defaults.start, choices=OPTIONS["start"], omit_default=True),
              "collapse_floor": Param("collapse_floor", "float", "a leaf at or below max(floor, threshold / 4) "
                                      "is deleted (the authors use 5; <= 0: no floor)",
                                      default=defaults.collapse_floor, omit_default=True),
              "combine": Param("combine", "choice", "published map from the last sub-query, or every sub-query "
                               "combined by least squares over the tree (post-processing, no privacy cost)",
                               default=defaults.combine, choices=OPTIONS["combine"], omit_default=True),
              "render": Param("render", "choice", "counts to pixels: smooth (density varies inside a cell, each "
                              "cell keeps its count; post-processing, no privacy cost) or uniform within each cell",
                              default=defaults.render, choices=OPTIONS["render"], omit_default=True)}

    def communication(self, params, grid):
        """Upper bound: every sub-query's vector at most 4^depth entries (the exact Σ_t K_t is data-dependent
        and recorded in the view's metadata as ``communication``)."""
        return float(params["max_rounds"] * 4 ** params["depth"])

    def randomize(self, points, params, grid, rng):
        depth = params["depth"]
        x, y, moved = _pixels(points, grid, depth)
        config = AdaptiveParams(epsilon=params["epsilon"], users_per_round=len(points),
                                calibration=params["calibration"], k_sigma=params["k_sigma"],
                                max_rounds=params["max_rounds"], sampling="fixed", secagg=_secagg(params),
                                **{k: self.params[k].value(params)
                                   for k in ("threshold", "start", "collapse_floor", "combine", "render")})
        result = run_adaptive(UserPool.from_pixels(x, y, depth, sampling="fixed"), config, rng)
        return _published(points[["user"]].reset_index(drop=True), result.heatmap(), depth, moved,
                          {"communication": result.communication, "rounds": len(result.rounds),
                           "epsilon_spent": result.epsilon_spent, "epsilon_achieved": result.epsilon_achieved})


class _Baseline(_Heatmap):
    """A baseline of Bagdasaryan et al. 2022 §6.2: one library call on the users' pixel image."""

    params = {"epsilon": EPSILON, "depth": DEPTH, "shard_size": SHARD_SIZE, "aggregation": AGGREGATION}
    library = None     # the heatmaps library's function (population, n_users, epsilon, rng, secagg)

    def randomize(self, points, params, grid, rng):
        depth = params["depth"]
        x, y, moved = _pixels(points, grid, depth)
        result = self.library(_image(x, y, depth), len(points), params["epsilon"], rng, _secagg(params))
        return _published(points[["user"]].reset_index(drop=True), result.heatmap, depth, moved,
                          {"communication": result.communication, "epsilon_achieved": result.achieved_epsilon,
                           **result.detail})


@register
class HeatmapFlat(_Baseline):
    name = "heatmap_flat"
    library = staticmethod(baselines.flat)

    def communication(self, params, grid):
        return float(4 ** params["depth"])


@register
class HeatmapHierarchical(_Baseline):
    name = "heatmap_hierarchical"
    library = staticmethod(baselines.hierarchical)
    leak = ("the true map: the published level is the one closest (MSE) to it, as in the paper's "
            "evaluation")

    def communication(self, params, grid):
        return float(sum(4 ** level for level in range(1, params["depth"] + 1)))
