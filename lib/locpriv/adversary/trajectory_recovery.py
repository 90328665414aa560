"""Trajectory recovery from aggregate counts (Xu, Tu, Li, Zhang, Fu & Jin, "Trajectory Recovery From Ash:
User Privacy Is NOT Preserved in Aggregated Mobility Data", WWW 2017).

Setting.  N persons, T time slots, C places (here: the evaluation grid's cells); what is published is,
per slot t, the count of persons at each place, a (T, C) table.  The adversary knows N and the places'
coordinates and wants each person's sequence of places.  The attack has the paper's three steps:

1. **Night** (a slot whose start hour is in ``night``): persons barely move, so a partial trajectory at
   place p is linked to a place q of the next slot at cost ||p - q||;
2. **Day**: persons keep their velocity, so the cost is ||p + (p - p_prev) - q|| (the place the
   trajectory would reach at constant speed);
3. **Across days**: each day's partial trajectories are linked to the next day's at the cost of their
   information gain, H(a ∪ b) − (H(a) + H(b)) / 2 with H the entropy of a sequence's place frequencies
   (persons are regular: the same places day after day, so merging two days of one person adds little
   entropy).

Each link is a minimum-cost perfect matching (the Hungarian algorithm, ``scipy.optimize.
linear_sum_assignment``) between the N partial trajectories and the N places of the next slot (a place
counted m times appears m times).  The paper's metrics (``evaluate``): the recovered trajectories are
matched to the true ones by the same algorithm on their summed distance; **accuracy** is the mean share
of slots where a recovered trajectory is at its match's exact place; **uniqueness** (k = 1..5) is the
share of trajectories whose k most frequent places are shared by no other trajectory, of the recovered
ones and of the true ones; ``identified`` is the share of recovered trajectories whose top-k places
equal those of exactly one true trajectory, the one they were matched to (a person re-identified from
k points of the recovered trajectory).

A noisy release (a mechanism's per-window map) is not a table of N persons per slot: ``to_persons``
clips it at 0 and rounds it to N persons by largest remainders, the adversary's best integer reading
of it (a slot with no positive mass is read as uniform).

Reference implementations found while writing this (read, not copied): the authors' package
(generateAggregateMobility, intradayRecovery, interdayRecovery, computeAccuracy) and
ndsi6382/Trajectory_Recovery on GitHub, whose night/day/across steps and metrics match the above (its
night is the first quarter of a day's slots; here an hour range).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

DEFAULTS = {"night": [0, 6], "k": [1, 2, 3, 4, 5]}


def to_persons(counts: np.ndarray, n: int) -> np.ndarray:
    """(T, C) non-negative integer counts summing to ``n`` per slot, from any real-valued (T, C) release.

    Negative counts are clipped to 0 and each slot scaled to n persons; the rounding gives the
    largest remainders the missing units (ties to the lower place index), so an exact table of n
    persons comes back unchanged.
    """
    mass = np.clip(np.asarray(counts, dtype=float), 0.0, None)
    total = mass.sum(axis=1, keepdims=True)
    mass = np.where(total > 0, mass, 1.0)  # no information in the slot: every place alike
    share = mass / mass.sum(axis=1, keepdims=True) * n
    out = np.floor(share).astype(np.int64)
    missing = n - out.sum(axis=1)
    order = np.argsort(-(share - out), axis=1, kind="stable")
    for t, m in enumerate(missing):
        out[t, order[t, :m]] += 1
    return out


def _entropy(places: np.ndarray) -> np.ndarray:
    """(n,) entropy in bits of each row's place frequencies, rows (n, L) of place indices.

    H = log2 L − Σ_runs c log2 c / L over the runs of equal places in each sorted row: one pass over all
    rows (step 3 forms N² merged rows).
    """
    n, length = places.shape
    ordered = np.sort(places, axis=1)
    new = np.ones_like(ordered, dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    starts = np.flatnonzero(new.ravel())
    runs = np.diff(np.append(starts, ordered.size)).astype(float)
    weighted = np.bincount(starts // length, weights=runs * np.log2(runs), minlength=n)
    return np.log2(length) - weighted / length


def information_gain(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, m) H(a_i ∪ b_j) − (H(a_i) + H(b_j)) / 2 between the rows of a (n, L) and b (m, L') of place indices."""
    joined = np.concatenate([np.repeat(a, len(b), axis=0), np.tile(b, (len(a), 1))], axis=1)
    merged = _entropy(joined).reshape(len(a), len(b))
    return merged - (_entropy(a)[:, None] + _entropy(b)[None, :]) / 2


def recover(counts: np.ndarray, centres: np.ndarray, night: np.ndarray, day: np.ndarray) -> np.ndarray:
    """(N, T) place index of each recovered trajectory per slot, from (T, C) integer counts of N persons.

    ``centres`` (C, 2): the places' coordinates; ``night`` (T,) bool: the slots whose next link uses the
    night cost; ``day`` (T,) int: each slot's day (non-decreasing), the unit of step 3.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts[0].sum())
    if not (counts.sum(axis=1) == n).all():
        raise ValueError("every slot must count the same number of persons (use to_persons on a noisy release)")
    slots = [np.repeat(np.arange(counts.shape[1]), row) for row in counts]  # each slot's N places
    days = [np.flatnonzero(day == d) for d in np.unique(day)]
    segments = []
    for idx in days:
        path = np.empty((n, len(idx)), dtype=np.int64)
        path[:, 0] = slots[idx[0]]
        for s in range(1, len(idx)):
            here = centres[path[:, s - 1]]
            if not night[idx[s - 1]] and s >= 2:  # day: where the trajectory gets at its current velocity
                here = 2 * here - centres[path[:, s - 2]]
            _, col = linear_sum_assignment(cdist(here, centres[slots[idx[s]]]))
            path[:, s] = slots[idx[s]][col]
        segments.append(path)
    recovered = segments[0]
    for seg in segments[1:]:  # step 3: the whole trajectory so far against the next day's segments
        _, col = linear_sum_assignment(information_gain(recovered, seg))
        recovered = np.concatenate([recovered, seg[col]], axis=1)
    return recovered


def _top_sets(places: np.ndarray, k: int) -> list[tuple]:
    """Each row's k most frequent places (ties to the lower index), as a sorted tuple."""
    out = []
    for row in places:
        values, freq = np.unique(row, return_counts=True)
        out.append(tuple(sorted(values[np.argsort(-freq, kind="stable")[:k]].tolist())))
    return out


def uniqueness(places: np.ndarray, k: int) -> float:
    """Share of the rows whose k most frequent places no other row shares."""
    keys = pd.Series(_top_sets(places, k))
    return float((~keys.duplicated(keep=False)).mean())


def evaluate(recovered: np.ndarray, truth: np.ndarray, centres: np.ndarray, ks) -> dict:
    """The paper's metrics of (N, T) recovered against (N, T) true place indices (see the module)."""
    error = np.zeros((len(recovered), len(truth)))
    for t in range(truth.shape[1]):
        error += cdist(centres[recovered[:, t]], centres[truth[:, t]])
    rows, match = linear_sum_assignment(error)
    out = {
        "accuracy": float((recovered[rows] == truth[match]).mean()),
        "recovery_error": float(error[rows, match].mean() / truth.shape[1]),
    }
    for k in ks:
        rec, true = _top_sets(recovered, k), _top_sets(truth, k)
        owners = pd.Series(range(len(true))).groupby(pd.Series(true)).apply(list).to_dict()
        out[f"uniqueness_{k}"] = uniqueness(recovered, k)
        out[f"true_uniqueness_{k}"] = uniqueness(truth, k)
        out[f"identified_{k}"] = float(np.mean([owners.get(rec[i], []) == [match[i]] for i in rows]))
    return out


def slot_calendar(starts: pd.DatetimeIndex, night: list) -> tuple[np.ndarray, np.ndarray]:
    """Per slot: night (its start hour in [night[0], night[1]), wrapping past midnight) and its day index."""
    lo, hi = (int(h) for h in night)
    hour = np.asarray(starts.hour)
    is_night = (hour >= lo) & (hour < hi) if lo <= hi else (hour >= lo) | (hour < hi)
    day = np.asarray((starts.normalize() - starts.normalize()[0]).days)
    return is_night, day
