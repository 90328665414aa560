"""``ldp_kdtree``: LDP-KDTree (Alptekin, Balioglu & Gürsoy 2025), [SLDP]'s local-DP baseline, as a
branch of the location DAG (the algorithm and what of it is reconstructed: ``locpriv.sldp.ldp_kdtree``).

Interactive (each depth's encoding needs the splits above it), so one shard holds every user.
The server sees, per user, its group (the depth it answered at) and its OUE bits over that
depth's (node, bucket) values; it publishes the kd-tree's leaves with their counts, the
density being each leaf's count spread uniformly over it.  The attack surface of a user is
the exact OUE posterior under a uniform prior: weight e^ε on the grid cells whose (node,
bucket) value the user reported as 1, 1 elsewhere (grid-cell centres decide the value).

Guarantee: ε-LDP for any two locations of one user (one report per user; proof in
``sldp.ldp_kdtree``), covering each user's location after clamping to the public box.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..adversary import informed
from ..params import Param
from ..sldp import ldp_kdtree as kd
from ..sldp.range_queries import overlap_fraction
from .base import clamp_to_domain
from .partitions import EPSILON, Released, domain_box, ones_column, oue_guarantee, oue_noise


def _grid_centres(grid) -> np.ndarray:
    gx, gy = np.meshgrid(grid.x, grid.y, indexing="ij")
    return np.column_stack([gx.ravel(), gy.ravel()])


def _splits(release: dict, height: int) -> list[np.ndarray]:
    flat = np.asarray(release["splits"], dtype=float)
    return [flat[2**level - 1 : 2 ** (level + 1) - 1] for level in range(height)]


class LDPKDTree(Released):
    """LDP kd-tree with private medians (Alptekin, Balioglu & Gürsoy 2025), interactive over its depths.

    Trust model ``local``: each user perturbs its own OUE report before sending it.
    """

    name = "ldp_kdtree"
    trust_model = "local"
    params = {
        "epsilon": EPSILON,
        "height": Param(
            "height",
            "int",
            "kd-tree depth: 2^height leaves, one user group per depth",
            default=kd.DEFAULT_HEIGHT,
            low=1,
            high=10,
        ),
        "buckets": Param(
            "buckets",
            "int",
            "buckets per node along its split axis (CALC_MED)",
            default=kd.DEFAULT_BUCKETS,
            low=2,
            high=64,
        ),
    }

    def claim(self):
        return oue_guarantee(
            self.settings["epsilon"],
            covers="each user's location (clamped to the public domain box first); every user sends one "
            "report, in one group",
            note="LDP-KDTree (Alptekin, Balioglu & Gursoy 2025) as reconstructed in locpriv.sldp.ldp_kdtree: "
            "population division over the depths, OUE over each depth's (node, bucket) values, "
            "the tree and counts are post-processing",
        )

    def communication(self, grid):
        return float(2 ** (self.settings["height"] - 1) * self.settings["buckets"])  # the deepest group's bits

    def tree(self, xy, grid, rng) -> kd.KDTreeResult:
        """The whole protocol (every group's OUE reports, the server's medians) on locations ``xy``."""
        s = self.settings
        return kd.ldp_kdtree(xy, domain_box(grid), s["epsilon"], s["height"], rng, s["buckets"], keep_reports=True)

    def randomize_points(self, points, grid, rng):
        xy, moved = clamp_to_domain(points, grid)
        res = self.tree(xy, grid, rng)
        ones = pd.Series([None] * len(xy), dtype=object)
        for members, bits in zip(res.members, res.reports, strict=True):
            ones.iloc[members] = ones_column(bits).to_numpy()
        view = pd.DataFrame({"user": points["user"].to_numpy(), "level": res.group, "ones": ones})
        view.attrs["release"] = {
            **{k: res.leaves[k].tolist() for k in ("x0", "x1", "y0", "y1", "count")},
            "splits": np.concatenate(res.splits).tolist(),
        }
        view.attrs["clamped_to_box"] = moved
        view.attrs["noise"] = {"epsilon": self.settings["epsilon"]}  # every group's OUE epsilon
        return view

    def partial(self, view, grid):
        """Leaf counts (negatives set to 0) spread uniformly over each leaf, as a density on the grid."""
        r = view.attrs["release"]
        leaves = np.column_stack([r["x0"], r["x1"], r["y0"], r["y1"]])
        half_x, half_y = (grid.x[1] - grid.x[0]) / 2, (grid.y[1] - grid.y[0]) / 2
        # fraction of each leaf's width (height) inside each grid column (row): separable
        cols = np.column_stack([grid.x - half_x, grid.x + half_x, np.zeros_like(grid.x), np.ones_like(grid.x)])
        rows = np.column_stack([grid.y - half_y, grid.y + half_y, np.zeros_like(grid.y), np.ones_like(grid.y)])
        fx = overlap_fraction(cols, np.column_stack([leaves[:, :2], np.zeros(len(leaves)), np.ones(len(leaves))]))
        fy = overlap_fraction(rows, np.column_stack([leaves[:, 2:], np.zeros(len(leaves)), np.ones(len(leaves))]))
        mass = fx @ (np.maximum(np.asarray(r["count"], dtype=float), 0.0)[:, None] * fy.T)
        return mass / grid.cell_area

    def log_likelihood(self, view, grid):
        """log P(report | own cell): eps (as the view records it) on the cells whose (node, bucket) value the
        user reported as 1, 0 elsewhere, a grid cell's value being its centre's (the informed adversary's
        too: a per-user report)."""
        s = self.settings
        epsilon = informed.recorded_noise(view, self.name)["epsilon"]
        splits = _splits(view.attrs["release"], s["height"])
        centres = _grid_centres(grid)
        out = np.empty((len(view), *grid.shape))
        levels = view["level"].to_numpy()
        for level in np.unique(levels):
            value = kd.values(centres, splits[:level], domain_box(grid), s["buckets"])
            for i in np.flatnonzero(levels == level):
                out[i] = np.where(np.isin(value, view["ones"].iloc[i]), epsilon, 0.0).reshape(grid.shape)
        return out

    def surfaces(self, view, grid):
        """The OUE posterior of each user over the grid cells (uniform prior), as a pdf on the grid."""
        weight = np.exp(self.log_likelihood(view, grid))
        return weight / (weight.sum(axis=(1, 2), keepdims=True) * grid.cell_area)

    def realised_noise(self, view, points, grid):
        """Per depth group: each member's report's bits set outside its own (node, bucket) value (clamped
        location, the released splits above the depth), OUE at the recorded epsilon."""
        s = self.settings
        xy, _ = clamp_to_domain(points, grid)
        splits = _splits(view.attrs["release"], s["height"])
        epsilon = informed.recorded_noise(view, self.name)["epsilon"]
        levels, ones = view["level"].to_numpy(), view["ones"].to_numpy()
        out = []
        for level in np.unique(levels):
            rows = np.flatnonzero(levels == level)
            own = kd.values(xy[rows], splits[:level], domain_box(grid), s["buckets"])
            bits = 2**level * s["buckets"]
            out.append(oue_noise(ones[rows], own, bits, epsilon, f"depth {level}: OUE bits set outside the own value"))
        return out

    def audit_case(self, grid):
        """The whole protocol on a small dataset, the target (user 0) near the lower-left vs the
        upper-right corner; other users: a public 4 x height lattice.

        Scored: the exact log-likelihood ratio of the whole transcript between the two inputs.  By the
        chain rule over the depths (each depth's splits a function of the earlier reports; the groups a
        location-free permutation), only the target's own reports depend on its location: at each depth it
        reports at, its OUE bits over the (node, bucket) values under the released splits, whose law at
        location z is p = 1/2 on z's value and q = 1/(e^ε + 1) elsewhere, so one report's ratio is
        ε (b_{v(x)} − b_{v(x′)}) (log p(1 − q) / (q(1 − p)) = ε).  The ratio is ε Σ_depths (b_{v(x)} −
        b_{v(x′)}) over the depths the target reported at, at the ε the release records; a depth at which
        x and x′ share a value adds 0."""
        from ..audit import cases

        lo, hi = cases.domain_corners(grid)
        s = self.settings
        height, box = s["height"], domain_box(grid)
        ticks = (np.arange(4 * height) + 0.5) / (4 * height)
        others = lo + np.column_stack([ticks, ticks[::-1]]) * (hi - lo)
        pair = np.array([lo + 0.01 * (hi - lo), lo + 0.99 * (hi - lo)])

        def released(target):
            xy = np.vstack([target, others])

            def run(rng):
                res = self.tree(xy, grid, rng)
                llr = 0.0
                for level, (members, bits) in enumerate(zip(res.members, res.reports, strict=True)):
                    for row in np.flatnonzero(members == 0):  # every report the target sent at this depth
                        at_x, at_xp = bits[row, kd.values(pair, res.splits[:level], box, s["buckets"])]
                        llr += s["epsilon"] * (float(at_x) - float(at_xp))
                return np.array([llr])

            return cases.per_run(run, 1)

        return [
            cases.Pair(
                "whole protocol, target near the lower-left vs the upper-right corner",
                released(pair[0]),
                released(pair[1]),
                max_draws=cases.END_TO_END_MAX_DRAWS,
                box_free=True,
                scored="exact log-likelihood ratio of the target's whole part of the transcript (every report)",
            )
        ]
