"""``dp_heatmap``: Bagdasaryan et al. 2022's adaptive distributed-DP heatmap (Alg. 2) in the location DAG.

The adaptive hierarchical histogram over the quadtree of the domain box, its sub-queries summed
per secure-aggregation shard with Pólya noise shares (the common base, the guarantee and its
proof sketch: ``heatmap``).
"""

from __future__ import annotations

from ..heatmaps.adaptive import OPTIONS, AdaptiveParams, run_adaptive
from ..params import Param
from .base import TIMING
from .heatmap import AGGREGATION, DEPTH, SHARD_SIZE, TRANSPORT, VARIANT, Heatmap, pixels, published, secagg, user_pool
from .partitions import EPSILON


class DPHeatmap(Heatmap):
    """Adaptive distributed-DP heatmap (Bagdasaryan et al. 2022 Alg. 2): sub-queries refine the quadtree."""

    name = "dp_heatmap"
    defaults = AdaptiveParams()
    params = {
        "epsilon": EPSILON,
        "depth": DEPTH,
        "shard_size": SHARD_SIZE,
        "aggregation": AGGREGATION,
        "variant": VARIANT,
        "transport": TRANSPORT,
        "calibration": Param(
            "calibration",
            "float",
            "c of Eq. 7: target noise std as a fraction of the mean count per node",
            default=defaults.calibration,
            low=0.0,
        ),
        "k_sigma": Param(
            "k_sigma",
            "float",
            "split threshold in noise standard deviations (Eq. 6)",
            default=defaults.k_sigma,
            low=0.0,
        ),
        "max_rounds": Param("max_rounds", "int", "sub-queries at most", default=defaults.max_rounds, low=0, high=30),
        "threshold": Param(
            "threshold",
            "choice",
            "split threshold's noise level: paper sigma(max(eps_t, eps left)) or authors sigma(eps_t) (adaptive.py)",
            default=defaults.threshold,
            choices=OPTIONS["threshold"],
            omit_default=True,
        ),
        "start": Param(
            "start",
            "choice",
            "first sub-query's tree: root, or children (the root's four)",
            default=defaults.start,
            choices=OPTIONS["start"],
            omit_default=True,
        ),
        "collapse_floor": Param(
            "collapse_floor",
            "float",
            "a leaf at or below max(floor, threshold / 4) is deleted (the authors use 5; <= 0: no floor)",
            default=defaults.collapse_floor,
            omit_default=True,
        ),
        "combine": Param(
            "combine",
            "choice",
            "published map from the last sub-query, or every sub-query "
            "combined by least squares over the tree (post-processing, no privacy cost)",
            default=defaults.combine,
            choices=OPTIONS["combine"],
            omit_default=True,
        ),
        "timing": TIMING,
        "render": Param(
            "render",
            "choice",
            "counts to pixels: smooth (density varies inside a cell, each "
            "cell keeps its count; post-processing, no privacy cost) or uniform within each cell",
            default=defaults.render,
            choices=OPTIONS["render"],
            omit_default=True,
        ),
    }

    def timing_schedule(self):
        """At most max_rounds sub-queries; with fixed work each spends at least epsilon / (2 max_rounds)
        (``AdaptiveParams.min_round_epsilon``: the fixed-work delta needs a public floor)."""
        rounds = self.settings["max_rounds"]
        return rounds, self.settings["epsilon"] / (2 * rounds)

    def communication(self, grid):
        """Upper bound: every sub-query's vector at most 4^depth entries (the exact Σ_t K_t is data-dependent
        and recorded in the view's metadata as ``communication``)."""
        return float(self.settings["max_rounds"] * 4 ** self.settings["depth"])

    def adaptive_params(self, n_users: int) -> AdaptiveParams:
        """The library's parameters of a run of ``n_users`` (every user answers every sub-query)."""
        s = self.settings
        return AdaptiveParams(
            epsilon=s["epsilon"],
            users_per_round=n_users,
            calibration=s["calibration"],
            k_sigma=s["k_sigma"],
            max_rounds=s["max_rounds"],
            sampling="fixed",
            secagg=secagg(s),
            min_round_epsilon=self.timing_schedule()[1] if self.timing_safe else 0.0,
            **{k: s[k] for k in ("threshold", "start", "collapse_floor", "combine", "render")},
        )

    def audit_others(self) -> int:
        """Enough users in the far corner for a schedule of two sub-queries or more (issue 28: a population
        of three gives one, so a fault in any but the last round went unseen): the least n (in steps of
        2^(k/4)) whose first sub-query spends at most 3/8 of epsilon, so the first round is not the last
        (it would need more than half) and the last one spends most of the budget.  The first round's
        epsilon is a public function of n and the start tree's size (Eqs. 7-8), so the count is public.
        Few rounds keep the audit's power: its ratio's extreme needs every round's noise on the target's side."""
        s = self.settings
        cells = 1 if s["start"] == "root" or s["depth"] == 0 else 4
        n = 2
        while self.adaptive_params(n + 1).target_epsilon(n + 1, cells) > 0.375 * s["epsilon"] and n < 1 << 20:
            n = max(n + 1, int(n * 2**0.25))
        return n

    def run_pixels(self, x, y, rng):
        return run_adaptive(user_pool(x, y, self.settings["depth"], self.settings), self.adaptive_params(len(x)), rng)

    def accounted(self, result):
        return max(result.epsilon_spent, result.epsilon_achieved)

    def randomize_points(self, points, grid, rng):
        depth = self.settings["depth"]
        moved = pixels(points, grid, depth)[2]
        result = self.result(points, grid, rng)
        return published(
            points[["user"]].reset_index(drop=True),
            result.heatmap(),
            depth,
            moved,
            {
                "communication": result.communication,
                "rounds": len(result.rounds),
                "epsilon_spent": result.epsilon_spent,
                "epsilon_achieved": result.epsilon_achieved,
            },
            result.server_rounds,
            self.settings["shard_size"],
        )
