"""``privtree``: central-DP PrivTree partition (Zhang et al. 2016) as a branch of the location DAG.

A trusted curator holds the raw points (one shard); nothing per user is released, so every user's
attack surface is the published density (the attack learns what it learns about anyone), and the
population Bayes adversary keeps its prior.  The informed adversary (DP's: it knows every other
user's location) reads the published tree and counts against the others' counts
(``PrivTree.informed_log_likelihood``).
Budget halves: tree and leaf counts, as the sldp study; the record's epsilon is for replacing one
user (2 eps, n is public), add/remove beside it.
"""

from __future__ import annotations

import numpy as np

from ..adversary import informed
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
    aggregate_only = True  # only the release leaves the curator: the posterior is the prior
    params = {"epsilon": EPSILON}

    def claim(self):
        return privtree_lib.guarantee(self.settings["epsilon"] / 2, self.settings["epsilon"] / 2)

    def communication(self, grid):
        return 2.0  # each user hands its location to the curator

    def tree(self, xy, grid, rng):
        """The curator's released leaves (level, code, count) of locations ``xy``: budget halves."""
        eps = self.settings["epsilon"]
        return privtree_lib.privtree(xy, domain_box(grid), eps / 2, eps / 2, rng)

    def tree_arrays(self, paths, rng):
        """``tree`` as arrays (level, code, count, noise parameters), the same draws, from the locations'
        full-depth codes (``cell_codes`` at ``privtree_lib.MAX_DEPTH``): what the audit repeats."""
        eps = self.settings["epsilon"]
        return privtree_lib.leaves(paths, eps / 2, eps / 2, rng)

    def randomize_points(self, points, grid, rng):
        xy, moved = clamp_to_domain(points, grid)
        leaves = self.tree(xy, grid, rng)
        view = self.with_release(points[["user"]].reset_index(drop=True), leaves, moved)
        view.attrs["noise"] = leaves.attrs["noise"]  # what the curator drew with (published with the tree)
        return view

    def surfaces(self, view, grid):
        release = release_surface(view.attrs["release"], grid)
        return np.broadcast_to(release, (len(view), *grid.shape))

    informed_is_population = False

    def informed_log_likelihood(self, view, grid, others):
        """From the published tree and leaf counts, given the others' exact counts.

        Every split decision and leaf count is drawn with independent noise (``sldp.privtree``):
        split iff b(c_v) + Z_v > theta, b the biased count, and the leaf counts c_l + Z'_l, with
        the scales the release records (``view.attrs["noise"]``).  With the others known, the
        target at x adds 1 to the counts of the nodes on x's root-to-leaf path only, so log L(x)
        is the sum over those nodes of log P(decision | o_v + 1) - log P(decision | o_v) plus the
        leaf count's log-ratio (derivation: ``adversary.informed.PrivTreeLikelihood``);
        constant on each leaf, mixed over the grid cells by overlap.  The statistic is max - min
        over the leaves, bounded by the replace-one epsilon 2 eps the record states.
        """
        likelihood, path = self._informed_model(view, grid, others)
        mine = path[others.rows_of(view["user"].to_numpy())]
        return likelihood.evaluate(mine, grid)

    def informed_person_log_likelihood(self, view, owner, n_persons, grid, others):
        """The person-level invariant: every other person's rows known, the hypothesis "all k of the person's rows
        at one location" (``adversary.informed.PrivTreeLikelihood.person_values`` derives it); its range
        over the leaves is bounded by k times the replace-one epsilon (group privacy).  Each row's own
        statistic (the others, the person's other rows included, known) as ``informed_log_likelihood``."""
        likelihood, path = self._informed_model(view, grid, others)
        mine = path[others.rows_of(view["user"].to_numpy())]
        values = likelihood.person_values([mine[owner == i] for i in range(n_persons)])
        pieces = others.memo("privtree_pieces", lambda: informed.PieceMap(likelihood.level, likelihood.code, grid))
        return pieces.to_grid(values), informed.max_log_ratio(values), likelihood.statistic(mine)

    def realised_noise(self, view, points, grid):
        """Per released leaf: |released count − exact count| in grid steps, discrete Laplace of the recorded
        ``count_scale``.  The split decisions show only their sign, so their noise is not checked."""
        from ..audit.noise import DiscreteLaplace, Noise

        release, noise = view.attrs["release"], informed.recorded_noise(view, self.name)
        xy, _ = clamp_to_domain(points, grid)
        paths = cell_codes(xy, domain_box(grid), noise["max_depth"])
        z = privtree_lib.count_noise(release["level"], release["code"], release["count"], paths, noise)
        return [Noise("|leaf count - exact count|, grid steps", np.abs(z), DiscreteLaplace(noise["count_scale"]))]

    def _informed_model(self, view, grid, others):
        """The release's ``PrivTreeLikelihood`` and every user's full-depth code, made once per attack job."""
        release, noise = view.attrs["release"], informed.recorded_noise(view, self.name)

        def paths():  # every user's full-depth code, as the curator placed it (clamped to the box)
            xy, _ = clamp_to_domain(others.points, grid)
            return cell_codes(xy, domain_box(grid), noise["max_depth"])

        path = others.memo("privtree_paths", paths)
        likelihood = others.memo(
            "privtree_likelihood",
            lambda: informed.PrivTreeLikelihood(release["level"], release["code"], release["count"], noise, path),
        )
        return likelihood, path

    def audit_case(self, grid):
        """One user at the centre; the target in the lower-left corner, in the upper-right one, or absent.
        Two pairs: replace-one (target at one corner vs the other: the record's ε) and add/remove (target
        in the lower-left corner vs absent: ε / 2 on each half, the other relation).

        Scored: the exact log-likelihood ratio of the whole release (every leaf, its level, code and
        noisy count: the tree's shape is its split decisions) between the pair's two datasets, from
        the informed adversary's likelihood (``adversary.informed.privtree_path_log_ratio``, on the other
        user's path, which the audit knows as DP's adversary does): for a location z, log P(release |
        others + a user at z) − log P(release | others), the split-decision and count factors of the
        nodes on z's path, all others cancelling.  So the
        add/remove ratio is that value at the corner's leaf, and the replace-one ratio is its
        difference between the two corners' leaves.  Both datasets of a pair run the same
        parameters (PrivTree's θ, δ and scales do not depend on n), so no other factor differs; by
        Neyman–Pearson thresholds on the ratio are the most powerful events for the pair."""
        from ..audit import cases
        from ..dp import ADD_REMOVE

        lo, hi = cases.domain_corners(grid)
        box, depth = domain_box(grid), privtree_lib.MAX_DEPTH
        base = np.array([(lo + hi) / 2])
        others = cell_codes(base, box, depth)
        corners = cell_codes(np.array([lo, hi]), box, depth)

        def released(xy):
            paths = cell_codes(xy, box, depth)

            def run(rng):
                return informed.privtree_path_log_ratio(*self.tree_arrays(paths, rng), others, corners)

            return cases.per_run(run, 2)

        scored = "exact log-likelihood ratio of the whole release (every leaf and its count)"
        return [
            cases.Pair(
                "one user at the centre, the target in the lower-left vs the upper-right corner",
                released(np.vstack([base, lo])),
                released(np.vstack([base, hi])),
                lambda out: out[:, 0] - out[:, 1],
                max_draws=cases.END_TO_END_MAX_DRAWS,
                box_free=True,
                scored=scored,
            ),
            cases.Pair(
                "one user at the centre, with and without the target (lower-left corner)",
                released(np.vstack([base, lo])),
                released(base),
                lambda out: out[:, 0],
                max_draws=cases.END_TO_END_MAX_DRAWS,
                box_free=True,
                relation=ADD_REMOVE,
                scored=scored,
            ),
        ]
