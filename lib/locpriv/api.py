"""The public Python API: the mechanism classes themselves, configured and validated on construction.

In the style of IBM diffprivlib: a mechanism is configured once, its parameters checked on
construction (keyword-only, finite, in range; defaults filled), and then used on arrays::

    mech = GeoInd(epsilon=5.0, h=0.05)
    view = mech.randomize(xy)  # what the server sees; fresh OS entropy by default
    sim = mech.randomize(xy, rng=0)  # an int seed: a reproducible simulation only (replayable noise)
    density = mech.estimate(view, grid=grid)  # a pdf on the grid
    mech.guarantee()  # the privacy record (model, epsilon, relation, trust model, ...)

These are the classes the workflow's stages build for each run (``locpriv.mechanisms``), so a
notebook and the Snakemake DAG run the same code and, for the same random stream, give the same
bytes.  The API answers one shard holding every user; the DAG may split users into shards, each
with its own stream.  Every built-in mechanism is exported under its class name (``GeoInd``,
``LaplaceLDP``, ``RFF``, ``SLDP``, ...), read from the registry: a new mechanism module is
exported with no edit here.  :class:`BudgetAccountant` adds releases up against a total budget
(``locpriv.accountant``), by the composition rule of the workflow's ledger.
"""

from __future__ import annotations

from . import mechanisms
from .accountant import BudgetAccountant, BudgetError
from .domain import Domain, Grid
from .mechanisms.base import Mechanism

CLASSES = {
    cls.__name__: cls
    for cls in map(mechanisms.get, mechanisms.names())
    if cls.__module__.startswith(f"{mechanisms.__name__}.")
}
globals().update(CLASSES)

__all__ = [*sorted(CLASSES), "BudgetAccountant", "BudgetError", "Domain", "Grid", "Mechanism"]
