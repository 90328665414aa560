"""The 0-feature baseline ([RFF-KDE] §4.2.3): every user answers with a constant.

Best possible privacy (the answer does not depend on the location) and no
information: the estimate is the uniform density over the domain.
"""

from __future__ import annotations

import numpy as np

from ..dp import Guarantee
from ..dp.grid import finite
from .base import Mechanism


class Zero(Mechanism):
    """The 0-feature baseline ([RFF-KDE] §4.2.3): a constant answer, the uniform density.

    Trust model ``local``: its record is a local-model claim (0-LDP): each user's device sends a
    constant and trusts no one, as every LDP mechanism's users do.  (``none`` is kept for the
    mechanisms whose reports reveal the location, where no trust model makes them private.)
    """

    name = "zero"
    trust_model = "local"
    needs_domain = False
    params = {}

    def claim(self):
        return Guarantee(
            model="epsilon-LDP",
            epsilon=0.0,
            delta=0.0,
            relation="any two inputs (local)",
            covers="each user's location",
            discretisation="none: the answer is a constant",
            note="the response is independent of the location",
        )

    def randomize_points(self, points, grid, rng):
        finite(points[["x", "y"]].to_numpy(), "locations")  # bad input is refused even where nothing is sent
        return points[["user"]].reset_index(drop=True)

    def partial(self, view, grid):
        return np.full(grid.shape, float(len(view)))

    def density(self, total, n_users, grid):
        area = np.prod(np.ptp(np.array(grid.domain.as_list()).reshape(2, 2), axis=1))
        return np.full(grid.shape, 1.0 / area)

    def surfaces(self, view, grid):
        return np.ones((len(view), *grid.shape))

    def log_likelihood(self, view, grid):
        """The answer does not depend on the location: constant, the posterior is the prior (for the informed
        adversary too)."""
        return np.zeros((len(view), *grid.shape))

    def audit_case(self, grid):
        """Any two locations (opposite corners)."""
        from ..audit.cases import Pair, domain_corners, randomized

        lo, hi = domain_corners(grid)

        def released(view):  # everything in the view but the user id: no columns, i.e. one constant
            rest = view.drop(columns="user")
            return rest.to_numpy(dtype=float) if rest.shape[1] else np.zeros((len(view), 1))

        return [
            Pair(
                "opposite corners",
                randomized(self, grid, lo, released),
                randomized(self, grid, hi, released),
                box_free=True,
            )
        ]
