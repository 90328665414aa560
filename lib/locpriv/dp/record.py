"""The guarantee record: what a run promises, stated completely.

A bare "epsilon = 1" is not a promise: it needs the privacy model, the
neighbouring relation the epsilon is for, what information it covers, and how
the released values are discretised (continuous samplers on doubles are not
epsilon-DP at all, Mironov 2012).  ``epsilon`` is the value for the relation the
model implies (``relation``); other relations' values go in ``other_relations``
(e.g. central DP with a public n: replacing a user costs twice adding one).
``epsilon`` None means no formal guarantee holds; ``non_private_inputs`` then
names the private data the run used without accounting, if that is why.
``trust_model`` says whom the users must trust for the record to hold
(:data:`TRUST_MODELS`); the location mechanisms state it, records of the studies
leave it None.  ``timing`` is the response-time model the record covers
(:data:`TIMING_BATCH` or :data:`TIMING_FIXED_WORK`); every location mechanism states it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

# the relation of central and distributed DP when the number of users is public: adding or
# removing a user would change n, so neighbours differ in one user's location (twice the add/remove cost)
REPLACE_ONE = "replace one user's location (n is public)"
ADD_REMOVE = "add/remove one user"
# a person-level record's key, in other_relations, of one of its reports' own relation (Guarantee.split_over)
REPORT_PREFIX = "one report: "

# whom a user must trust for a mechanism's guarantee to hold
TRUST_MODELS = {
    "local": "nobody: each user randomises on their own device before anything leaves it",
    "distributed": "the secure aggregation: the server learns only sums over many users (no collusion "
    "between the server and the other users)",
    "central": "the curator, which sees every raw location and releases only the noisy result",
    "none": "none would help: the reports reveal the location (no formal claim)",
}

# The timing model a record can state: what an observer of one device's response time learns
# (issue 28).  The sampler modes of ``dp.sampling.discrete_laplace`` (timing_safe=False / True).
TIMING_BATCH = (
    "batch: noise drawn for many users in one vectorised call; the work per draw is constant "
    "except a rare exact slow path, so epsilon does not cover one user's response time"
)
TIMING_FIXED_WORK = (
    "fixed work: every draw takes one 64-bit word and the same vector operations, set by the "
    "public scales and shapes, so the response time does not depend on the noise or the data; "
    "delta includes the noise law's distance from exact (dp.sampling.timing_safe_delta)"
)


@dataclass(frozen=True)
class Guarantee:
    model: str
    epsilon: float | None
    delta: float | None
    relation: str
    covers: str
    discretisation: str = "none (nothing numeric is released)"
    note: str = ""
    non_private_inputs: str = ""
    other_relations: dict = field(default_factory=dict)
    trust_model: str | None = None
    timing: str | None = None

    def __post_init__(self):
        if self.epsilon is not None and not self.epsilon >= 0:
            raise ValueError(f"guarantee epsilon must be >= 0 or None, got {self.epsilon!r}")
        if self.trust_model is not None and self.trust_model not in TRUST_MODELS:
            raise ValueError(
                f"guarantee trust_model must be one of {list(TRUST_MODELS)} or None, got {self.trust_model!r}"
            )
        if self.timing not in (None, TIMING_BATCH, TIMING_FIXED_WORK):
            raise ValueError(
                f"guarantee timing must be dp.TIMING_BATCH, dp.TIMING_FIXED_WORK or None, got {self.timing!r}"
            )

    def __repr__(self) -> str:
        # the bound under every stated relation first: "epsilon=4" alone reads as the add/remove cost
        fields = ", ".join(
            f"{k}={v!r}" for k, v in self.as_dict().items() if k not in ("epsilon", "delta", "other_relations")
        )
        return f"Guarantee<{self.describe()}>({fields})"

    def describe(self, unit: str | None = None) -> str:
        """The promise in words: the bound under each relation the record states, its own first.

        "ε = 4 (replace one user's location (n is public)); ε = 2 (add/remove one user)" for
        PrivTree(epsilon=2); a metric record's epsilon is per unit of distance ("ε = 1 per km
        (metric: ...)"; ``unit`` names it, default the unit the relation names); "no proof: <model>"
        where no epsilon holds.  The frontier's ``guarantee`` column and ``runs.csv`` show this text.
        """
        if self.epsilon is None:
            why = self.non_private_inputs and f"voided by {self.non_private_inputs}"
            return f"no proof: {why or self.model}" if (why or self.model != "none") else "no proof"
        bounds = [(self.relation, self.epsilon), *self.other_relations.items()]
        return "; ".join(self._bound(relation, eps, unit) for relation, eps in bounds)

    def _bound(self, relation: str, epsilon: float, unit: str | None) -> str:
        delta = f", δ = {self.delta:.3g}" if self.delta else ""
        if not relation.startswith("metric"):
            return f"ε = {epsilon:g}{delta} ({relation})"
        named = unit or (relation.rsplit(" in ", 1)[1] if " in " in relation else "")
        # a mechanism built without the dataset's unit names it "distance units of the dataset"
        per = (
            "domain unit"
            if named in ("", "1", "domain units")
            else "distance unit"
            if "of the dataset" in named
            else named
        )
        return f"ε = {epsilon:g} per {per}{delta} ({relation})"

    def as_dict(self) -> dict:
        """The record for files; ``trust_model`` and ``timing`` only where stated, so the studies' records
        keep their bytes."""
        out = asdict(self)
        for key in ("trust_model", "timing"):
            if out[key] is None:
                del out[key]
        return out

    @property
    def metric(self) -> bool:
        """Metric DP (geo-indistinguishability): epsilon is per unit of distance between two inputs."""
        return self.relation.startswith("metric")

    def map(self, d_in: float, relation: str | None = None) -> tuple[float, float] | None:
        """The privacy map (OpenDP's sense): the (epsilon, delta) for inputs ``d_in`` apart; None without a claim.

        ``relation``: one of ``other_relations`` (default: the record's own ``relation``).

        * metric DP: ``d_in`` is a distance in the record's units, the map is
          (epsilon * d_in, 0) by definition of epsilon-geo-indistinguishability
          (Andrés et al. 2013, Def. 3.1); a metric record with delta > 0 (a fixed-work sampler
          within total variation delta of the exact one) gives (epsilon d_in,
          (1 + e^(epsilon d_in)) delta), capped at 1 (``planar_laplace.guarantee``);
        * pure or approximate DP (local, central, distributed, SLDP inside a region): ``d_in``
          is a number of neighbouring steps under the relation (a group of ``d_in`` users, or
          one user changed ``d_in`` times), and group privacy gives
          (d_in * epsilon, d_in * exp((d_in - 1) * epsilon) * delta).  Proof by induction on
          d_in: chaining the (epsilon, delta) inequality over the path x_0 ~ x_1 ~ ... ~ x_k gives
          delta_k = delta * sum_{i<k} e^(i epsilon) <= k e^((k-1) epsilon) delta (Dwork & Roth 2014,
          "The Algorithmic Foundations of DP", Thm 2.2 for delta = 0; Vadhan 2017, "The
          Complexity of Differential Privacy", group privacy, for delta > 0).  A delta above 1
          bounds nothing, so the map caps it at 1.
        """
        if self.epsilon is None:
            return None
        if relation is not None and relation != self.relation and relation not in self.other_relations:
            raise ValueError(
                f"relation {relation!r} is not stated by this guarantee; stated: "
                f"{[self.relation, *self.other_relations]}"
            )
        epsilon = float(self.other_relations.get(relation, self.epsilon) if relation else self.epsilon)
        delta = float(self.delta or 0.0)
        ok = isinstance(d_in, (int, float)) and not isinstance(d_in, bool) and math.isfinite(d_in) and d_in >= 0
        if not ok or (not self.metric and not float(d_in).is_integer()):
            what = "a distance" if self.metric else "an integer: neighbouring steps"
            raise ValueError(f"d_in must be a finite number >= 0 ({what}), got {d_in!r}")
        if self.metric:
            loss = epsilon * d_in
            if not delta:
                return loss, 0.0
            return loss, min(1.0, (1 + math.exp(loss)) * delta) if loss < 700 else 1.0
        k = int(d_in)
        if not (k and delta):
            return k * epsilon, 0.0
        exponent = (k - 1) * epsilon
        # e^700 is near the largest double; long before it the cap applies (delta >= 1e-300)
        return k * epsilon, min(1.0, k * math.exp(exponent) * delta) if exponent < 700 else 1.0

    def split_over(self, k: int) -> Guarantee:
        """The person-level record of k independent reports, each one with this record (at epsilon / k).

        ``person_budget: split_epsilon`` (issue 28 item 8): a person with up to k rows sends one
        report per row, each randomised by this (local) mechanism at the per-report epsilon e, so
        the configured epsilon k e is the person's.  Model: the same as one report's; neighbouring
        relation: one person's up to k locations replaced by any others (their number, at most k, is
        public, as n is).  Proof sketch: the reports are drawn independently, so the output
        probability of the person's reports factorises; changing the person's inputs changes each
        of its m <= k factors by at most e^e (plus delta_i), hence the product by at most e^(m e) <=
        e^(k e) with delta <= k delta (basic composition, Dwork & Roth 2014, Thm 3.16).  A person
        with fewer rows spends m e < k e.  Metric DP (geo-indistinguishability): each report
        costs e d_i for its location moved by d_i, so the person costs e sum_i d_i <= k e max_i d_i:
        the record's epsilon k e is per unit of the person's largest move.  One report's own
        guarantee is kept in ``other_relations`` under ``"one report: " + its relation`` (what the
        audit of a single report checks).
        """
        if not (isinstance(k, int) and k >= 1):
            raise ValueError(f"reports per person must be an integer >= 1, got {k!r}")
        if self.epsilon is None:
            return self
        relation = (
            f"metric: one person's up to {k} locations each moved by at most d (epsilon per unit of d; their "
            "number is public)"
            if self.metric
            else f"any two inputs of one person: up to {k} locations each (local; their number is public)"
        )
        one = {f"{REPORT_PREFIX}{self.relation}": self.epsilon}
        one.update({f"{REPORT_PREFIX}{r}": v for r, v in self.other_relations.items()})
        return replace(
            self,
            epsilon=k * self.epsilon,
            delta=None if self.delta is None else min(1.0, k * self.delta),
            relation=relation,
            covers=f"each person's up to {k} rows, one report each at epsilon / {k}: {self.covers}",
            other_relations=one,
            note=f"{self.note}; person_budget split_epsilon: basic composition of {k} reports".lstrip("; "),
        )

    def leaked(self, what: str) -> Guarantee:
        """This guarantee voided by a private input used without accounting (``what`` names it)."""
        leaks = "; ".join(x for x in (self.non_private_inputs, what) if x)
        return replace(
            self,
            epsilon=None,
            delta=None,
            other_relations={},
            non_private_inputs=leaks,
            note=f"{self.note} -- VOID: {leaks}; the stated budget would hold only without it",
        )


def no_guarantee(note: str, covers: str = "nothing") -> Guarantee:
    """The record of a mechanism that claims no formal DP."""
    return Guarantee(model="none", epsilon=None, delta=None, relation="none", covers=covers, note=note)
