"""What an audit case is made of: the :class:`Pair` type and the helpers the mechanisms' cases share.

Each mechanism states its own worst-case neighbouring inputs (``Mechanism.audit_pairs(grid)``, on
its class beside the guarantee it audits): pairs of samplers (outputs at x and at x′) for its
parameter setting on one public domain.  A mechanism whose guarantee states no ε has none (``[]``);
one that states an ε and defines none is refused by the config check.

End to end: a sampler runs the mechanism's own client *and* server code on a whole (small,
constructed) dataset and scores what the mechanism releases -- not one building block of it
(issue 28: sampling SLDP's ``child_reports``, ldp_kdtree's root OUE bits or the heatmaps' shard
noise alone missed a protocol drawing the wrong scale, users reporting at every level and a last
round overspending).  Such a run costs milliseconds, so its draws are capped
(``END_TO_END_MAX_DRAWS``: enough to refute the planted faults of
``tests/privacy/test_audit_faults.py`` at the default draws).  A case whose mechanism accounts its
budget per run (Σ_t ε_t of the heatmaps' sub-queries) returns that as its last column
(``Pair.accounts``): the stage checks it against the claim at run time.

Every feature the estimator sees is a public function of the released output,
so an event on it is an output event and the bound is sound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..domain import Grid

Sampler = Callable[[int, np.random.Generator], np.ndarray]

# Parameters that only change what the server computes from the reports (or the
# run's size): they cannot change a user's output law, so audits ignore them.
SERVER_SIDE = {"n", "h", "estimator", "kde"}
# End-to-end cases run the mechanism on a whole dataset per draw (1-5 ms of CPU), so their draws are
# capped: 3,000 per input refutes every planted fault of tests/privacy/test_audit_faults.py.
END_TO_END_MAX_DRAWS = 3_000
WHOLE_REPORT = "exact log-likelihood ratio of the user's whole report (and its raw coordinates)"
# Users per randomize call for mechanisms whose view is large per user (OUE: 4^level bits each).
CHUNK = 20_000


@dataclass(frozen=True)
class Pair:
    name: str  # which neighbouring inputs
    sample_x: Sampler
    sample_xp: Sampler
    statistic: Callable[[np.ndarray], np.ndarray] | None = None
    distance: float = 1.0  # d(x, x′) for metric DP, else 1
    max_draws: int | None = None  # cost cap, recorded in the result
    # the output law is the same on every domain box (outputs are cell codes, bits or counts
    # of points placed at the same relative positions), so one audit serves every dataset
    box_free: bool = False
    # the neighbouring relation the pair instantiates, when it is not the guarantee's main one
    relation: str | None = None
    # the samplers' last column is the ε the draw's run accounted for itself (Σ_t ε_t): checked
    # against the claim at run time, not shown to the estimator
    accounts: bool = False
    # what the estimator's events are built on (the audit table's ``scored`` column)
    scored: str = "the case's features of the release"


def audit_params(params: dict) -> dict:
    """The parameters that can change a user's output law (the audit's identity)."""
    return {k: v for k, v in sorted(params.items()) if k not in SERVER_SIDE}


def _points(xy, n: int) -> pd.DataFrame:
    return pd.DataFrame({"user": np.arange(n, dtype=np.int64), "x": float(xy[0]), "y": float(xy[1])})


def randomized(mech, grid: Grid, xy, columns) -> Sampler:
    """Sampler: n users at xy through the configured mechanism's client side, ``columns(view)`` as (n, k)."""

    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        parts = [
            columns(mech.randomize(_points(xy, min(CHUNK, n - i)), rng=rng, domain=grid)) for i in range(0, n, CHUNK)
        ]
        return np.concatenate(parts)

    return sample


def per_run(run: Callable[[np.random.Generator], np.ndarray], width: int) -> Sampler:
    """Sampler: one whole run of the mechanism per draw, ``run(rng)`` its ``width`` features."""

    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty((n, width))
        for i in range(n):
            out[i] = run(rng)
        return out

    return sample


def whole_report(
    mech, grid: Grid, name: str, a, b, *, at=None, raw=None, distance: float = 1.0, relation: str | None = None
) -> Pair:
    """A pair of users at ``a`` and at ``b`` through the configured mechanism's client side, each draw scored by
    the exact log-likelihood ratio of *everything* the server holds from the user: the sum over all the view's
    rows with its id of log L(row | a) − log L(row | b), from the mechanism's own likelihood at the two points
    (``Mechanism.point_log_likelihood``).  A user who sends two reports (or any column the likelihood reads)
    is scored on both, whatever features a case's author would have picked; by Neyman–Pearson, thresholds on
    this ratio are the most powerful events for the pair (for the law the likelihood states).

    ``at``: the two points the ratio is evaluated at, if not a and b (an input outside the box is scored at
    the box point the mechanism clamps it to: any points give a public statistic, so the bound stays
    sound); ``raw(view)``: per-row raw outputs appended when every user has one row (their float
    granularity is what catches Mironov's attack on textbook samplers); ``distance``: d(a, b) for a metric
    guarantee.
    """
    points = np.array([a, b] if at is None else at, dtype=float)

    def columns(view: pd.DataFrame) -> np.ndarray:
        users, row_user = np.unique(view["user"].to_numpy(), return_inverse=True)
        ll = mech.point_log_likelihood(view, points, grid)
        llr = np.bincount(row_user, weights=ll[:, 0] - ll[:, 1], minlength=len(users))
        if raw is None or len(users) != len(view):
            return llr[:, None]
        return np.column_stack([llr, np.asarray(raw(view), dtype=float)[np.argsort(row_user)]])

    return Pair(
        name,
        randomized(mech, grid, a, columns),
        randomized(mech, grid, b, columns),
        lambda out: out[:, 0],
        distance=distance,
        relation=relation,
        scored=WHOLE_REPORT,
    )


def metric_directions(a, d: float, angles=(0.0, 45.0, 90.0, 135.0)):
    """(label, b) for points b at distance d from a along each angle (degrees): diagonals included, where a
    mechanism whose noise is not isotropic (independent Laplace per axis) leaks most."""
    labels = {0.0: "x axis", 45.0: "diagonal", 90.0: "y axis", 135.0: "anti-diagonal"}
    for angle in angles:
        step = d * np.array([np.cos(np.radians(angle)), np.sin(np.radians(angle))])
        yield labels.get(angle, f"{angle:g} degrees"), np.asarray(a, dtype=float) + step


def relation_pairs(mech, grid: Grid, raw=None, box_free: bool = False) -> list[Pair]:
    """Worst-case pairs from the guarantee's relation, each scored by ``whole_report``: the case of a mechanism
    that brings a likelihood and no hand-written case (a plugin), and of the built-in local mechanisms.

    Any two inputs (LDP): opposite corners of the box along both diagonals, a point outside the box against
    the far corner (the guarantee covers every input), the centre against a corner.  Metric
    (geo-indistinguishability): pairs at distance 1/ε from the centre in four directions and from a corner
    along the x axis and the diagonal.  ``box_free``: the output law is the same on every box.
    """
    g = mech.guarantee()
    lo, hi = domain_corners(grid)
    side, centre = hi - lo, (lo + hi) / 2
    if g.relation.startswith("metric"):
        d = 1.0 / g.epsilon
        return [
            dataclasses.replace(
                whole_report(
                    mech, grid, f"distance 1/epsilon along the {label}, domain {where}", a, b, raw=raw, distance=d
                ),
                box_free=box_free,
            )
            for where, a, angles in (("centre", centre, (0.0, 45.0, 90.0, 135.0)), ("corner", lo, (0.0, 45.0)))
            for label, b in metric_directions(a, d, angles)
        ]
    pairs = [
        whole_report(mech, grid, "opposite corners", lo, hi, raw=raw),
        whole_report(mech, grid, "opposite corners, other diagonal", [lo[0], hi[1]], [hi[0], lo[1]], raw=raw),
        whole_report(mech, grid, "outside the box (scored clamped) vs far corner", lo - side, hi, at=[lo, hi], raw=raw),
        whole_report(mech, grid, "centre vs corner", centre, hi, raw=raw),
    ]
    return [dataclasses.replace(p, box_free=box_free) for p in pairs]


def moved_indicators(out: np.ndarray, a: int, b: int) -> np.ndarray:
    """The privacy-loss statistic of a one-hot moved from column a (under x) to column b (under x′) of
    noisy indicators: clip(y_a, 0, 1) − clip(y_b, 0, 1), which is 1 exactly on the event {y_a >= 1,
    y_b <= 0} where a Laplace pair's loss reaches its maximum (the sum of both coordinates' ε)."""
    return np.clip(out[:, a], 0, 1) - np.clip(out[:, b], 0, 1)


def domain_corners(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """The box's lower-left and upper-right corners."""
    d = grid.domain
    return np.array([d.xmin, d.ymin]), np.array([d.xmax, d.ymax])


def xy_of(view: pd.DataFrame) -> np.ndarray:
    return view[["x", "y"]].to_numpy()
