"""The guarantee record: what a run promises, stated completely.

A bare "epsilon = 1" is not a promise: it needs the privacy model, the
neighbouring relation the epsilon is for, what information it covers, and how
the released values are discretised (continuous samplers on doubles are not
epsilon-DP at all, Mironov 2012).  ``epsilon`` is the value for the relation the
model implies (``relation``); other relations' values go in ``other_relations``
(e.g. central DP with a public n: replacing a user costs twice adding one).
``epsilon`` None means no formal guarantee holds; ``non_private_inputs`` then
names the private data the run used without accounting, if that is why.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

# the relation of central and distributed DP when the number of users is public: adding or
# removing a user would change n, so neighbours differ in one user's location (twice the add/remove cost)
REPLACE_ONE = "replace one user's location (n is public)"
ADD_REMOVE = "add/remove one user"

# The timing model a record can state: what an observer of one device's response time learns
# (issue 28).  The sampler modes of ``dp.sampling.discrete_laplace`` (timing_safe=False / True).
TIMING_BATCH = ("batch: noise drawn for many users in one vectorised call; the work per draw is constant "
                "except a rare exact slow path, so epsilon does not cover one user's response time")
TIMING_FIXED_WORK = ("fixed work: every draw takes one 64-bit word and the same vector operations, set by the "
                     "public scales and shapes, so the response time does not depend on the noise or the data; "
                     "delta includes the noise law's distance from exact (dp.sampling.timing_safe_delta)")


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

    def __post_init__(self):
        if self.epsilon is not None and not self.epsilon >= 0:
            raise ValueError(f"guarantee epsilon must be >= 0 or None, got {self.epsilon!r}")

    def as_dict(self) -> dict:
        return asdict(self)

    def leaked(self, what: str) -> "Guarantee":
        """This guarantee voided by a private input used without accounting (``what`` names it)."""
        leaks = "; ".join(x for x in (self.non_private_inputs, what) if x)
        return replace(self, epsilon=None, delta=None, other_relations={}, non_private_inputs=leaks,
                       note=f"{self.note} -- VOID: {leaks}; the stated budget would hold only without it")


def no_guarantee(note: str, covers: str = "nothing") -> Guarantee:
    """The record of a mechanism that claims no formal DP."""
    return Guarantee(model="none", epsilon=None, delta=None, relation="none", covers=covers, note=note)
