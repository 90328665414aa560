"""A privacy budget accountant, in the spirit of IBM diffprivlib's ``BudgetAccountant``.

A notebook that releases several results about the same persons adds their guarantees up here::

    acc = BudgetAccountant(epsilon=3.0)  # a total budget; delta 0 by default
    acc.spend(GeoInd(epsilon=1.0, h=0.05))  # a mechanism (its guarantee()) or a Guarantee record
    acc.remaining()  # (2.0, 0.0): what one more release may still spend
    acc.spend(LaplaceLDP(epsilon=4.0, h=0.1))  # refused: BudgetError, nothing is spent

Unlike diffprivlib's, the accountant adds records, not bare numbers: a record states its
neighbouring relation, and only records under one relation compose (``dp.composition``).  The
composition rule is the workflow's ledger's (``locpriv.ledger``): ``basic``, or ``zcdp`` with a
slack delta' for many pure releases.  The accountant holds what was spent; it draws no noise, so
check (or spend) before releasing: a refused spend leaves the accountant as it was.
"""

from __future__ import annotations

import math
from dataclasses import replace

from .dp import Guarantee
from .dp import composition as comp

# Spends that sum to the budget up to float rounding are within it (three spends of 1/3 fill 1.0):
# the tolerance is a few units in the last place of the budget, far below any meaningful epsilon
_ROUNDING = 8 * 2.0**-52


class BudgetError(ValueError):
    """A spend that would take the accountant over its budget (nothing was spent)."""


def _within(spent: float, budget: float) -> bool:
    return spent <= budget * (1.0 + _ROUNDING)


class BudgetAccountant:
    """Total privacy budget (epsilon, delta) and the records spent against it, under one relation.

    Keyword-only: ``epsilon`` (>= 0, or inf for no limit), ``delta`` in [0, 1], ``rule`` (``basic``
    or ``zcdp``), ``slack`` (the zcdp rule's delta', counted in ``delta``), ``relation`` (the
    neighbouring relation every record must be stated under; default: the first record's; a record
    stating a bound for it among its ``other_relations``, or implying one, is restated:
    ``dp.composition.restate``), ``diameter`` (the public domain's diameter: a metric record,
    geo-indistinguishability, is restated under replace-one at it).
    """

    def __init__(
        self,
        *,
        epsilon: float = math.inf,
        delta: float = 0.0,
        rule: str = comp.BASIC,
        slack: float = 0.0,
        relation: str | None = None,
        diameter: float | None = None,
    ):
        self.epsilon = comp.number(epsilon, "BudgetAccountant epsilon", infinite=True)
        self.delta = comp.number(delta, "BudgetAccountant delta", high=1.0)
        if rule not in comp.RULES:
            raise ValueError(f"BudgetAccountant rule must be one of {list(comp.RULES)}, got {rule!r}")
        self.rule = rule
        self.slack = comp.number(slack, "BudgetAccountant slack", high=self.delta)
        if rule == comp.ZCDP and not self.slack > 0:
            raise ValueError("BudgetAccountant rule 'zcdp' needs a slack in (0, delta]: its conversion's delta'")
        if relation is not None and not isinstance(relation, str):
            raise ValueError(f"BudgetAccountant relation must be a string or None, got {relation!r}")
        self.relation = relation
        self.diameter = None if diameter is None else comp.number(diameter, "BudgetAccountant diameter")
        self._spent: list[Guarantee] = []

    def __repr__(self) -> str:
        spent = self.total()
        return (
            f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, rule={self.rule!r}, "
            f"slack={self.slack:g}, relation={self.relation!r}; spent epsilon={spent[0]:g}, delta={spent[1]:g} "
            f"over {len(self._spent)} record(s))"
        )

    @property
    def spent(self) -> tuple[Guarantee, ...]:
        """The records spent so far, each under the accountant's relation, in spending order."""
        return tuple(self._spent)

    def _record(self, release) -> Guarantee:
        record = release.guarantee() if hasattr(release, "guarantee") else release
        if not isinstance(record, Guarantee):
            raise ValueError(f"spend takes a mechanism or a Guarantee record, got {type(release).__name__}")
        if record.epsilon is None:
            raise BudgetError(
                f"the release has no formal guarantee ({record.note or record.model}): it cannot be "
                "accounted, so no budget covers it"
            )
        if not self.relation:
            return record
        try:
            return comp.restate(record, self.relation, diameter=self.diameter)
        except ValueError as exc:
            hint = (
                "give the accountant diameter= (the public domain's)"
                if record.metric
                else "an accountant of local, central and distributed records together takes "
                "relation=locpriv.dp.REPLACE_ONE (their common relation: one user's location replaced)"
            )
            raise BudgetError(f"{exc}; {hint}") from None

    def total(self, extra: tuple[Guarantee, ...] = ()) -> tuple[float, float]:
        """(epsilon, delta) spent, with ``extra`` records as if spent too, under the accountant's rule."""
        records = [*self._spent, *extra]
        if not records:
            return 0.0, 0.0
        return comp.total(records, rule=self.rule, slack=self.slack)

    def check(self, release) -> tuple[float, float]:
        """The (epsilon, delta) total if ``release`` were spent; BudgetError if that exceeds the budget."""
        record = self._record(release)
        eps, delta = self.total((record,))
        if not (_within(eps, self.epsilon) and _within(delta, self.delta)):
            spent = self.total()
            raise BudgetError(
                f"over budget: the release costs epsilon {record.epsilon:g}, delta {float(record.delta or 0):g}; "
                f"spent so far epsilon {spent[0]:g}, delta {spent[1]:g}; together epsilon {eps:g}, "
                f"delta {delta:g} ({self.rule} composition), above the budget epsilon {self.epsilon:g}, "
                f"delta {self.delta:g}. Nothing was spent: lower the release's epsilon (remaining() "
                "says how much is left) or start a new budget"
            )
        return eps, delta

    def spend(self, release) -> BudgetAccountant:
        """Spend ``release`` (a mechanism, whose ``guarantee()`` is taken, or a Guarantee); returns self.

        Refused with :class:`BudgetError`, leaving the accountant unchanged, if the total would exceed
        the budget; the first record fixes the relation when none was given.
        """
        record = self._record(release)
        self.check(record)
        self.relation = record.relation
        self._spent.append(record)
        return self

    def remaining(self, k: int = 1) -> tuple[float, float]:
        """(epsilon, delta) that each of ``k`` further pure releases may still spend together.

        Basic: (budget - spent) / k for epsilon and for delta.  zcdp: the largest epsilon e such
        that k more pure e-DP records keep the total within the budget (by bisection on the
        monotone total, to 1e-12 relative), with the delta left to the basic part.
        """
        if not (isinstance(k, int) and not isinstance(k, bool) and k >= 1):
            raise ValueError(f"remaining: k must be an integer >= 1, got {k!r}")
        eps, delta = self.total()
        delta_left = max(0.0, self.delta - delta) / k
        if self.rule == comp.BASIC or math.isinf(self.epsilon):
            return max(0.0, self.epsilon - eps) / k, delta_left
        relation = self.relation or "the accountant's relation"
        probe = Guarantee(model="epsilon-DP", epsilon=0.0, delta=0.0, relation=relation, covers="probe")

        def fits(e: float) -> bool:
            return _within(self.total((replace(probe, epsilon=e),) * k)[0], self.epsilon)

        if not fits(0.0):
            return 0.0, delta_left
        low, high = 0.0, self.epsilon  # k releases of the whole budget each never fit unless nothing was spent
        while high - low > 1e-12 * self.epsilon:
            mid = (low + high) / 2
            low, high = (mid, high) if fits(mid) else (low, mid)
        return low, delta_left
