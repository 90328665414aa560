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
from ..params import Param
from . import register
from .base import BANDWIDTH, Mechanism

# Server side only: how the shard's KDE sum is computed from the same view.  Omitted from
# run parameters at its default, so runs configured before it existed keep their paths.
KDE = Param("kde", "choice", "server's KDE of the reports: exact (tiled, cut at 1e-13 of the kernel's "
            "peak) or binned (linear binning on a 4x finer grid: O(N) plus two small GEMMs, error "
            "O((grid step / 4h)^2) of the peak; for very large N)", default="exact",
            choices=("exact", "binned"), omit_default=True)


def kde_partial(view, params: dict, grid, laplace_b: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """The shard's KDE sum on the grid (``laplace_b``: deconvoluting kernel), as ``kde`` says."""
    estimator = kde.kde_binned if KDE.value(params) == "binned" else kde.kde_sum
    return estimator(view[["x", "y"]].to_numpy(), grid.x, grid.y, params["h"], laplace_b=laplace_b)


@register
class FedKDE(Mechanism):
    name = "fedkde"
    params = {"h": BANDWIDTH, "kde": KDE}

    def guarantee(self, params):
        return no_guarantee("no privacy: the exact kernel surface reveals the location").as_dict()

    def randomize(self, points, params, grid, rng):
        return points[["user", "x", "y"]].reset_index(drop=True)

    def partial(self, view, params, grid):
        return kde_partial(view, params, grid)

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
