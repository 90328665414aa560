"""Laplace local DP for locations (seed 004) as a branch of the location DAG.

Each user clamps its location to the public domain box (counted in the view's
metadata; clamping is a public map, so the guarantee holds for every input) and
reports it with Laplace noise b_j = 2 (box side_j) / ε per coordinate (Theorem 1,
q = 2).  The server estimates the density by the naive KDE of the reports or by
the deconvoluting KDE (eq. 5), both in the separable GEMM form; the attack's
surface is the exact kernel at the report, so its best guess is the report.
"""

from __future__ import annotations

import numpy as np

from .. import kde, laplace_ldp
from ..params import Param
from . import register
from .base import BANDWIDTH, clamp_to_domain
from .fedkde import FedKDE


def _bounds(grid) -> np.ndarray:
    d = grid.domain
    return np.array([[d.xmin, d.xmax], [d.ymin, d.ymax]])


@register
class LaplaceLDP(FedKDE):
    name = "laplace_ldp"
    params = {"h": BANDWIDTH,
              "epsilon": Param("epsilon", "float", "LDP budget for the whole 2-D location", low=0.0),
              "estimator": Param("estimator", "choice", "server density estimator: naive KDE of the "
                                 "reports or the deconvoluting KDE (seed 004 eq. 5)", default="deconv",
                                 choices=("naive", "deconv"))}

    def guarantee(self, params):
        return {"model": "epsilon-LDP", "epsilon": params["epsilon"], "delta": 0.0,
                "note": "Laplace per coordinate, b_j = 2 (box side_j) / epsilon (seed 004 Theorem 1); "
                        "locations outside the box are clamped to it first"}

    def communication(self, params, grid):
        return 2.0

    def randomize(self, points, params, grid, rng):
        clamped, moved = clamp_to_domain(points, grid)
        noisy = laplace_ldp.randomize(clamped, _bounds(grid), params["epsilon"], rng, names=("x", "y"))
        view = points[["user"]].reset_index(drop=True)
        view["x"], view["y"] = noisy[:, 0], noisy[:, 1]
        view.attrs["clamped_to_box"] = moved
        return view

    def partial(self, view, params, grid):
        b = (tuple(laplace_ldp.scales(_bounds(grid), params["epsilon"]))
             if params["estimator"] == "deconv" else (0.0, 0.0))
        return kde.kde_sum(view[["x", "y"]].to_numpy(), grid.x, grid.y, params["h"], laplace_b=b)
