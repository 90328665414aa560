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
from ..dp.grid import finite
from ..params import Param
from .base import BANDWIDTH, Mechanism

# Server side only: how the shard's KDE sum is computed from the same view.  Omitted from
# run parameters at its default, so runs configured before it existed keep their paths.
KDE = Param(
    "kde",
    "choice",
    "server's KDE of the reports: exact (tiled, cut at 1e-13 of the kernel's "
    "peak) or binned (linear binning on a 4x finer grid: O(N) plus two small GEMMs, error "
    "O((grid step / 4h)^2) of the peak; for very large N)",
    default="exact",
    choices=("exact", "binned"),
    omit_default=True,
)


class FedKDE(Mechanism):
    """Exact federated KDE, no privacy ([RFF-KDE] Alg. 1: each user sends its Gaussian kernel on the grid).

    Trust model ``none``: the report is the exact kernel surface, which reveals the location, so
    no one the users could trust (server, aggregator) would make it private.
    """

    name = "fedkde"
    trust_model = "none"
    needs_domain = False
    params = {"h": BANDWIDTH, "kde": KDE}

    def claim(self):
        return no_guarantee("no privacy: the exact kernel surface reveals the location")

    def randomize_points(self, points, grid, rng):
        finite(points[["x", "y"]].to_numpy(), "locations")
        return points[["user", "x", "y"]].reset_index(drop=True)

    def kde_partial(self, view, grid, laplace_b: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
        """The shard's KDE sum on the grid (``laplace_b``: deconvoluting kernel), as ``kde`` says."""
        estimator = kde.kde_binned if self.settings["kde"] == "binned" else kde.kde_sum
        return estimator(view[["x", "y"]].to_numpy(), grid.x, grid.y, self.settings["h"], laplace_b=laplace_b)

    def partial(self, view, grid):
        return self.kde_partial(view, grid)

    def density(self, total, n_users, grid):
        return total / (n_users * kde.normaliser(self.settings["h"]))

    def surfaces(self, view, grid):
        return kde.kernel_surfaces(view[["x", "y"]].to_numpy(), grid.x, grid.y, self.settings["h"])

    def log_likelihood(self, view, grid):
        """A point mass: 0 on the grid cell holding the reported location, -inf elsewhere (the informed
        adversary's too: the report is the location)."""
        i, j = likelihoods.cell_of(view[["x", "y"]].to_numpy(), grid)
        log_lik = np.full((len(view), *grid.shape), -np.inf)
        log_lik[np.arange(len(view)), i, j] = 0.0
        return log_lik
