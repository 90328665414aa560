"""The SLDP interactive quadtree ([SLDP], Alg. 1 client / Alg. 2 server), vectorised over users.

Each round the server broadcasts the frontier: the four children of every
active cell.  Every user still active answers for the children of its current
cell with noisy membership indicators Y = 1{X in child} + Lap(b) (Alg. 1),
and moves into the child it is in.  The server learns n(parent) (how many users
answered for a parent's children) and n_hat(child) = sum of Y, and keeps a
parent's children active only if every child has n_hat >= Q + Delta, with

    Delta = b (sqrt(2 n(parent) x) + 6 x)                 (Alg. 2 line 14, b = 1/eps there)

Calibration (``CALIBRATIONS``): the 4-vector of one-hot indicators has L1
sensitivity 2 (moving a user from one child to another changes two entries), so
a round is eps-LDP with b = 2 / eps ("sensitivity2", the default).  Alg. 1 as
printed uses b = 1 / eps ("paper"), which costs 2 eps per round: kept only to
reproduce the paper's figures, and recorded at its true cost (``round_cost``).
The indicators are released on the grid 2^-8 (``INDICATOR_STEP``) with exact
discrete Laplace noise (``child_reports``; Mironov-safe, ``locpriv.dp.grid``'s proof
with sensitivity 2 / INDICATOR_STEP steps), so "Lap(b)" above is its discrete twin.

x = x(delta) (``x_of_delta``; Lemma 4.1 holds with probability 1 - e^-x).  The
Lemma as extracted prints sqrt(2 n) / eps + 6 x / eps, without x under the
root; Alg. 2's line 14 puts it there, and a Bernstein-type bound for a sum of n
sub-exponential terms (Kroshnin & Suvorikova 2024, Cor. 3.1, which the proof
cites) scales as sqrt(n x): we implement Alg. 2's form.  ``delta_constant``
(6 in the paper) is exposed because the authors' code uses a different
constant.  Otherwise the parent becomes a cell of the private partition and its
users stop answering: a user's reports end once its region is fixed, so its
privacy cost does not grow with later rounds (Remark 4.1).  Cells reaching
``max_depth`` join the partition too.

``split_rule``: "all_children" is Alg. 2 as printed (a parent stops as soon as
one child is below Q + Delta); "per_child" is the authors' code (asuvor/privacy,
sldp_opt_utils.py): each child decides alone, a sparse child becomes a partition
cell while its siblings go on.  On peaked data the printed rule stops after the
first rounds (a sparse corner child halts its dense siblings), which is why the
authors' mean-estimation results need the per-child rule.

``leaves``: what the released partition holds where all four children of a
parent stopped.  "merge" (the default) releases the parent as one cell with
n(parent); "children" (the authors' code) keeps the four children as cells with
their n_hat.  Both are post-processing of the transcript: n(parent) is how many
users answered for that parent (the server sees who answers) and n_hat(child) is
a sum of the received reports, so the choice changes neither any user's reports,
nor who answers in which round, nor any user's region (a user of a stopped parent
stops at the parent either way: the server does not learn its child), and the
privacy record is the same.  Measured on the anchored range-query workload
(docs/results/sldp_leaves.md, same transcripts, N = 20,000): under the default
calibration "merge" has the lower MRE (by 1.6-8 % on Geolife, 18-24 % on the
synthetic clusters): n(parent) is exact, while each n_hat carries the noise of
every user who answered for the parent.

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
from ..dp.sampling import discrete_laplace, exact_scale
from ..quadtree import cell_codes

DELTA_CONSTANT = 6.0
CALIBRATIONS = ("sensitivity2", "paper")
INDICATOR_STEP = 2.0 ** -8       # reports lie on this grid; rounding the 0/1 indicators is exact
# Q: least users per privacy region, as the paper and its notebooks set it
DEFAULT_THRESHOLD = 20.0         # range queries and classification ([SLDP] §5.2, App. A.1/A.2)
MEAN_THRESHOLD = 100.0           # mean estimation (§5.1, the authors' mean-estimation notebook)


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


def child_reports(child_index: np.ndarray, epsilon: float, rng: np.random.Generator,
                  calibration: str = "sensitivity2") -> np.ndarray:
    """One round's noisy one-hot 4-vectors (n, 4) for users in children ``child_index`` (n,) of 0..3.

    The discrete Laplace is drawn in grid steps of INDICATOR_STEP with scale b / INDICATOR_STEP,
    so the report is an exact (round_cost)-LDP release of the child (full support on the grid).
    """
    child_index = np.asarray(child_index, dtype=np.int64)
    units = np.zeros((child_index.size, 4), dtype=np.int64)
    units[np.arange(child_index.size), child_index] = round(1 / INDICATOR_STEP)
    noise = discrete_laplace(noise_scale(epsilon, calibration) / INDICATOR_STEP, rng, size=units.shape)
    return INDICATOR_STEP * (units + noise)


def x_of_delta(delta: float) -> float:
    """x with e^-x = delta: Lemma 4.1's bound then fails with probability <= delta."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return math.log(1.0 / delta)


def split_margin(n_parent: np.ndarray, scale: float, x: float,
                 delta_constant: float = DELTA_CONSTANT) -> np.ndarray:
    """Delta of Alg. 2 line 14 for parents holding n_parent active users, noise scale b = ``scale``.

    Lemma 4.1 bounds a sum of n Laplace(b) terms, so the margin scales with the noise
    actually added (b = 1/eps as printed; 2/eps under the sensitivity-2 calibration).
    """
    return (np.sqrt(2.0 * np.asarray(n_parent, dtype=float) * x) + delta_constant * x) * scale


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
    cells: pd.DataFrame        # the private partition: level, code, count (the server's estimate)
    user_cell: pd.DataFrame    # user -> (level, code) of its privacy region, round it was fixed in
    rounds: pd.DataFrame       # per round and parent: n_parent, n_hat of the 4 children, margin, split
    reports: pd.DataFrame      # every noisy report: round, user, level, code (child), y
    user_reports: UserReports | None = None   # the same reports per user, compactly (keep_user_reports)


def _user_reports(answered: list[tuple[np.ndarray, np.ndarray]], n: int, scale: float) -> UserReports:
    """Per-round (users, (n_t, 4) steps) pairs as per-user runs, rounds in order (a stable sort by user)."""
    users = np.concatenate([u for u, _ in answered]) if answered else np.zeros(0, dtype=np.int64)
    steps = np.concatenate([y for _, y in answered]) if answered else np.zeros((0, 4), dtype=np.int64)
    order = np.argsort(users, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(4 * np.bincount(users, minlength=n))])
    return UserReports(offsets, steps[order].ravel(), scale)


SPLIT_RULES = ("all_children", "per_child")
LEAVES = ("children", "merge")


def run_protocol(points: np.ndarray, box, epsilon: float, threshold: float, max_depth: int,
                 delta: float, rng: np.random.Generator, delta_constant: float = DELTA_CONSTANT,
                 split_rule: str = "all_children", keep_reports: bool = True,
                 calibration: str = "sensitivity2", leaves: str = "merge",
                 keep_user_reports: bool = False) -> PartitionResult:
    """The private partition F_hat(X) of ``points`` (N, 2) in ``box`` and its transcript.

    epsilon: budget of the partition (each user's reports cost ``round_cost(epsilon,
    calibration)`` per round it answers: epsilon by default; SLDP accounting as Kroshnin &
    Suvorikova 2025 Thm 4.1); threshold: Q; max_depth: T; leaves: cells of a parent whose
    children all stopped ("children" or "merge", post-processing: see the module docstring);
    keep_user_reports: also every user's reports compactly (``UserReports``).
    """
    scale = noise_scale(epsilon, calibration)
    if not 1 <= max_depth <= 28:
        raise ValueError(f"max_depth must be in [1, 28], got {max_depth}")
    if split_rule not in SPLIT_RULES:
        raise ValueError(f"split_rule must be one of {SPLIT_RULES}, got {split_rule!r}")
    if leaves not in LEAVES:
        raise ValueError(f"leaves must be one of {LEAVES}, got {leaves!r}")
    x = x_of_delta(delta)
    path = cell_codes(points, box, max_depth)   # clients' private data; used only client-side below
    n = len(path)
    users = np.arange(n)
    current = np.zeros(n, dtype=np.int64)        # code of each user's current cell (Alg. 1's U_t);
    #                                              frozen where the user stopped
    active = np.ones(n, dtype=bool)
    final_level = np.full(n, -1, dtype=np.int64)
    fixed_round = np.full(n, max_depth, dtype=np.int64)  # the last round a user answers
    cells, rounds, reports, answered = [], [], [], []
    for level in range(max_depth):               # round t refines level -> level + 1
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        # client side: 4 noisy indicators for the children of the current cell
        child_digit = (path[idx] >> (2 * (max_depth - level - 1))) & 3
        y = child_reports(child_digit, epsilon, rng, calibration)
        # server side: group the reports by parent cell
        parents, inverse = np.unique(current[idx], return_inverse=True)
        n_parent = np.bincount(inverse, minlength=parents.size)
        n_hat = np.zeros((parents.size, 4))
        np.add.at(n_hat, inverse, y)
        margin = split_margin(n_parent, scale, x, delta_constant)
        above = n_hat >= threshold + margin[:, None]
        if split_rule == "all_children":
            above = np.repeat(above.all(axis=1, keepdims=True), 4, axis=1)
        split = above.all(axis=1)
        rounds.append(pd.DataFrame({"round": level + 1, "level": level, "code": parents, "n_parent": n_parent,
                                    **{f"n_hat_{c}": n_hat[:, c] for c in range(4)},
                                    "margin": margin, "split": split,
                                    "children_split": above.sum(axis=1)}))
        if keep_user_reports:
            answered.append((idx, np.rint(y / INDICATOR_STEP).astype(np.int64)))
        if keep_reports:
            reports.append(pd.DataFrame({
                "round": level + 1, "user": np.repeat(users[idx], 4), "level": level + 1,
                "code": (np.repeat(current[idx], 4) << 2) | np.tile(np.arange(4), idx.size),
                "y": y.ravel()}))
        # partition cells carry the server's count: n(parent) is known exactly (who
        # answered), a child's only as n_hat.  Stopped children are cells, except that
        # "merge" releases a parent whose children all stopped (printed rule: any child)
        # as one cell instead of its four children.
        whole = ~above.any(axis=1)
        if leaves == "merge":
            cells.append(pd.DataFrame({"level": level, "code": parents[whole],
                                       "count": n_parent[whole].astype(float)}))
        part_parent, part_child = np.nonzero(~above & ~(whole[:, None] & (leaves == "merge")))
        cells.append(pd.DataFrame({"level": level + 1, "code": (parents[part_parent] << 2) | part_child,
                                   "count": n_hat[part_parent, part_child]}))
        go_parent, go_child = np.nonzero(above)
        last_children = pd.DataFrame({"level": level + 1, "code": (parents[go_parent] << 2) | go_child,
                                      "count": n_hat[go_parent, go_child]})
        # users fix their region (parent or child) and stop answering; the others move down
        goes_on = above[inverse, child_digit]
        stop_at_parent = whole[inverse]
        final_level[idx[stop_at_parent]] = level
        moved = ~stop_at_parent
        current[idx[moved]] = (current[idx[moved]] << 2) | child_digit[moved]
        final_level[idx[moved & ~goes_on]] = level + 1
        active[idx[~goes_on]] = False
        fixed_round[idx[~goes_on]] = level + 1
    remaining = np.flatnonzero(active)           # reached max_depth: leaves of the partition
    final_level[remaining] = max_depth
    if remaining.size:
        cells.append(last_children)
    part = pd.concat(cells, ignore_index=True).sort_values(["level", "code"], ignore_index=True)
    empty_reports = pd.DataFrame({"round": pd.Series(dtype="int64"), "user": pd.Series(dtype="int64"),
                                  "level": pd.Series(dtype="int64"), "code": pd.Series(dtype="int64"),
                                  "y": pd.Series(dtype="float64")})
    return PartitionResult(
        cells=part,
        user_cell=pd.DataFrame({"user": users, "level": final_level, "code": current,
                                "fixed_round": fixed_round}),
        rounds=pd.concat(rounds, ignore_index=True),
        reports=pd.concat(reports, ignore_index=True) if reports else empty_reports,
        user_reports=_user_reports(answered, n, exact_scale(scale / INDICATOR_STEP)) if keep_user_reports else None)


def guarantee(epsilon: float, delta: float, threshold: float, split_rule: str, calibration: str,
              task_epsilon: float = 0.0, task: str = "") -> Guarantee:
    """The record of a protocol run with partition budget ``epsilon`` (plus a task spending
    ``task_epsilon``-LDP among locations of the user's region, if any).

    Thm 4.1 (Kroshnin & Suvorikova 2025) covers Alg. 2 as printed (``all_children``); each
    round's 4 reports cost ``round_cost`` (2 eps under the printed calibration), and the task's
    release composes with it (basic composition).  The per-child rule is not covered by the
    theorem: no epsilon is recorded for it.
    """
    cost = round_cost(epsilon, calibration)
    proven = split_rule == "all_children"
    spent = f"partition {cost:g} (calibration {calibration})" + (f" + {task} {task_epsilon:g}" if task else "")
    return Guarantee(
        model="(epsilon, delta)-SLDP (semi-local DP)" if proven else "none proven (per_child split rule)",
        epsilon=cost + task_epsilon if proven else None, delta=delta if proven else None,
        relation="replace one user's location by another inside its privacy region U*(X) (the ideal "
                 f"partition's cell holding it, >= Q = {threshold:g} users)",
        covers="the location inside its privacy region only; the region is revealed to the server",
        discretisation=f"indicators (and task values) released on public power-of-two grids (indicators: "
                       f"{INDICATOR_STEP:g}) with exact discrete Laplace noise (Canonne, Kamath & Steinke 2020)",
        note=(f"Kroshnin & Suvorikova 2025 Thm 4.1 at the true cost: {spent}; the 4 indicators have L1 "
              "sensitivity 2" if proven else
              "the authors' per-child split rule is not covered by Thm 4.1 and no proof is known to us, so "
              f"no epsilon is claimed (budget as configured: {spent})"))
