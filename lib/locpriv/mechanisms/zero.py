"""The 0-feature baseline ([RFF-KDE] §4.2.3): every user answers with a constant.

Best possible privacy (the answer does not depend on the location) and no
information: the estimate is the uniform density over the domain.
"""

from __future__ import annotations

import numpy as np

from ..dp import Guarantee
from . import register
from .base import Mechanism


@register
class Zero(Mechanism):
    name = "zero"
    params = {}

    def guarantee(self, params):
        return Guarantee(model="epsilon-LDP", epsilon=0.0, delta=0.0, relation="any two inputs (local)",
                         covers="each user's location", discretisation="none: the answer is a constant",
                         note="the response is independent of the location").as_dict()

    def randomize(self, points, params, grid, rng):
        return points[["user"]].reset_index(drop=True)

    def partial(self, view, params, grid):
        return np.full(grid.shape, float(len(view)))

    def estimate(self, total, n_users, params, grid):
        area = np.prod(np.ptp(np.array(grid.domain.as_list()).reshape(2, 2), axis=1))
        return np.full(grid.shape, 1.0 / area)

    def surfaces(self, view, params, grid):
        return np.ones((len(view), *grid.shape))

    def likelihood(self, view, params, grid):
        """The answer does not depend on the location: constant, the posterior is the prior."""
        return self.surfaces(view, params, grid)
