"""Person-level accounting for real data whose rows come from fewer people.

Each kept row is one virtual user of the workflow, so a mechanism's recorded ε
protects one row.  A person who contributes ``k`` rows is protected by group
privacy: a pure ε-DP (or ε-LDP) mechanism applied to each row independently
changes the probability of any output by at most e^{kε} when all k rows of one
person change (Dwork & Roth 2014, Thm. 2.2; for local mechanisms the k reports
are independent, so their privacy losses add).  Capping every person at ``cap``
rows (``max_points_per_person``) therefore bounds the person-level ε by
``cap × ε``.  With ``person_budget: split_epsilon`` the record already covers a whole
person's up to ``cap`` rows (each randomised at ε / cap, ``Guarantee.split_over``), so
the person-level ε is the record's.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def person_level_epsilon(record_eps: float | None, cap: int | None, rows_covered: int = 1) -> float | None:
    """ε protecting one person who contributes at most ``cap`` rows, each released with ``record_eps``.

    Model: pure ε-DP per row (central or local), neighbouring datasets differ in all
    rows of one person (at most ``cap`` rows).  Proof sketch: chain the cap
    single-row neighbours between the two datasets; each step multiplies an
    output's probability by at most e^ε, so the whole change by at most e^{cap ε}.
    Without a cap a person's row count is unbounded, so the bound is ∞ for ε > 0 and 0
    for ε = 0 (a release that ignores its input reveals nothing however many rows a
    person has).  Returns None when there is no record-level ε to scale.  For (ε, δ)
    mechanisms group privacy also inflates δ (to cap e^{(cap-1)ε} δ), which this helper
    does not cover: call it on pure ε only.  ``rows_covered``: how many of one person's rows the
    record's ε already covers (a mechanism's ``person_reports``); a person's cap rows are
    ceil(cap / rows_covered) such groups, so the bound is that many times the record's ε.
    """
    if record_eps is None:
        return None
    if cap is None:
        return 0.0 if record_eps == 0 else math.inf
    if cap < 1:
        raise ValueError(f"cap must be a positive number of rows, got {cap}")
    return float(math.ceil(cap / rows_covered)) * float(record_eps)


def person_guarantee_words(record, cap: int | None, rows_covered: int = 1) -> tuple[float | None, str]:
    """The person-level epsilon of ``record`` (a ``dp.Guarantee``) and the promise in words.

    ("one person, up to 50 rows: ε = 100 (each row: ε = 2 (any two inputs (local)))"); without a
    cap "one person: unbounded (...)" and epsilon inf; "no proof" where the record proves no pure
    epsilon (none at all, or a delta, which :func:`person_level_epsilon` does not scale).
    """
    eps = person_level_epsilon(record.epsilon if not record.delta else None, cap, rows_covered)
    if eps is None:
        return None, record.describe() if record.epsilon is None else "no proof: (ε, δ) per row, not scaled to persons"
    each = f"each row: {record.describe()}"
    if cap is None:
        return eps, f"one person: {'unbounded' if math.isinf(eps) else 'ε = 0'} (no cap on a person's rows; {each})"
    return eps, f"one person, up to {cap} rows: ε = {eps:g} ({each})"


def cap_rows(persons: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray:
    """Mask keeping at most ``cap`` rows of each person, a uniform random subset of theirs.

    Seeded by the run's rng, so the same config keeps the same rows.  The cap is
    public (a config value), so applying it spends no privacy.
    """
    order = rng.permutation(len(persons))
    rank = pd.Series(persons[order]).groupby(persons[order], sort=False).cumcount().to_numpy()
    keep = np.zeros(len(persons), dtype=bool)
    keep[order[rank < cap]] = True
    return keep
