"""The SLDP interactive quadtree ([SLDP], Alg. 1 client / Alg. 2 server), vectorised over users.

Each round the server broadcasts the frontier: the four children of every
active cell.  Every user still active answers for the children of its current
cell with noisy membership indicators Y = 1{X in child} + Lap(b) (Alg. 1),
and moves into the child it is in.  The server learns n(parent) (how many users
answered for a parent's children) and n_hat(child) = sum of Y, and keeps a
parent's children active only if every child has n_hat >= Q + Delta, Delta the
split margin (``margin.split_margin``): the smallest value the sum of the
n(parent) report noises exceeds with probability <= delta.  Alg. 2 line 14's
Delta = b (sqrt(2 n x) + 6 x), x = ln 1/delta, is not used: it is only sqrt(x)
standard deviations of that sum plus a constant, and misses its delta below
delta ~ 0.03 for large n (``margin``).

Calibration (``CALIBRATIONS``): the 4-vector of one-hot indicators has L1
sensitivity 2 (moving a user from one child to another changes two entries), so
a round is eps-LDP with b = 2 / eps ("sensitivity2", the default).  Alg. 1 as
printed uses b = 1 / eps ("paper"), which costs 2 eps per round: kept only to
reproduce the paper's figures, and recorded at its true cost (``round_cost``).
The authors' range-query notebook (asuvor/privacy) runs Alg. 1 at eps / 2, i.e. with
b = 2 / eps: the default calibration, not "paper".
The indicators are released on the grid 2^-8 (``INDICATOR_STEP``) with exact
discrete Laplace noise (``child_reports``; Mironov-safe, ``locpriv.dp.grid``'s proof
with sensitivity 2 / INDICATOR_STEP steps), so "Lap(b)" above is its discrete twin.

Otherwise the parent becomes a cell of the private partition and its
users stop answering: a user's reports end once its region is fixed, so its
privacy cost does not grow with later rounds (Remark 4.1).  Cells reaching
``max_depth`` join the partition too.

``split_rule``: "all_children" is Alg. 2 as printed (a parent stops as soon as
one child is below Q + Delta); "per_child" is the authors' code (asuvor/privacy,
sldp_opt_utils.py): each child decides alone, a sparse child becomes a partition
cell while its siblings go on.  On peaked data the printed rule stops after the
first rounds (a sparse corner child halts its dense siblings), which is why the
authors' mean-estimation results need the per-child rule.  The per-child rule has no
proof: a user of a dense child goes on answering while its sparse siblings' users stop,
so whether it answers the next round reveals which child of its (all_children) ideal
region it is in, and each further round costs again.
"pooled" is density-adaptive with a proof (``guarantee``): the dense children (n_hat >=
Q + Delta) go on as under the per-child rule, but the sparse children of a parent stop
together as ONE region, the parent minus its dense children; their users stop at the
parent (``user_cell`` records the parent, the region's box), and the pooled children are
released as cells inside that region (their n_hat shifted to the region's exact count,
like a whole parent's children under ``leaves: children``).  Its margin is taken at
delta / 2 (``MARGIN_SHARES``: the proof needs two children's tails).

``leaves``: what the released partition holds where all four children of a
parent stopped.  "merge" (the default) releases the parent as one cell; "children"
(the authors' code) keeps its four children as cells.  Either way no user's reports,
nor who answers in which round, nor any user's region change (a user of a stopped
parent stops at the parent: the server does not learn its child).

``counts``: the count each released cell carries.

* "regions" (default): a cell that is some users' privacy region carries the exact number
  of users whose region it is, at no privacy cost under "all_children" and "pooled" (under
  "per_child" it is an extra release without noise: a released child can lie strictly inside
  the user's ideal region, and moving the user there changes two exact counts by 1).  Proof
  sketch (all_children; pooled the same with its good event, ``guarantee``): fix user i0 and a
  neighbour X' (X_i0 moved inside its ideal region U*).  Let G be the transcripts on
  which i0 stops by round tau + 1 (U* not split; P(not G) <= delta is Thm 4.1's delta
  term).  On G the released cell holding X_i0 contains U*, hence X'_i0: the vector
  C(X, o) of users per released cell (a function of the data and of the transcript o, which
  fixes the cells) equals C(X', o).  Thm 4.1's proof bounds P(O in S and G) by
  e^eps P(O' in S and G) with no delta term, so for any event S of (transcript, counts),
  P((O, C(X, O)) in S) <= e^eps P((O', C(X', O')) in S) + delta: the same (eps, delta).
  Cells inside a region -- the four children of a stopped parent under
  ``leaves: children`` -- are not covered (a move inside U* changes them): they carry the
  transcript's n_hat shifted to sum to the parent's exact count (least squares under that
  constraint, equal variances: post-processing), combined, if ``child_epsilon`` > 0, with
  a fresh round of the users' child indicators at that budget (``child_reports``,
  recorded: ``guarantee``'s child_epsilon), weighted by inverse variance.
* "noisy": the transcript's estimates as before: n(parent) for a merged parent, n_hat for
  a child cell (post-processing of the transcript).

Measured on the anchored range-query workload (docs/results/sldp_vs_authors.md,
docs/results/sldp_leaves.md): exact region counts remove the noise of n_hat, which for a
sparse child carries the noise of every user who answered for its (dense) parent.

The transcript holds what the server received and broadcast: per round and
parent cell, n(parent), the children's n_hat and the split decision, and every
user's noisy reports (user id, round, child cell, Y) -- never a location or a
raw indicator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..dp import Guarantee
from ..dp.sampling import discrete_laplace, exact_scale, timing_safe_tv
from ..quadtree import cell_codes
from .margin import split_margin

CALIBRATIONS = ("sensitivity2", "paper")
INDICATOR_STEP = 2.0**-8  # reports lie on this grid; rounding the 0/1 indicators is exact
# Q: least users per privacy region, as the paper and its notebooks set it
DEFAULT_THRESHOLD = 20.0  # range queries and classification ([SLDP] §5.2, App. A.1/A.2)
MEAN_THRESHOLD = 100.0  # mean estimation (§5.1, the authors' mean-estimation notebook)


def _calibration(calibration: str) -> float:
    """L1 sensitivity the noise is calibrated to (2 is the true one)."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    return 2.0 if calibration == "sensitivity2" else 1.0


def noise_scale(epsilon: float, calibration: str = "sensitivity2") -> float:
    """b: the Laplace scale of each indicator's noise."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    return _calibration(calibration) / epsilon


def round_cost(epsilon: float, calibration: str = "sensitivity2") -> float:
    """The true LDP cost of one round's 4 reports: 2 b^-1 (L1 sensitivity 2 over scale b)."""
    return 2.0 / noise_scale(epsilon, calibration)


def child_reports(
    child_index: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    calibration: str = "sensitivity2",
    timing_safe: bool = False,
) -> np.ndarray:
    """One round's noisy one-hot 4-vectors (n, 4) for users in children ``child_index`` (n,) of 0..3.

    The discrete Laplace is drawn in grid steps of INDICATOR_STEP with scale b / INDICATOR_STEP,
    so the report is an exact (round_cost)-LDP release of the child (full support on the grid);
    ``timing_safe``: fixed work per draw (``dp.sampling``), the law within ``timing_tv`` of exact.
    """
    child_index = np.asarray(child_index, dtype=np.int64)
    units = np.zeros((child_index.size, 4), dtype=np.int64)
    units[np.arange(child_index.size), child_index] = round(1 / INDICATOR_STEP)
    noise = discrete_laplace(
        noise_scale(epsilon, calibration) / INDICATOR_STEP, rng, size=units.shape, timing_safe=timing_safe
    )
    return INDICATOR_STEP * (units + noise)


def timing_tv(epsilon: float, max_depth: int, calibration: str = "sensitivity2") -> float:
    """Total variation of one user's transcript drawn with ``timing_safe`` from the exact one: at most
    4 indicators in each of ``max_depth`` rounds, each draw within ``dp.sampling.timing_safe_tv``."""
    return 4 * max_depth * float(timing_safe_tv(noise_scale(epsilon, calibration) / INDICATOR_STEP))


@dataclass(frozen=True)
class UserReports:
    """Every user's noisy indicators, compactly (CSR): user u's are ``steps[offsets[u]:offsets[u + 1]]``,
    4 per round it answered (children 0..3 of its cell), rounds in order, in grid steps of
    INDICATOR_STEP; ``scale``: the discrete Laplace scale (in steps) the sampler drew them with."""

    offsets: np.ndarray
    steps: np.ndarray
    scale: float


@dataclass(frozen=True)
class PartitionResult:
    cells: pd.DataFrame  # the private partition: level, code, count (the server's estimate)
    user_cell: pd.DataFrame  # user -> (level, code) of its privacy region, round it was fixed in
    rounds: pd.DataFrame  # per round and parent: n_parent, n_hat of the 4 children, margin, split
    reports: pd.DataFrame  # every noisy report: round, user, level, code (child), y
    user_reports: UserReports | None = None  # the same reports per user, compactly (keep_user_reports)


def _user_reports(answered: list[tuple[np.ndarray, np.ndarray]], n: int, scale: float) -> UserReports:
    """Per-round (users, (n_t, 4) steps) pairs as per-user runs, rounds in order (a stable sort by user)."""
    users = np.concatenate([u for u, _ in answered]) if answered else np.zeros(0, dtype=np.int64)
    steps = np.concatenate([y for _, y in answered]) if answered else np.zeros((0, 4), dtype=np.int64)
    order = np.argsort(users, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(4 * np.bincount(users, minlength=n))])
    return UserReports(offsets, steps[order].ravel(), scale)


SPLIT_RULES = ("all_children", "per_child", "pooled")
# the split margin's delta is shared among this many children's noise tails (``guarantee``'s proof sketch)
MARGIN_SHARES = {"all_children": 1, "per_child": 1, "pooled": 2}
LEAVES = ("children", "merge")
COUNTS = ("regions", "noisy")


def run_protocol(
    points: np.ndarray,
    box,
    epsilon: float,
    threshold: float,
    max_depth: int,
    delta: float,
    rng: np.random.Generator,
    split_rule: str = "all_children",
    keep_reports: bool = True,
    calibration: str = "sensitivity2",
    leaves: str = "merge",
    counts: str = "regions",
    child_epsilon: float = 0.0,
    keep_user_reports: bool = False,
    timing_safe: bool = False,
) -> PartitionResult:
    """The private partition F_hat(X) of ``points`` (N, 2) in ``box`` and its transcript.

    epsilon: budget of the partition (each user's reports cost ``round_cost(epsilon,
    calibration)`` per round it answers: epsilon by default; SLDP accounting as Kroshnin &
    Suvorikova 2025 Thm 4.1); threshold: Q; max_depth: T; leaves: cells of a parent whose
    children all stopped ("children" or "merge"); counts: "regions" or "noisy";
    child_epsilon: budget of a fresh release of the child cells inside regions (only with
    leaves "children" and counts "regions"; see the module docstring); keep_user_reports:
    also every user's partition reports compactly (``UserReports``; not the fresh child release);
    timing_safe: the partition rounds' indicators drawn with fixed work (``child_reports``; not the child release).
    """
    scale = noise_scale(epsilon, calibration)
    if counts not in COUNTS:
        raise ValueError(f"counts must be one of {COUNTS}, got {counts!r}")
    if child_epsilon and (leaves, counts) != ("children", "regions"):
        raise ValueError(
            "child_epsilon > 0 releases the child cells inside regions: it needs leaves 'children' "
            f"and counts 'regions' (got leaves {leaves!r}, counts {counts!r})"
        )
    if not 1 <= max_depth <= 28:
        raise ValueError(f"max_depth must be in [1, 28], got {max_depth}")
    if split_rule not in SPLIT_RULES:
        raise ValueError(f"split_rule must be one of {SPLIT_RULES}, got {split_rule!r}")
    if leaves not in LEAVES:
        raise ValueError(f"leaves must be one of {LEAVES}, got {leaves!r}")
    path = cell_codes(points, box, max_depth)  # clients' private data; used only client-side below
    n = len(path)
    users = np.arange(n)
    current = np.zeros(n, dtype=np.int64)  # code of each user's current cell (Alg. 1's U_t);
    #                                              frozen where the user stopped
    active = np.ones(n, dtype=bool)
    final_level = np.full(n, -1, dtype=np.int64)
    fixed_round = np.full(n, max_depth, dtype=np.int64)  # the last round a user answers
    cells, rounds, reports, inner, answered = [], [], [], [], []
    for level in range(max_depth):  # round t refines level -> level + 1
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        # client side: 4 noisy indicators for the children of the current cell
        child_digit = (path[idx] >> (2 * (max_depth - level - 1))) & 3
        y = child_reports(child_digit, epsilon, rng, calibration, timing_safe)
        # server side: group the reports by parent cell
        parents, inverse = np.unique(current[idx], return_inverse=True)
        n_parent = np.bincount(inverse, minlength=parents.size)
        n_hat = np.zeros((parents.size, 4))
        np.add.at(n_hat, inverse, y)
        margin = split_margin(n_parent, scale, delta / MARGIN_SHARES[split_rule], INDICATOR_STEP)
        above = n_hat >= threshold + margin[:, None]
        if split_rule == "all_children":
            above = np.repeat(above.all(axis=1, keepdims=True), 4, axis=1)
        split = above.all(axis=1)
        # "pooled": the sparse children of a parent that splits in part form one region (the parent minus
        # its dense children); their users stop at the parent, the region's box
        pooled = above.any(axis=1) & ~split if split_rule == "pooled" else np.zeros_like(split)
        rounds.append(
            pd.DataFrame(
                {
                    "round": level + 1,
                    "level": level,
                    "code": parents,
                    "n_parent": n_parent,
                    **{f"n_hat_{c}": n_hat[:, c] for c in range(4)},
                    "margin": margin,
                    "split": split,
                    "children_split": above.sum(axis=1),
                }
            )
        )
        if keep_user_reports:
            answered.append((idx, np.rint(y / INDICATOR_STEP).astype(np.int64)))
        if keep_reports:
            reports.append(
                pd.DataFrame(
                    {
                        "round": level + 1,
                        "user": np.repeat(users[idx], 4),
                        "level": level + 1,
                        "code": (np.repeat(current[idx], 4) << 2) | np.tile(np.arange(4), idx.size),
                        "y": y.ravel(),
                    }
                )
            )
        # partition cells carry the server's count: n(parent) is known exactly (who
        # answered), a child's only as n_hat.  Stopped children are cells, except that
        # "merge" releases a parent whose children all stopped (printed rule: any child)
        # as one cell instead of its four children.
        whole = ~above.any(axis=1)
        if leaves == "merge":
            cells.append(pd.DataFrame({"level": level, "code": parents[whole], "count": n_parent[whole].astype(float)}))
        else:  # the four children of a whole parent lie inside their users' region (the parent)
            inner.append(
                pd.DataFrame(
                    {
                        "level": level + 1,
                        "code": np.repeat(parents[whole] << 2, 4) | np.tile(np.arange(4), int(whole.sum())),
                    }
                )
            )
        part_parent, part_child = np.nonzero(~above & ~(whole[:, None] & (leaves == "merge")))
        if pooled.any():  # pooled children lie inside their users' region, like a whole parent's
            in_pool = pooled[part_parent]
            inner.append(
                pd.DataFrame({"level": level + 1, "code": (parents[part_parent[in_pool]] << 2) | part_child[in_pool]})
            )
        cells.append(
            pd.DataFrame(
                {
                    "level": level + 1,
                    "code": (parents[part_parent] << 2) | part_child,
                    "count": n_hat[part_parent, part_child],
                }
            )
        )
        go_parent, go_child = np.nonzero(above)
        last_children = pd.DataFrame(
            {"level": level + 1, "code": (parents[go_parent] << 2) | go_child, "count": n_hat[go_parent, go_child]}
        )
        # users fix their region (parent or child) and stop answering; the others move down
        goes_on = above[inverse, child_digit]
        stop_at_parent = whole[inverse] | (pooled[inverse] & ~goes_on)
        final_level[idx[stop_at_parent]] = level
        moved = ~stop_at_parent
        current[idx[moved]] = (current[idx[moved]] << 2) | child_digit[moved]
        final_level[idx[moved & ~goes_on]] = level + 1
        active[idx[~goes_on]] = False
        fixed_round[idx[~goes_on]] = level + 1
    remaining = np.flatnonzero(active)  # reached max_depth: leaves of the partition
    final_level[remaining] = max_depth
    if remaining.size:
        cells.append(last_children)
    part = pd.concat(cells, ignore_index=True).sort_values(["level", "code"], ignore_index=True)
    if counts == "regions":
        region = pd.DataFrame({"level": final_level, "code": current})
        part = _region_counts(
            part,
            region,
            pd.concat(inner, ignore_index=True) if inner else None,
            path,
            max_depth,
            (scale, child_epsilon),
            rng,
            calibration,
        )
    empty_reports = pd.DataFrame(
        {
            "round": pd.Series(dtype="int64"),
            "user": pd.Series(dtype="int64"),
            "level": pd.Series(dtype="int64"),
            "code": pd.Series(dtype="int64"),
            "y": pd.Series(dtype="float64"),
        }
    )
    return PartitionResult(
        cells=part,
        user_cell=pd.DataFrame({"user": users, "level": final_level, "code": current, "fixed_round": fixed_round}),
        rounds=pd.concat(rounds, ignore_index=True),
        reports=pd.concat(reports, ignore_index=True) if reports else empty_reports,
        user_reports=_user_reports(answered, n, exact_scale(scale / INDICATOR_STEP)) if keep_user_reports else None,
    )


def _region_counts(
    part: pd.DataFrame,
    region: pd.DataFrame,
    inner: pd.DataFrame | None,
    path: np.ndarray,
    max_depth: int,
    scales: tuple[float, float],
    rng: np.random.Generator,
    calibration: str,
) -> pd.DataFrame:
    """``part`` with each cell's count replaced by the exact number of users located in it, except
    for ``inner`` cells (children inside a region, ``region`` the users' (level, code)): the
    transcript's n_hat, combined with a fresh child release at ``scales[1]`` = child_epsilon (> 0)
    by inverse variance, shifted so that the four siblings sum to the parent's exact count."""
    located = region.value_counts()
    keys = pd.MultiIndex.from_frame(part[["level", "code"]])
    exact = located.reindex(keys, fill_value=0).to_numpy(dtype=float)
    if inner is None:
        return part.assign(count=exact)
    is_inner = keys.isin(pd.MultiIndex.from_frame(inner))
    level, code = part["level"].to_numpy()[is_inner], part["code"].to_numpy()[is_inner]
    estimate = part["count"].to_numpy(dtype=float)[is_inner]  # n_hat from the transcript
    scale, child_epsilon = scales
    if child_epsilon > 0:
        # client side: each user of a whole parent reports its child again (4 noisy indicators)
        lvl, cod = region["level"].to_numpy(), region["code"].to_numpy()
        mine = np.flatnonzero(
            pd.MultiIndex.from_arrays([lvl, cod]).isin(pd.MultiIndex.from_arrays([level - 1, code >> 2]))
        )
        digit = (path[mine] >> (2 * (max_depth - lvl[mine] - 1))) & 3
        y = child_reports(digit, child_epsilon, rng, calibration)
        fresh = pd.Series(
            y.ravel(),
            index=pd.MultiIndex.from_arrays(
                [np.repeat(lvl[mine] + 1, 4), (np.repeat(cod[mine], 4) << 2) | np.tile(np.arange(4), mine.size)]
            ),
        )
        fresh = fresh.groupby(level=[0, 1]).sum().reindex(pd.MultiIndex.from_arrays([level, code]), fill_value=0.0)
        fresh_scale = noise_scale(child_epsilon, calibration)
        weight = fresh_scale**2 / (scale**2 + fresh_scale**2)  # per-user variances 2 b^2 each
        estimate = weight * estimate + (1 - weight) * fresh.to_numpy()
    parent = pd.MultiIndex.from_arrays([level - 1, code >> 2])
    total = located.reindex(parent, fill_value=0).to_numpy(dtype=float)
    siblings = pd.Series(estimate).groupby([level, code >> 2])  # 4 in a whole parent, 1-3 pooled ones
    exact[is_inner] = estimate + (total - siblings.transform("sum").to_numpy()) / siblings.transform("size").to_numpy()
    return part.assign(count=exact)


def guarantee(
    epsilon: float,
    delta: float,
    threshold: float,
    split_rule: str,
    calibration: str,
    task_epsilon: float = 0.0,
    task: str = "",
    child_epsilon: float = 0.0,
    timing_tv: float = 0.0,
) -> Guarantee:
    """The record of a protocol run with partition budget ``epsilon`` (plus a fresh release of the
    child cells inside regions at ``child_epsilon``, and a task spending ``task_epsilon``-LDP among
    locations of the user's region, if any).

    Thm 4.1 (Kroshnin & Suvorikova 2025) covers Alg. 2 as printed (``all_children``) with a split
    margin whose tail is at most delta (``margin``); each round's 4 reports cost ``round_cost``
    (2 eps under the printed calibration); the child release (4 indicators, sensitivity 2) costs
    ``round_cost(child_epsilon)``, and it and the task compose with the partition (basic
    composition).  Exact counts of the released regions cost nothing (module docstring).  The
    per-child rule is not covered by the theorem and no proof is known: no epsilon is recorded.

    ``pooled``, proof sketch (Thm 4.1's, with a different ideal partition and good event).  Ideal
    partition F*(X) on true counts: a cell P whose four children all hold >= Q users splits; if none
    does, P is a region; otherwise its children with >= Q users go on and the others together form
    ONE region, P minus those children (it may hold fewer than Q users).  Fix user i0, its ideal region
    U* inside the level-tau cell P (U* = P or a pooled union of P's children), and X' moving X_i0 to a
    point of U*; c, c' the children of P holding X_i0 and X'_i0, both with n_X < Q.  (1) Rounds <= tau
    query P's ancestors' children: i0's reports have the same law under X and X' (both points lie in
    the same cells), as do all others', so transcripts stopping i0 by round tau are equally likely.
    (2) Round tau + 1 queries P's children: i0's 4 indicators cost round_cost(eps).  Let G = {neither
    c nor c' is declared dense}.  On G, i0 stops after round tau + 1 under X and under X' alike, its
    released region P minus the declared-dense children contains both points, and the rest of the
    transcript is the other users' (same law): so P(O in S, i0 stops at tau + 1, G) <= e^eps P(O' in S).
    (3) P_X(not G) <= P(n_hat(c) >= Q + Delta) + P(n_hat(c') >= Q + Delta) <= 2 (delta / 2), since
    n_X(c), n_X(c') < Q and the margin is the sum of the report noises' (1 - delta / 2) quantile.
    Together: P(O in S) <= e^eps P(O' in S) + delta.  Exact region counts: on G every released
    region holds X_i0 iff it holds X'_i0, so the users-per-region vector is the same function of the
    transcript under X and X' (module docstring), and the pooled children's counts are the
    transcript's n_hat shifted to that count (post-processing).

    ``timing_tv``: with fixed-work sampling, the total variation (``timing_tv``) of one user's whole
    transcript from the exact sampler's; the coupling P'(S) <= P(S) + tv <= e^eps P(S') + delta + tv
    <= e^eps P'(S') + delta + (1 + e^eps) tv adds (1 + e^eps) tv to delta.
    """
    children = round_cost(child_epsilon, calibration) if child_epsilon else 0.0
    cost = round_cost(epsilon, calibration) + children
    proven = split_rule != "per_child"
    timing = (1 + math.exp(cost + task_epsilon)) * timing_tv
    spent = (
        f"partition {round_cost(epsilon, calibration):g} (calibration {calibration})"
        + (f" + child cells {children:g}" if children else "")
        + (f" + {task} {task_epsilon:g}" if task else "")
    )
    return Guarantee(
        model=("(epsilon, delta)-SLDP (semi-local DP)" + (", pooled sparse children" if split_rule == "pooled" else ""))
        if proven
        else "none proven (per_child split rule)",
        epsilon=cost + task_epsilon if proven else None,
        delta=delta + timing if proven else None,
        relation="replace one user's location by another inside its privacy region U*(X) (the ideal "
        + (
            f"partition's cell holding it, >= Q = {threshold:g} users)"
            if split_rule != "pooled"
            else f"pooled partition's region holding it: a cell whose children all hold < Q = {threshold:g} users, "
            "or the union of a cell's children holding < Q users where some sibling holds >= Q (it may hold "
            "fewer than Q users))"
        ),
        covers="the location inside its privacy region only; the region and the exact number of users in each "
        "released region are revealed to the server"
        + (" (free: invariant under the relation)" if proven else " (not covered: see note)"),
        discretisation=f"indicators (and task values) released on public power-of-two grids (indicators: "
        f"{INDICATOR_STEP:g}) with exact discrete Laplace noise (Canonne, Kamath & Steinke 2020)",
        note=(
            (
                f"Kroshnin & Suvorikova 2025 Thm 4.1 at the true cost: {spent}"
                if split_rule == "all_children"
                else f"Thm 4.1's argument for the pooled rule (sldp.protocol.guarantee) at the true cost: {spent}"
            )
            + "; the 4 indicators have L1 sensitivity 2; split margin: the sum of the report noises' exact-tail "
            + ("(1 - delta) quantile bound" if split_rule == "all_children" else "(1 - delta / 2) quantile bound")
            + (
                f"; timing: fixed work per draw, delta includes {timing:.3g} = (1 + e^eps) x the transcript's "
                "total variation from exact (sldp.protocol.timing_tv)"
                if timing_tv
                else ""
            )
            if proven
            else "the authors' per-child split rule is not covered by Thm 4.1 and no proof is known to us (whether a "
            "user answers the next round reveals which child of its ideal region it is in, and its further rounds "
            "cost again; the exact counts of stopped children are a release without noise), so no epsilon is "
            f"claimed (budget as configured: {spent})"
        ),
    )
