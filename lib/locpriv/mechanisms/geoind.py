"""Geo-indistinguishability baseline ([RFF-KDE] §4.2.3): planar Laplace, then exact KDE.

Each user moves its location by planar Laplace noise (eq. 18), released on a
public grid (``locpriv.planar_laplace``: exact, Mironov-safe), and answers the
query as exact federated KDE from the perturbed point.  The server's view is
the perturbed point itself (the surface is a deterministic function of it), so
everything after randomisation is the exact-KDE branch.
"""

from __future__ import annotations

from .. import planar_laplace
from ..adversary import likelihoods
from ..params import Param
from . import register
from .base import BANDWIDTH
from .fedkde import KDE, FedKDE


@register
class GeoInd(FedKDE):
    name = "geoind"
    params = {"h": BANDWIDTH,
              "epsilon": Param("epsilon", "float", "geo-indistinguishability level per distance unit "
                               "of the dataset (per metre for real data)", low=0.0),
              "kde": KDE}

    def guarantee(self, params):
        return planar_laplace.guarantee(params["epsilon"], "distance units of the dataset").as_dict()

    def randomize(self, points, params, grid, rng):
        view = points[["user"]].reset_index(drop=True)
        moved = planar_laplace.perturb(points[["x", "y"]].to_numpy(), params["epsilon"], rng)
        view["x"], view["y"] = moved[:, 0], moved[:, 1]
        return view

    def likelihood(self, view, params, grid):
        """exp(-eps ||report - c||) at each cell centre c (Andrés et al. 2013, eq. 18).

        The report's law is the planar Laplace restricted to the release grid, P(z | x̂)
        proportional to exp(-eps ||z - x̂||) with a normaliser that does not depend on x̂
        (translation invariance of the grid), so this is exact up to snapping the centre
        to the grid (a shift below 1/(1024 eps)).
        """
        return likelihoods.row_scaled(likelihoods.planar_laplace_logpdf(
            view[["x", "y"]].to_numpy(), grid, params["epsilon"]))
