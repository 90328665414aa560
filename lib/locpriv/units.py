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


def distance(value: float, unit: str) -> str:
    """A distance for readers, with its unit and three significant digits: "254 m", "10.5 km"
    (metres from 1000 up as kilometres, kilometres below 1 as metres), "0.612 domain units"."""
    v = float(value)
    if v != v:  # NaN
        return "—"
    shown = name(unit)
    if shown == "m" and abs(v) >= 1000:
        v, shown = v / 1000, "km"
    elif shown == "km" and abs(v) < 1:
        v, shown = v * 1000, "m"
    text = f"{v:.3g}"
    return f"{v:.0f} {shown}" if "e" in text else f"{text} {shown}"
