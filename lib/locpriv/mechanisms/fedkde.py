"""Exact federated KDE (seed 000, Alg. 1): each user returns its Gaussian kernel on the grid.

The surface is a deterministic function of the location with a unique peak at
it, so the server's exact view *is* the location: we store that, and the
attacks reconstruct the surface from it.
"""

from __future__ import annotations

from .. import kde
from . import register
from .base import BANDWIDTH, Mechanism


@register
class FedKDE(Mechanism):
    name = "fedkde"
    params = {"h": BANDWIDTH}

    def guarantee(self, params):
        return {"model": "none", "epsilon": None, "delta": None,
                "note": "no privacy: the exact kernel surface reveals the location"}

    def randomize(self, points, params, grid, rng):
        return points[["user", "x", "y"]].reset_index(drop=True)

    def partial(self, view, params, grid):
        return kde.kde_sum(view[["x", "y"]].to_numpy(), grid.x, grid.y, params["h"])

    def estimate(self, total, n_users, params, grid):
        return total / (n_users * kde.normaliser(params["h"]))

    def surfaces(self, view, params, grid):
        return kde.kernel_surfaces(view[["x", "y"]].to_numpy(), grid.x, grid.y, params["h"])
