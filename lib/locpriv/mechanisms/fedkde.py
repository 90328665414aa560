"""Exact federated KDE ([RFF-KDE], Alg. 1): each user returns its Gaussian kernel on the grid.

The surface is a deterministic function of the location with a unique peak at
it, so the server's exact view *is* the location: we store that, and the
attacks reconstruct the surface from it.
"""

from __future__ import annotations

import numpy as np

from .. import kde
from ..adversary import likelihoods
from ..dp import no_guarantee
from . import register
from .base import BANDWIDTH, Mechanism


@register
class FedKDE(Mechanism):
    name = "fedkde"
    params = {"h": BANDWIDTH}

    def guarantee(self, params):
        return no_guarantee("no privacy: the exact kernel surface reveals the location").as_dict()

    def randomize(self, points, params, grid, rng):
        return points[["user", "x", "y"]].reset_index(drop=True)

    def partial(self, view, params, grid):
        return kde.kde_sum(view[["x", "y"]].to_numpy(), grid.x, grid.y, params["h"])

    def estimate(self, total, n_users, params, grid):
        return total / (n_users * kde.normaliser(params["h"]))

    def surfaces(self, view, params, grid):
        return kde.kernel_surfaces(view[["x", "y"]].to_numpy(), grid.x, grid.y, params["h"])

    def likelihood(self, view, params, grid):
        """A point mass: 1 on the grid cell holding the reported location, 0 elsewhere."""
        i, j = likelihoods.cell_of(view[["x", "y"]].to_numpy(), grid)
        lik = np.zeros((len(view), *grid.shape))
        lik[np.arange(len(view)), i, j] = 1.0
        return lik
