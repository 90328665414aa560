"""Laplace local DP for locations ([Deconv-LDP]) as a branch of the location DAG.

Each user clamps its location to the public domain box (counted in the view's
metadata; clamping is a public map, so the guarantee holds for every input) and
reports it with Laplace noise b_j = 2 (box side_j) / ε per coordinate (Theorem 1,
q = 2), sampled exactly as discrete Laplace on a public power-of-two grid
(``locpriv.laplace_ldp``: ε-LDP for any two locations, proof there).  The server estimates the density by the naive KDE of the reports or by
the deconvoluting KDE (eq. 5), both in the separable GEMM form; the attack's
surface is the exact kernel at the report, so its best guess is the report.
"""

from __future__ import annotations

import numpy as np

from .. import laplace_ldp
from ..dp import Guarantee
from ..adversary import likelihoods
from ..params import Param
from . import register
from .base import BANDWIDTH, clamp_to_domain
from .fedkde import KDE, FedKDE, kde_partial


def _bounds(grid) -> np.ndarray:
    d = grid.domain
    return np.array([[d.xmin, d.xmax], [d.ymin, d.ymax]])


@register
class LaplaceLDP(FedKDE):
    name = "laplace_ldp"
    params = {"h": BANDWIDTH,
              "epsilon": Param("epsilon", "float", "LDP budget for the whole 2-D location", low=0.0),
              "estimator": Param("estimator", "choice", "server density estimator: naive KDE of the "
                                 "reports or the deconvoluting KDE ([Deconv-LDP] eq. 5)", default="deconv",
                                 choices=("naive", "deconv")),
              "kde": KDE}

    def guarantee(self, params):
        return Guarantee(
            model="epsilon-LDP", epsilon=params["epsilon"], delta=0.0, relation="any two inputs (local)",
            covers="each user's location (clamped to the public domain box first)",
            discretisation="each coordinate snapped to the public grid of step = largest power of two <= "
                           "box side / 1024, plus exact discrete Laplace noise of scale 2 (side / step) / "
                           "epsilon grid steps (Canonne, Kamath & Steinke 2020); reports on that grid",
            note="Farokhi 2020 Theorem 1 with q = 2; the sampler rounds its scale up, so the exact "
                 "epsilon is slightly below the recorded one").as_dict()

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
        return kde_partial(view, params, grid, laplace_b=b)

    def likelihood(self, view, params, grid):
        """prod_j exp(-|report_j - c_j| / b_j) at each cell centre c (Farokhi 2020, Theorem 1).

        Cell centres lie in the box, so clamping is the identity there; the released report
        is the snapped coordinate plus discrete Laplace noise, P proportional to
        exp(-|z_j - ĉ_j| / b_j) on the grid with b_j = ``laplace_ldp.scales`` in data units
        and a normaliser free of ĉ: exact up to snapping the centre (<= box side / 2048).
        """
        return likelihoods.row_scaled(likelihoods.product_laplace_logpdf(
            view[["x", "y"]].to_numpy(), grid, laplace_ldp.scales(_bounds(grid), params["epsilon"])))
