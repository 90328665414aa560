"""What Bagdasaryan et al. 2022's distributed-DP location heatmaps share as branches of the location DAG.

``dp_heatmap`` (adaptive hierarchical histogram, Bagdasaryan et al. 2022 Alg. 2)
and its ``heatmap_flat`` and ``heatmap_hierarchical`` baselines (their §6.2), each in
its own module; this one holds their common base and helpers.

Users are the DAG's points: each is encoded on the canonical quadtree of the
evaluation domain (``locpriv.quadtree``, ``depth`` levels below the domain box)
and the three call the heatmaps library (``locpriv.heatmaps.adaptive.run_adaptive``,
``locpriv.heatmaps.baselines.flat`` / ``hierarchical``) — one implementation for
the DAG and the population-image study.  In that library each user's round
vector (a one-hot over the round's reporting nodes) carries its Pólya noise
share and the shards of ``shard_size`` users are summed per round; the
``aggregation`` parameter picks how that sum is formed: ``population`` draws
the exact law of the summed shares (discrete Laplace per shard; fast, equal in
distribution), ``per_client`` adds each user's own share to its vector and sums
mod 2^bits, ``secure`` runs the pairwise-masking protocol (slow: minutes for a
few thousand users).

Adapter: the library takes per-pixel user counts of a 2^D x 2^D image; users
in one pixel are exchangeable, so the points' finest-level quadtree cells are
that image (``UserPool.from_pixels``).  All of a run's users answer every
sub-query (``sampling="fixed"``): the DAG's N is the population.

The server publishes the rendered map only; it is a per-pixel density on the
quadtree's finest level, averaged over the evaluation grid by exact overlaps
(as the partitions of ``partitions``).  Nothing per user is released, so
every user's attack surface is the published map (as ``privtree``): an
aggregate-only mechanism whose Bayes adversary learns nothing beyond its prior.

Guarantee (distributed DP, add/remove one user; 2ε for replacing one user's
location, i.e. remove then add).  Proof sketch: a user adds 1 to one entry of
each sub-query's vector (L1 sensitivity 1 under add/remove); each shard's noise
is the sum of its users' Pólya(1/n, a) − Pólya(1/n, a) shares, i.e. discrete
Laplace with a = exp(−ε_t), so sub-query t is ε_t-DP (Goryczka & Xiong 2015,
Thm 5.1; Bagdasaryan et al. 2022 Thm 4.2), other shards' sums are independent
of the user, and basic composition gives Σ_t ε_t = ε (the library's budget
schedule spends exactly ε; ``hierarchical`` spends ε / L on each of L levels).
It holds only if secure aggregation reveals nothing but each shard's sum and
no user drops out (the DAG simulates no dropout).  ``heatmap_hierarchical``
keeps the level whose map is closest (MSE) to the true map, as the paper's
evaluation does: that choice reads the raw data, so its record has no epsilon
(``Guarantee.leaked``) — it is a reference for what the best level achieves.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..adversary import informed
from ..dp import ADD_REMOVE, REPLACE_ONE, Guarantee
from ..heatmaps.aggregation import AGGREGATIONS, TRANSPORTS, SecAgg, ShardedRound, UserPool
from ..heatmaps.guarantee import heatmap_guarantee
from ..heatmaps.polya import fixed_work_delta
from ..params import Param
from ..quadtree import cell_codes, deinterleave, interleave
from ..secagg import ProtocolParams
from ..secagg.protocol import VARIANTS
from .base import TIMING, clamp_to_domain
from .partitions import EPSILON, Released

# 64 x 64 pixels by default, about the default 100 x 100 grid's resolution; the published map is up to
# 4^depth floats in the view's metadata, hence the cap
DEPTH = Param(
    "depth", "int", "quadtree levels below the domain box (map of 2^depth x 2^depth pixels)", default=6, low=0, high=9
)
AGGREGATION = Param(
    "aggregation",
    "choice",
    "how shard sums are formed: population (exact law of the summed "
    "Pólya shares, fast), per_client (each user's vector + its own share, mod 2^bits) or secure "
    "(pairwise-masking secure aggregation)",
    default="population",
    choices=AGGREGATIONS,
)
VARIANT = Param(
    "variant",
    "choice",
    "secure aggregation's server model (aggregation secure only): honest_but_curious (it follows the "
    "protocol) or active (it may deviate: signed keys and a consistency round, locpriv.secagg.protocol)",
    default="honest_but_curious",
    choices=VARIANTS,
    omit_default=True,
)
TRANSPORT = Param(
    "transport",
    "choice",
    "how aggregation secure runs: simulation (clients as objects in the job's process) or loopback (the "
    "secure-aggregation service: client processes over TLS on 127.0.0.1, locpriv.secagg.service); same sums",
    default="simulation",
    choices=TRANSPORTS,
    omit_default=True,
)
SHARD_SIZE = Param(
    "shard_size",
    "int",
    "users per secure-aggregation shard (Bagdasaryan et al. 2022 §6: 10 000)",
    default=10_000,
    low=0,
)


def secagg(settings) -> SecAgg:
    """The run's secure-aggregation setting; the secure mode's secrets come from the OS (never from the run's
    DP stream; no output depends on them) and its public layout too (no transcript is published here).
    ``timing: fixed_work``: every client's shares by the fixed-work sampler (``polya.fixed_work_polya``)."""
    return SecAgg(
        shard_size=settings["shard_size"],
        mode=settings["aggregation"],
        protocol=ProtocolParams(variant=settings.get("variant", VARIANT.default)),
        transport=settings.get("transport", TRANSPORT.default),
        timing_safe=settings.get("timing") == "fixed_work",
    )


def pixels(points: pd.DataFrame, grid, depth: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Each user's finest-level quadtree pixel (x, y) in the domain box, and how many were clamped."""
    xy, moved = clamp_to_domain(points, grid)
    x, y = deinterleave(cell_codes(xy, grid.domain.as_list(), depth), depth)
    return x, y, moved


def image(x: np.ndarray, y: np.ndarray, depth: int) -> np.ndarray:
    side = 1 << depth
    return np.bincount(x * side + y, minlength=side * side).reshape(side, side)


def user_pool(x: np.ndarray, y: np.ndarray, depth: int, settings) -> UserPool:
    """The run's users (every one answers every sub-query) in fixed secure-aggregation shards: user i of
    the run in shard i // shard_size, so the shard sums (what the server learns) are kept."""
    return UserPool.from_pixels(x, y, depth, sampling="fixed", shard_size=settings["shard_size"])


def published(
    view: pd.DataFrame,
    heatmap: np.ndarray,
    depth: int,
    moved: int,
    detail: dict,
    rounds: list[ShardedRound],
    shard_size: int,
) -> pd.DataFrame:
    """The rendered map as a release of finest-level quadtree cells (mass per pixel, zeros dropped), and what
    the aggregation server learns: each sub-query's shard sums on its public tree (``server_rounds``) and
    each user's shard (public: the server runs the shards)."""
    side = 1 << depth
    x, y = np.divmod(np.flatnonzero(heatmap), side)
    cells = pd.DataFrame({"level": depth, "code": interleave(x, y, depth), "count": heatmap[x, y]})
    view = Released.with_release(view, cells, moved)
    view["shard"] = np.arange(len(view)) // shard_size
    view.attrs.update(detail)
    view.attrs["server_rounds"] = [
        {
            "levels": r.levels.tolist(),
            "codes": r.codes.tolist(),
            "epsilon": float(r.epsilon),
            "sensitivity": int(r.sensitivity),
            "sums": r.sums.tolist(),
            "r": r.r.tolist(),
        }
        for r in rounds
    ]
    return view


def server_rounds(view: pd.DataFrame) -> list[ShardedRound]:
    """The sub-queries' shard sums as ``published`` records them."""
    return [
        ShardedRound(
            np.asarray(r["levels"], dtype=np.int64),
            np.asarray(r["codes"], dtype=np.int64),
            r["epsilon"],
            r["sensitivity"],
            np.asarray(r["sums"], dtype=np.int64),
            np.asarray(r["r"], dtype=float),
        )
        for r in view.attrs["server_rounds"]
    ]


class Heatmap(Released):
    """Interactive (one shard of all users): the sub-queries need every user's answer.

    Trust model ``distributed``: the server learns only each shard's noisy sum through secure
    aggregation (no collusion between the server and the other users assumed).
    """

    trust_model = "distributed"
    aggregate_only = True  # the server sees the summed shards only: the Bayes adversary keeps its prior
    leak = ""  # private data the published map depends on beyond the noisy sums

    @classmethod
    def validate(cls, given: dict, where: str, workflow: bool = True) -> dict:
        settings = super().validate(given, where, workflow)
        for param in (VARIANT, TRANSPORT):
            if settings.get(param.name, param.default) != param.default and settings["aggregation"] != "secure":
                raise ValueError(
                    f"'{where}.{param.name}': {settings[param.name]} applies to the masking protocol, which runs "
                    f"with aggregation secure only (given: {settings['aggregation']}); set aggregation: secure"
                )
        if settings["timing"] == "fixed_work" and settings["aggregation"] == "population":
            raise ValueError(
                f"'{where}.timing': fixed_work times each client's share draw, but aggregation 'population' "
                "simulates the shares' sum and runs no client code; allowed: aggregation per_client or secure "
                "with timing fixed_work, or timing batch"
            )
        return settings

    def timing_schedule(self) -> tuple[int, float]:
        """(sub-queries at most, the least epsilon any of them spends): public, for the fixed-work delta."""
        raise NotImplementedError

    def timing_delta(self) -> float:
        """The fixed-work share sampler's delta for the replace-one record (``polya.fixed_work_delta``)."""
        rounds, least = self.timing_schedule()
        s = self.settings
        return fixed_work_delta(2 * s["epsilon"], least, rounds, s["shard_size"], 4 ** s["depth"])

    def claim(self):
        eps = self.settings["epsilon"]
        # the heatmap study's wording of the model, so the DAG and the study state one guarantee
        variant = self.settings.get("variant", VARIANT.default)
        model = heatmap_guarantee(eps, eps, self.settings["aggregation"], variant=variant)["model"]
        timing = (
            "; timing (fixed_work): every client's Polya shares by one 64-bit word and the same comparisons "
            "each (polya.fixed_work_polya), so a device's work is set by the public vector length; delta = "
            "that sampler's distance from exact over every share of the target's shard (polya.fixed_work_delta)"
            if self.timing_safe
            # (the batch wording is the records' since before the timing parameter: their bytes are kept)
            else "; timing (batch): a client's Polya share drawn by numpy's "
            "Gamma-Poisson costs work growing with the share, so a device answering one sub-query exposes "
            "its share through its response time, which epsilon does not cover (heatmaps.clients with "
            "SecAgg(timing_safe=True) draws the shares with fixed work, polya.fixed_work_polya)"
        )
        record = Guarantee(
            # n is public in the DAG, so the implied relation is replace-one (2 eps), as for privtree
            model=model.replace("epsilon-DP", "(epsilon, delta)-DP", 1) if self.timing_safe else model,
            epsilon=2 * eps,
            delta=self.timing_delta() if self.timing_safe else 0.0,
            relation=REPLACE_ONE,
            other_relations={ADD_REMOVE: eps},
            covers="the published map and every sub-query's shard sums, assuming the server learns only each "
            "shard's sum and no user drops out",
            discretisation="integer counts plus integer (discrete Laplace) noise: exact",
            note="Bagdasaryan et al. 2022 §4-5: discrete-Laplace sum per shard and sub-query, basic "
            "composition over sub-queries" + timing + "; the aggregation's own time depends on the public "
            "shard sizes only",
        )
        return record.leaked(self.leak) if self.leak else record

    def surfaces(self, view, grid):
        release = self.partial(view, grid)
        mass = release.sum() * grid.cell_area
        return np.broadcast_to(release / mass if mass > 0 else release, (len(view), *grid.shape))

    informed_is_population = False

    def informed_log_likelihood(self, view, grid, others):
        """From what the aggregation server learns: each sub-query's sum of the target's shard, against the
        others' known contribution.

        Per sub-query t the server sees every shard's sum S_{j,t} = (the shard's one-hot histogram
        over the round's public reporting nodes) + N_{j,t}, N the summed Pólya shares: discrete
        Laplace with a = exp(-eps_t) per entry (full shards, no dropout), independent over
        entries, shards and rounds; each round's tree is a function of the earlier sums.  The
        residual R_t = S_{j,t} - (the others' histogram) is e_{node_t(x)} + N_{j,t}, so
        log L(x) = sum_t [log p_t(R_t[node_t(x)] - 1) - log p_t(R_t[node_t(x)])], each term
        +-eps_t, eps_t as the release records it; node_t(x) is the reporting node holding x's
        pixel (a deleted leaf's pixels report to the nearest ancestor left, as the library
        encodes them).  Derivation in ``adversary.informed.heatmap_log_likelihood``; constant
        on each pixel, mixed over the grid cells by overlap.  The statistic is max - min over
        the pixels, at most sum_t 2 eps_t = 2 eps, the replace-one epsilon of the record.
        ``heatmap_hierarchical``'s published level is chosen on the true map, which this
        likelihood does not model (that run records no epsilon).
        """
        depth = self.settings["depth"]
        rounds = server_rounds(view)

        def users():  # every user's pixel (as the mechanism placed it) and each shard's users' pixels
            x, y, _ = pixels(others.points, grid, depth)
            pixel = x * (1 << depth) + y
            shard = others.view.set_index("user")["shard"].reindex(others.points["user"]).to_numpy()
            return pixel, [pixel[shard == j] for j in range(len(rounds[0].sums))]

        pixel, shard_pixels = others.memo("heatmap_users", users)
        pieces = others.memo("heatmap_pieces", lambda: informed.PieceMap(*informed.pixel_pieces(depth), grid))
        values = informed.heatmap_log_likelihood(
            rounds, shard_pixels, view["shard"].to_numpy(), pixel[others.rows_of(view["user"].to_numpy())], depth
        )
        return pieces.to_grid(values), informed.max_log_ratio(values)

    def realised_noise(self, view, points, grid):
        """Per sub-query, every full shard's sums minus its users' exact histogram over the round's reporting
        nodes (``adversary.informed.shard_noise``): discrete Laplace of scale sensitivity / eps_t, the Pólya
        shares summed over a full shard (r = 1), eps_t as the release records it; rounds of one scale pooled."""
        from ..audit.noise import DiscreteLaplace, Noise

        depth = self.settings["depth"]
        x, y, _ = pixels(points, grid, depth)
        pixel, shard = x * (1 << depth) + y, view["shard"].to_numpy()
        rounds = server_rounds(view)
        shard_pixels = [pixel[shard == j] for j in range(len(rounds[0].sums))] if rounds else []
        by_scale: dict[float, list] = {}
        for rnd in rounds:
            full = np.asarray(rnd.r) == 1.0
            by_scale.setdefault(rnd.sensitivity / rnd.epsilon, []).append(
                np.abs(informed.shard_noise(rnd, shard_pixels, depth)[1][full]).ravel()
            )
        return [
            Noise(f"|shard sum - exact count|, rounds of scale {scale:.4g}", np.concatenate(v), DiscreteLaplace(scale))
            for scale, v in sorted(by_scale.items())
        ]

    def result(self, points, grid, rng):
        """The heatmaps library's whole run (clients' shares, shard sums, server) on ``points``."""
        x, y, _ = pixels(points, grid, self.settings["depth"])
        return self.run_pixels(x, y, rng)

    def run_pixels(self, x, y, rng):
        """``result`` on the users' finest-level pixels (``pixels``): what the audit repeats thousands of
        times on the same users, so it finds their pixels once."""
        raise NotImplementedError

    def accounted(self, result) -> float:
        """The ε a run accounted for itself (the larger of planned and achieved), checked against the claim."""
        raise NotImplementedError

    def audit_others(self) -> int:
        """Users beside the target in the audit's population (all in the far corner pixel): two, since a
        secure shard needs >= 2 and one sub-query is every baseline's whole schedule."""
        return 2

    def audit_case(self, grid):
        """The whole run (each user's Pólya share, the shard sums, every sub-query the schedule makes) on a
        tiny population: ``audit_others`` users in the upper-right pixel, the target in the lower-left pixel
        (x) or in the upper-right one (x′); replace-one, the record's relation (n stays public and equal, so
        the schedule's rounds and ε_t are the same functions of the transcript under both).

        Scored: the exact log-likelihood ratio of everything the server learns, every sub-query's shard
        sums (the published map is a function of them), from the informed adversary's likelihood
        (``adversary.informed.heatmap_pair_log_ratio``: ``heatmap_log_likelihood``'s value at x's pixel minus at
        x′'s, evaluated at those two pixels only).  By the chain
        rule over the sub-queries (each round's tree a function of the earlier sums) only the target's
        shard's entries at its reporting nodes depend on it, the others' histogram being known (the same
        public function of the transcript under both inputs).  The run's own Σ_t ε_t, times 2 for this
        relation (moving one user changes two entries per sub-query), is checked against the claim
        (``Pair.accounts``)."""
        from ..audit import cases

        lo, hi = cases.domain_corners(grid)
        depth, others = self.settings["depth"], self.audit_others()
        other = pd.DataFrame({"user": np.arange(1, others + 1), "x": hi[0], "y": hi[1]})

        def codes(points):
            return cell_codes(clamp_to_domain(points, grid)[0], grid.domain.as_list(), depth)

        pair_codes, other_codes = codes(pd.DataFrame({"x": [lo[0], hi[0]], "y": [lo[1], hi[1]]})), codes(other)

        def released(xy):
            points = pd.concat([pd.DataFrame({"user": [0], "x": [xy[0]], "y": [xy[1]]}), other], ignore_index=True)
            x, y, _ = pixels(points, grid, depth)

            def run(rng):
                result = self.run_pixels(x, y, rng)
                llr = informed.heatmap_pair_log_ratio(result.server_rounds, other_codes, pair_codes, depth)
                return np.array([llr, 2 * self.accounted(result)])  # replace-one: twice the run's sum

            return cases.per_run(run, 2)

        return [
            cases.Pair(
                f"whole run, {others} users in the upper-right pixel, the target in the lower-left vs the "
                "upper-right pixel",
                released(lo),
                released(hi),
                lambda out: out[:, 0],
                max_draws=cases.END_TO_END_MAX_DRAWS,
                box_free=True,
                accounts=True,
                scored="exact log-likelihood ratio of every sub-query's shard sums",
            )
        ]


class Baseline(Heatmap):
    """A baseline of Bagdasaryan et al. 2022 §6.2: one library call on the users' pixel image."""

    params = {
        "epsilon": EPSILON,
        "depth": DEPTH,
        "shard_size": SHARD_SIZE,
        "aggregation": AGGREGATION,
        "variant": VARIANT,
        "transport": TRANSPORT,
        "timing": TIMING,
    }
    library = None  # the heatmaps library's function (population, n_users, epsilon, rng, secagg)

    def run_pixels(self, x, y, rng):
        return self.library(
            user_pool(x, y, self.settings["depth"], self.settings),
            len(x),
            self.settings["epsilon"],
            rng,
            secagg(self.settings),
        )

    def accounted(self, result):
        return max(result.epsilon, result.achieved_epsilon)

    def randomize_points(self, points, grid, rng):
        depth = self.settings["depth"]
        moved = pixels(points, grid, depth)[2]
        result = self.result(points, grid, rng)
        return published(
            points[["user"]].reset_index(drop=True),
            result.heatmap,
            depth,
            moved,
            {"communication": result.communication, "epsilon_achieved": result.achieved_epsilon, **result.detail},
            result.server_rounds,
            self.settings["shard_size"],
        )
