"""``privtree``: central-DP PrivTree partition (Zhang et al. 2016) as a branch of the location DAG.

A trusted curator holds the raw points (one shard); nothing per user is released, so every user's
attack surface is the published density (the attack learns what it learns about anyone).
Budget halves: tree and leaf counts, as the sldp study; the record's epsilon is for replacing one
user (2 eps, n is public), add/remove beside it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..sldp import privtree as privtree_lib
from .base import clamp_to_domain
from .partitions import EPSILON, Released, domain_box, release_surface


class PrivTree(Released):
    """Central-DP PrivTree partition (Zhang et al. 2016): a curator's noisy quadtree of all locations.

    Trust model ``central``: the curator sees every raw location and releases only the noisy tree.
    """

    name = "privtree"
    trust_model = "central"
    aggregate_only = True     # only the release leaves the curator: the posterior is the prior
    params = {"epsilon": EPSILON}

    def claim(self):
        return privtree_lib.guarantee(self.settings["epsilon"] / 2, self.settings["epsilon"] / 2)

    def communication(self, grid):
        return 2.0    # each user hands its location to the curator

    def randomize_points(self, points, grid, rng):
        xy, moved = clamp_to_domain(points, grid)
        eps = self.settings["epsilon"]
        leaves = privtree_lib.privtree(xy, domain_box(grid), eps / 2, eps / 2, rng)
        return self.with_release(points[["user"]].reset_index(drop=True), leaves, moved)

    def surfaces(self, view, grid):
        release = release_surface(view.attrs["release"], grid)
        return np.broadcast_to(release, (len(view), *grid.shape))

    def audit_case(self, grid):
        """A dataset with and without one user (add/remove: the central relation a curator's pair instantiates)."""
        from ..audit import cases
        from ..dp import ADD_REMOVE

        lo, hi = cases.domain_corners(grid)
        base = pd.DataFrame({"user": [0], "x": [(lo[0] + hi[0]) / 2], "y": [(lo[1] + hi[1]) / 2]})
        plus = pd.concat([base, pd.DataFrame({"user": [1], "x": [lo[0]], "y": [lo[1]]})], ignore_index=True)

        def released(points):
            def sample(n, rng):
                out = np.empty((n, 3))
                for i in range(n):
                    r = self.randomize(points, rng=rng, domain=grid).attrs["release"]
                    level, count = np.asarray(r["level"]), np.asarray(r["count"], dtype=float)
                    out[i] = len(level), count.sum(), level.max()
                return out
            return sample
        return [cases.Pair("dataset with and without one user (corner)", released(plus), released(base),
                           max_draws=cases.CENTRAL_MAX_DRAWS, box_free=True, relation=ADD_REMOVE)]
