"""Floating-point-safe DP primitives and the guarantee record every mechanism shares.

* :mod:`.sampling` – exact discrete Laplace sampling from a numpy Generator (inversion with
  certified float comparisons and an exact decimal slow path), and a fixed-work timing-safe mode;
* :mod:`.grid` – releasing bounded real values on a public power-of-two grid, so the
  set of reachable outputs never depends on the input (Mironov 2012);
* :mod:`.record` – :class:`Guarantee`, the formal claim a run records.
"""

from .record import (
    ADD_REMOVE,
    REPLACE_ONE,
    REPORT_PREFIX,
    TIMING_BATCH,
    TIMING_FIXED_WORK,
    TRUST_MODELS,
    Guarantee,
    no_guarantee,
)

__all__ = [
    "ADD_REMOVE",
    "REPLACE_ONE",
    "REPORT_PREFIX",
    "TIMING_BATCH",
    "TIMING_FIXED_WORK",
    "TRUST_MODELS",
    "Guarantee",
    "no_guarantee",
]
