"""Composition: what several releases about the same persons promise together.

One rule serves the API's :class:`~locpriv.accountant.BudgetAccountant` and the workflow's
per-dataset ledger (``locpriv.ledger``), so a notebook and the DAG add releases up the same way.

Rules (``RULES``), for records under one neighbouring relation R:

* ``basic``: k mechanisms, the i-th (epsilon_i, delta_i)-DP under R, run on the same data (each
  one possibly chosen after seeing the earlier outputs) are together (sum epsilon_i, sum delta_i)-DP
  under R (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014, "The Algorithmic Foundations
  of Differential Privacy", Thm 3.16 and its adaptive form, Thm B.1).  Proof sketch for delta = 0:
  for neighbours x ~ x' the joint output density factorises into the conditional densities of
  each output given the earlier ones; each factor changes by at most e^epsilon_i, so the product
  by at most e^(sum epsilon_i).  With delta_i > 0, each mechanism's output law is within delta_i
  (on the bad event) of one that obeys the pure bound, and a union bound over the k bad events
  gives sum delta_i.  Metric records (geo-indistinguishability) compose the same way per unit of
  distance: each factor changes by at most e^(epsilon_i d) for inputs d apart.
* ``zcdp``: the tighter rule where the mechanisms allow it.  Every pure epsilon-DP record is
  (epsilon^2 / 2)-zCDP (Bun & Steinke 2016, "Concentrated Differential Privacy: Simplifications,
  Extensions, and Lower Bounds", Prop. 3.3); zCDP composes additively, adaptively included
  (Lemma 2.3), and rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta')), delta')-DP for every
  delta' > 0 (Prop. 1.3).  So k pure records give (eps_z, delta') with rho = sum epsilon_i^2 / 2.
  Records with delta_i > 0 (the fixed-work samplers, whose delta is a total-variation distance
  from the exact law) have no zCDP bound here: they are added by the basic rule, and the two
  groups compose by the basic rule again, (eps_z + sum_j epsilon_j, delta' + sum_j delta_j).
  The basic total, (sum epsilon_i, sum delta_i), also holds with the larger delta, so the rule
  reports the smaller of the two epsilons.  No location mechanism of the workflow adds Gaussian
  noise (they are Laplace-type, pure or fixed-work (epsilon, delta)); zCDP pays off for many pure
  releases of small epsilon (about epsilon sqrt(2 k ln(1/delta')) against k epsilon).  Metric
  records have no per-unit zCDP bound (rho grows with d^2, the DP bound then is not linear in d),
  so the rule refuses them; use basic.

Only records under the same relation compose (:func:`restate` re-expresses a record under another
relation where its claim implies one).  A record without a formal claim (epsilon None) composes to
none: the function refuses it, since a total that ignored it would overstate the promise.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import replace

from .record import ADD_REMOVE, REPLACE_ONE, Guarantee

BASIC = "basic"
ZCDP = "zcdp"
RULES = (BASIC, ZCDP)

# The person-level relation of the workflow's ledger: the number of persons is public (as n is),
# so neighbouring datasets differ in every row of one person, replaced by any others
PERSON_REPLACE = "replace all rows of one person by any others (the number of persons is public)"
# Records whose relation starts so bound any change of one user's input (the local mechanisms)
_ANY_INPUTS = "any two inputs"


def number(value, what: str, *, low: float = 0.0, high: float = math.inf, infinite: bool = False) -> float:
    """``value`` as a float in [low, high] (numpy scalars too); ``infinite``: admit +inf (no limit)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)
    if ok:
        value = float(value)
        ok = low <= value <= high and (infinite or math.isfinite(value))
    if not ok:
        limit = "inf (no limit) or " if infinite else ""
        raise ValueError(f"{what} must be {limit}a number in [{low:g}, {high:g}], got {value!r}")
    return value


def restate(record: Guarantee, relation: str, *, diameter: float | None = None) -> Guarantee:
    """``record`` under ``relation``, where its claim implies a bound for it; ValueError otherwise.

    * the record's own relation, or one of its ``other_relations``: that value;
    * ``REPLACE_ONE`` from a local record (relation "any two inputs ..."): the same epsilon and
      delta, since replacing one user's location is one change of that user's input;
    * ``REPLACE_ONE`` from ``ADD_REMOVE``: a replacement is a removal then an addition, group
      privacy over 2 steps (``Guarantee.map(2)``): (2 epsilon, 2 e^epsilon delta);
    * ``REPLACE_ONE`` from a metric record, given the public domain's ``diameter``: any two
      locations are at most that far apart, so (epsilon diameter, ...) by ``Guarantee.map``.
    """
    if record.epsilon is None:
        raise ValueError(f"no formal guarantee ({record.note or record.model}): nothing to restate")
    if relation == record.relation:
        return record
    if relation in record.other_relations:
        eps, delta = record.map(1, relation)
    elif relation == REPLACE_ONE and record.relation.startswith(_ANY_INPUTS):
        eps, delta = record.epsilon, float(record.delta or 0.0)
    elif relation == REPLACE_ONE and record.relation == ADD_REMOVE:
        eps, delta = record.map(2)
    elif relation == REPLACE_ONE and record.metric and diameter is not None:
        eps, delta = record.map(number(diameter, "the domain's diameter"))
    else:
        stated = [record.relation, *record.other_relations]
        raise ValueError(
            f"a record under {stated} states no bound under {relation!r}"
            + (" (a metric record needs the domain's diameter)" if record.metric else "")
        )
    return replace(record, epsilon=float(eps), delta=delta if record.delta is not None else None, relation=relation)


def person_level(record: Guarantee, rows: int, *, rows_covered: int = 1, diameter: float | None = None) -> Guarantee:
    """The record of one person with up to ``rows`` rows, each a user of a release of ``record``.

    Neighbouring relation :data:`PERSON_REPLACE`.  The record is first restated under
    ``REPLACE_ONE`` (one row changed); ``rows_covered`` of a person's rows are already covered by
    one step of it (a mechanism's ``person_reports``: ``Guarantee.split_over``), so a person's rows
    are k = ceil(rows / rows_covered) such steps and group privacy (``Guarantee.map(k)``) gives
    (k epsilon, k e^((k-1) epsilon) delta).  Proof: chain the k single-step neighbours between the
    two datasets (Dwork & Roth 2014, Thm 2.2; Vadhan 2017 for delta > 0).  For pure records this is
    ``datasets.persons.person_level_epsilon``.
    """
    if not (isinstance(rows, numbers.Integral) and rows >= 1 and isinstance(rows_covered, numbers.Integral)):
        raise ValueError(f"rows per person must be an integer >= 1, got {rows!r}")
    row = restate(record, REPLACE_ONE, diameter=diameter)
    k = math.ceil(int(rows) / max(1, int(rows_covered)))
    eps, delta = row.map(k)
    return replace(
        row,
        epsilon=float(eps),
        delta=delta if row.delta is not None else None,
        relation=PERSON_REPLACE,
        other_relations={REPLACE_ONE: row.epsilon},
        covers=f"every row of one person (up to {rows}): {row.covers}",
    )


def _checked(records) -> list[Guarantee]:
    records = list(records)
    if not records:
        raise ValueError("nothing to compose: no records")
    for r in records:
        if not isinstance(r, Guarantee):
            raise ValueError(f"compose takes Guarantee records, got {type(r).__name__}")
        if r.epsilon is None:
            raise ValueError(f"a record without a formal guarantee cannot be composed ({r.note or r.model})")
    relations = sorted({r.relation for r in records})
    if len(relations) > 1:
        raise ValueError(
            f"records under different relations do not compose: {relations}; restate them under one "
            "(dp.composition.restate, person_level)"
        )
    return records


def _zcdp_epsilon(rho: float, delta: float) -> float:
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)) if rho else 0.0


def total(records, *, rule: str = BASIC, slack: float = 0.0) -> tuple[float, float]:
    """(epsilon, delta) of ``records`` released together, under ``rule`` (module docstring).

    ``slack``: the zcdp rule's delta' (> 0), added to the records' delta; ignored by basic.
    """
    records = _checked(records)
    if rule not in RULES:
        raise ValueError(f"composition rule must be one of {list(RULES)}, got {rule!r}")
    eps_basic = math.fsum(r.epsilon for r in records)
    delta_basic = min(1.0, math.fsum(float(r.delta or 0.0) for r in records))
    if rule == BASIC:
        return eps_basic, delta_basic
    if records[0].metric:
        raise ValueError("the zcdp rule has no per-unit bound for metric (geo-indistinguishability) records; use basic")
    slack = number(slack, "the zcdp rule's slack (delta')", high=1.0)
    if not slack > 0:
        raise ValueError("the zcdp rule needs a slack delta' > 0 (the delta of its conversion to (epsilon, delta)-DP)")
    pure = [r.epsilon for r in records if not r.delta]
    eps_zcdp = _zcdp_epsilon(math.fsum(e * e / 2.0 for e in pure), slack) + math.fsum(
        r.epsilon for r in records if r.delta
    )
    return min(eps_basic, eps_zcdp), min(1.0, delta_basic + slack)


def compose(records, *, rule: str = BASIC, slack: float = 0.0) -> Guarantee:
    """The record of ``records`` released together: :func:`total` with what they cover."""
    records = _checked(records)
    eps, delta = total(records, rule=rule, slack=slack)
    models = sorted({r.model for r in records})
    first = records[0]
    return Guarantee(
        model=f"{' + '.join(models)}, {rule} composition",
        epsilon=eps,
        delta=delta if delta or any(r.delta is not None for r in records) else None,
        relation=first.relation,
        covers=f"{len(records)} releases together",
        discretisation=first.discretisation if len({r.discretisation for r in records}) == 1 else "as each release",
        note=f"{rule} composition of {len(records)} records (dp.composition)"
        + (f", slack delta' = {slack:g}" if rule == ZCDP else ""),
        trust_model=first.trust_model if len({r.trust_model for r in records}) == 1 else None,
    )
