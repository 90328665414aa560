"""``sldp``: [SLDP]'s semi-local DP partition as a branch of the location DAG.

Interactive ([SLDP] Alg. 1/2): the protocol needs every user's answers each round, so the run is
one shard holding all its users (``interactive``).  The server learns the partition with its
counts and, per user, its privacy region (where the user stopped answering): the attack's
surface for a user is uniform on that region — SLDP protects a location only inside its region.
Whole budget on the partition; split threshold Q = ``threshold`` (default k = 20 users per region,
the paper's §5.2 / App. A.2); noise calibrated to the indicators' L1 sensitivity 2 unless
``calibration: paper`` (Alg. 1 as printed, recorded at its true cost 2 eps per round); ``leaves``
(children | merge) only changes which cells the server publishes; ``counts: regions`` (default)
gives each released region its exact number of users, free under the SLDP relation (``noisy``:
the transcript's n_hat); under ``leaves: children`` the child cells inside a region carry the
transcript's n_hat shifted to the region's exact count (``sldp.protocol``).  The split margin is
the exact tail of the report noise, valid for every delta > ``sldp.margin.MIN_DELTA``.

Guarantee (Kroshnin & Suvorikova 2025, Thm 4.1, ``all_children`` = Alg. 2 as printed):
(eps, delta)-DP for replacing one user's location by another inside its privacy region U*(X),
the cell of the ideal partition holding it; the region itself is revealed, and so are the exact
counts of the released regions (free: a released region is a stopped parent).  ``pooled``
(density-adaptive: dense children go on, a parent's sparse children stop together as one
region) has the same form for its own ideal regions, which may hold fewer than Q users (proof
sketch: ``sldp.protocol.guarantee``); its users' recorded region is the parent, the box of the
pooled region, so the attack's surface also spreads over the parent's dense children, which the
server knows the user is not in.  ``per_child`` (the authors' code, the default: Alg. 2 as
printed stops a parent as soon as any child is sparse, which on concentrated data leaves every
user at level 1) has no proof: its record has no epsilon ("none proven"), and its exact counts
of stopped children are a release without noise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..adversary import informed
from ..params import Param
from ..quadtree import cell_codes, cell_overlaps
from ..sldp.margin import MIN_DELTA, split_margin
from ..sldp.protocol import (
    CALIBRATIONS,
    COUNTS,
    DEFAULT_THRESHOLD,
    INDICATOR_STEP,
    LEAVES,
    MARGIN_SHARES,
    SPLIT_RULES,
    noise_scale,
    run_protocol,
    timing_tv,
)
from ..sldp.protocol import guarantee as sldp_guarantee
from .base import TIMING, clamp_to_domain
from .partitions import EPSILON, Released, domain_box, level_area


class SLDP(Released):
    """Semi-local DP quadtree partition (Kroshnin & Suvorikova 2025), interactive over rounds.

    Trust model ``local``: each user answers the rounds with its own noisy indicators; its
    guarantee is semi-local (it holds for moves inside the user's privacy region, which the
    protocol reveals).
    """

    name = "sldp"
    trust_model = "local"
    params = {
        "epsilon": EPSILON,
        "delta": Param(
            "delta",
            "float",
            "SLDP delta: P(the split margin is exceeded), exact tail bound",
            default=0.05,
            low=MIN_DELTA,
            high=0.5,
        ),
        "max_depth": Param("max_depth", "int", "deepest quadtree level", default=8, low=0, high=20),
        "split_rule": Param(
            "split_rule",
            "choice",
            "per_child (authors' code; no privacy proof), all_children (Alg. 2 as printed, Thm 4.1) or pooled "
            "(dense children go on, sparse siblings form one region; proven, regions may hold < Q users)",
            default="per_child",
            choices=SPLIT_RULES,
        ),
        "threshold": Param(
            "threshold",
            "float",
            "split threshold Q: least users per privacy region (the paper's k; pooled: per child that goes on)",
            default=DEFAULT_THRESHOLD,
            low=0.0,
        ),
        "calibration": Param(
            "calibration",
            "choice",
            "sensitivity2 (Laplace(2/eps): eps per round) or paper (Alg. 1's Laplace(1/eps): 2 eps per round)",
            default="sensitivity2",
            choices=CALIBRATIONS,
        ),
        "leaves": Param(
            "leaves",
            "choice",
            "merge (a parent whose children all stopped is one cell; "
            "measured lower MRE) or children (the authors' code: its four children); "
            "post-processing",
            default="merge",
            choices=LEAVES,
        ),
        "counts": Param(
            "counts",
            "choice",
            "regions (each released region's exact user count, free under "
            "the SLDP relation) or noisy (the transcript's n_hat)",
            default="regions",
            choices=COUNTS,
            omit_default=True,
        ),
        "timing": TIMING,
    }

    def claim(self):
        s = self.settings
        tv = timing_tv(s["epsilon"], s["max_depth"], s["calibration"]) if self.timing_safe else 0.0
        return sldp_guarantee(s["epsilon"], s["delta"], s["threshold"], s["split_rule"], s["calibration"], timing_tv=tv)

    def communication(self, grid):
        return 4.0 * self.settings["max_depth"]  # at most 4 noisy indicators per round answered

    def protocol(self, xy, grid, rng, keep_reports: bool = False, keep_user_reports: bool = False):
        """The whole protocol (clients and server) as configured on locations ``xy`` in the box
        (``keep_user_reports``: every user's indicators, what the informed adversary reads)."""
        s = self.settings
        return run_protocol(
            xy,
            domain_box(grid),
            s["epsilon"],
            s["threshold"],
            s["max_depth"],
            s["delta"],
            rng,
            split_rule=s["split_rule"],
            keep_reports=keep_reports,
            calibration=s["calibration"],
            leaves=s["leaves"],
            counts=s["counts"],
            keep_user_reports=keep_user_reports,
            timing_safe=self.timing_safe,
        )

    def randomize_points(self, points, grid, rng):
        xy, moved = clamp_to_domain(points, grid)
        res = self.protocol(xy, grid, rng, keep_user_reports=True)
        region = res.user_cell.sort_values("user")
        reports = res.user_reports
        # each user's noisy indicators, 4 per round answered, in grid steps: the rest of what it sent
        view = pd.DataFrame(
            {
                "user": points["user"].to_numpy(),
                "level": region["level"].to_numpy(),
                "code": region["code"].to_numpy(),
                "reports": pa.ListArray.from_arrays(reports.offsets, reports.steps).to_pandas(),
            }
        )
        view.attrs["noise"] = {"indicator_scale": reports.scale, "indicator_unit": round(1 / INDICATOR_STEP)}
        return self.with_release(view, res.cells, moved)

    def surfaces(self, view, grid):
        """Uniform on the user's region, averaged over the grid cells (a pdf on the grid)."""
        level = view["level"].to_numpy()
        ox, oy = cell_overlaps(level, view["code"].to_numpy(), domain_box(grid), grid.x, grid.y)
        return ox[:, :, None] * oy[:, None, :] / level_area(level, domain_box(grid))[:, None, None]

    def log_likelihood(self, view, grid):
        """The population adversary's: uniform on the released region, the log of the fraction of each grid
        cell inside it (the protocol's stopping law inside the region taken as location-independent)."""
        with np.errstate(divide="ignore"):  # cells outside the region are ruled out
            return np.log(self.surfaces(view, grid))

    informed_is_population = False

    def informed_log_likelihood(self, view, grid, others):
        """Everything the transcript holds about the target: its region and its noisy indicators in every
        round it answered (``adversary.informed.sldp_pieces`` derives it: 0 outside the region; inside,
        the last round's indicators weigh the region's four children when the user stopped at the region
        after reporting on them).  The other users' data do not enter (their reports are independent of
        the target's given their locations).  The statistic is the sup over pairs of locations inside the
        region (the SLDP relation): max - min over the four children."""
        noise = informed.recorded_noise(view, self.name)
        reports = view["reports"].to_numpy()
        offsets = np.concatenate([[0], np.cumsum([len(r) for r in reports])])
        steps = np.concatenate(reports).astype(np.int64) if len(reports) else np.zeros(0, dtype=np.int64)
        level, code, values = informed.sldp_pieces(
            view["level"].to_numpy(),
            view["code"].to_numpy(),
            offsets,
            steps,
            noise["indicator_scale"],
            noise["indicator_unit"],
        )
        return informed.pieces_on_grid(level, code, values, grid), informed.max_log_ratio(values)

    def realised_noise(self, view, points, grid):
        """Per user and round answered, its four indicators minus U · 1{its (clamped) location in that child}, in
        grid steps: discrete Laplace of the recorded ``indicator_scale``."""
        from ..audit.noise import DiscreteLaplace, Noise

        noise = informed.recorded_noise(view, self.name)
        reports = view["reports"].to_numpy()
        rounds = np.array([len(r) for r in reports], dtype=np.int64) // 4
        steps = (np.concatenate(reports) if len(reports) else np.zeros(0)).astype(np.int64).reshape(-1, 4)
        depth = self.settings["max_depth"]
        path = cell_codes(clamp_to_domain(points, grid)[0], domain_box(grid), depth)
        user = np.repeat(np.arange(len(view)), rounds)
        answered = np.arange(len(user)) - np.repeat(np.cumsum(rounds) - rounds, rounds) + 1  # round 1, 2, ...
        steps[np.arange(len(user)), (path[user] >> (2 * (depth - answered))) & 3] -= noise["indicator_unit"]
        return [
            Noise(
                "|indicator - exact indicator|, grid steps",
                np.abs(steps).ravel(),
                DiscreteLaplace(noise["indicator_scale"]),
            )
        ]

    def audit_case(self, grid):
        """The whole protocol on a constructed dataset, the target user moved inside its privacy region, across
        a cell boundary inside it.

        ``crowd`` users sit at one point in each root child (centre of its upper-right grandchild), so
        every root child holds >= Q and the ideal partition splits the root; inside the lower-left
        child they fill one grandchild only, so it stops there: U* is the lower-left root child, a
        proper sub-region (a quarter of the box); under ``pooled`` the crowd's grandchild goes on and
        U* is the union of the other three grandchildren.  The target (user 0) sits at the point where
        U*'s children meet, a hair (10⁻⁶ of the side) into its lower-left grandchild (x) or across the
        vertical boundary into its lower-right one (x′): the pair at the region's inner boundary and its
        corner, where a fault in placing a location in its cell would show; both lie inside U* under
        either rule.  ``crowd`` is the least (growing by a quarter) with crowd >= Q + 2 margin(4 crowd + 1):
        each child's n_hat is then above Q + margin unless its noise exceeds the margin (probability <= δ),
        so the noisy protocol splits the root too and the target answers round 2 about x's or x′'s
        grandchild; a run in which the root does not split is part of the law the audit samples.

        Scored: the exact log-likelihood ratio of the whole transcript between x and x′
        (``adversary.informed.sldp_pieces``, the informed adversary's likelihood of the target's region and
        its indicators in every round, at the scale the protocol recorded): by the chain rule over the
        rounds, the other users' reports and the split decisions (functions of all reports) have the same
        factor under both, so the target's own part is the whole ratio.  A location outside the target's
        released region has likelihood 0: a run whose region holds x but not x′ scores +inf (kept as
        ±1e9, above every finite ratio), the δ part of the guarantee.  The region's level and the round
        it was fixed in are beside it.
        """
        from ..audit import cases

        lo, hi = cases.domain_corners(grid)
        s = self.settings
        if s["max_depth"] < 2:
            raise ValueError("sldp: the audit case needs max_depth >= 2 (a privacy region below the root); got 1")
        q, scale = s["threshold"], noise_scale(s["epsilon"], s["calibration"])
        crowd = max(int(np.ceil(q)), 1)
        delta = s["delta"] / MARGIN_SHARES[s["split_rule"]]  # the margin the protocol uses
        while crowd < q + 2 * float(split_margin(np.array([4 * crowd + 1]), scale, delta, INDICATOR_STEP)[0]):
            crowd += crowd // 4 + 1
        centres = np.array([[0.375, 0.375], [0.875, 0.375], [0.375, 0.875], [0.875, 0.875]])
        base = np.concatenate([[lo], np.repeat(lo + centres * (hi - lo), crowd, axis=0)])
        box, depth = domain_box(grid), s["max_depth"]

        def released(where):
            xy = base.copy()
            xy[0] = lo + where * (hi - lo)

            def run(rng):
                res = self.protocol(xy, grid, rng, keep_reports=False, keep_user_reports=True)
                reports, region = res.user_reports, res.user_cell.iloc[:1]
                level, code, values = informed.sldp_pieces(
                    region["level"].to_numpy(),
                    region["code"].to_numpy(),
                    reports.offsets[:2],
                    reports.steps,
                    reports.scale,
                    round(1 / INDICATOR_STEP),
                )
                piece = paths[:, None] >> (2 * (depth - level[0][None, :])) == code[0][None, :]  # (2, 4)
                at = np.where(piece.any(axis=1), np.where(piece, values[0][None, :], 0.0).sum(axis=1), -np.inf)
                with np.errstate(invalid="ignore"):
                    llr = np.nan_to_num(at[0] - at[1], posinf=1e9, neginf=-1e9)
                return np.array([llr, region["level"].iloc[0], region["fixed_round"].iloc[0]])

            return cases.per_run(run, 3)

        eta = 1e-6
        points = np.array([[0.25 - eta, 0.25 - eta], [0.25 + eta, 0.25 - eta]])
        paths = cell_codes(lo + points * (hi - lo), box, depth)
        return [
            cases.Pair(
                "whole protocol, target across the vertical boundary where U*'s children meet, U* = the "
                "lower-left root child "
                + ("less its crowd's grandchild " if s["split_rule"] == "pooled" else "")
                + f"({crowd} users in each root child)",
                released(points[0]),
                released(points[1]),
                lambda out: out[:, 0],
                max_draws=cases.END_TO_END_MAX_DRAWS,
                box_free=True,
                scored="exact log-likelihood ratio of the whole transcript (the target's region and every report)",
            )
        ]
