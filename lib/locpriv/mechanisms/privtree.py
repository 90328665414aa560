"""``privtree``: central-DP PrivTree partition (Zhang et al. 2016) as a branch of the location DAG.

A trusted curator holds the raw points (one shard); nothing per user is released, so every user's
attack surface is the published density (the attack learns what it learns about anyone).
Budget halves: tree and leaf counts, as the sldp study; the record's epsilon is for replacing one
user (2 eps, n is public), add/remove beside it.
"""

from __future__ import annotations

import numpy as np

from ..quadtree import cell_codes
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

    def tree(self, xy, grid, rng):
        """The curator's released leaves (level, code, count) of locations ``xy``: budget halves."""
        eps = self.settings["epsilon"]
        return privtree_lib.privtree(xy, domain_box(grid), eps / 2, eps / 2, rng)

    def randomize_points(self, points, grid, rng):
        xy, moved = clamp_to_domain(points, grid)
        leaves = self.tree(xy, grid, rng)
        return self.with_release(points[["user"]].reset_index(drop=True), leaves, moved)

    def surfaces(self, view, grid):
        release = release_surface(view.attrs["release"], grid)
        return np.broadcast_to(release, (len(view), *grid.shape))

    def audit_case(self, grid):
        """A dataset with and without one user (add/remove: the central relation a curator's pair
        instantiates): one user at the centre, the added one in the lower-left corner.  Scored: the
        released count of the leaf holding the corner (where the added point's count and its split
        decisions show), the number of leaves and the corner leaf's level."""
        from ..audit import cases
        from ..dp import ADD_REMOVE

        lo, hi = cases.domain_corners(grid)
        box = domain_box(grid)
        base = np.array([(lo + hi) / 2])
        plus = np.vstack([base, lo])
        corner = cell_codes(lo[None, :], box, privtree_lib.MAX_DEPTH)[0]

        def released(xy):
            def run(rng):
                leaves = self.tree(xy, grid, rng)
                level = leaves["level"].to_numpy()
                mine = np.flatnonzero(leaves["code"].to_numpy() == corner >> (2 * (privtree_lib.MAX_DEPTH - level)))
                return np.array([leaves["count"].iloc[mine[0]], len(leaves), level[mine[0]]])
            return cases.per_run(run, 3)
        return [cases.Pair("dataset with and without one user (corner): the corner leaf's count",
                           released(plus), released(base), lambda out: out[:, 0],
                           max_draws=cases.END_TO_END_MAX_DRAWS, box_free=True, relation=ADD_REMOVE)]
