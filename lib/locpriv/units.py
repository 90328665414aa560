"""How a dataset's distance unit is written for readers.

The config gives a synthetic box no physical unit ("1"); printed as "[1]" it reads as a
dimensionless number, so tables and figures call it "domain units".
"""

from __future__ import annotations

LONG = {"m": "metres", "km": "kilometres"}


def name(unit: str) -> str:
    """The unit as tables write it: "m", "km", or "domain units" for a unitless box."""
    return "domain units" if str(unit) in ("", "1") else str(unit)


def long_name(unit: str) -> str:
    """The unit as axis labels write it: "metres", "kilometres", "domain units"."""
    return LONG.get(name(unit), name(unit))
