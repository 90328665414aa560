"""Federated radio-map construction with geometry-aligned DP and the WCL attack ([GeoDP-Radio]).

Modules: ``geometry`` (grid, exact vectorised link traversal, sparse storage),
``environment`` (synthetic city), ``scenario`` (config -> environment, links,
measurements), ``model`` (eqs. 1-3 and gradients 8-9), ``noise`` (clipping,
noise budgets, the schemes ``radio_fedavg`` / ``radio_uniform`` / ``radio_geo``, the uploads
and their guarantees), ``geo`` (Alg. 1, the geometry-aligned allocation), ``training`` (the
protocol, eqs. 10-11), ``wcl`` (the WCL attack, eq. 18),
``tables`` (transcript and result tables), ``config`` (validate_config), ``study`` (the
workflow's stages and tidy summary), ``plots`` (the figures).
"""

from .config import validate_config
from .noise import SCHEMES, guarantee
from .wcl import localisation_error, wcl

__all__ = ["SCHEMES", "guarantee", "localisation_error", "validate_config", "wcl"]
