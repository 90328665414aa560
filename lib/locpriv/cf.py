"""CF conventions (CF-1.10) of the NetCDF files the workflow writes: units, names and records as attributes.

Every file carries ``Conventions: CF-1.10``; its maps are on dims ``(y, x)`` (so
``xr.open_dataset(path).density.plot()`` draws north up, with the axes' units); every
variable has a ``long_name`` and ``units`` in UDUNITS spelling.  A length is in metres
(``m``) for projected real data, or in the dataset's configured unit; a synthetic
dataset's box has no physical unit, so its length unit is named ``domain_unit`` (a
density is then ``domain_unit-2``).  Real lon/lat data are projected by an
equirectangular map (``locpriv.datasets.points.LocalProjection``), which CF-1.10 lists
no ``grid_mapping_name`` for: its grid-mapping variable ``crs`` states it as ``crs_wkt``
(OGC WKT2, EPSG method 1029 on a sphere), as pyproj and GDAL write such projections,
with its parameters also under CF's attribute names.  Synthetic data (and x/y data given
already projected) have no stated map projection: their files say so in the global
``projection`` attribute.

The library keeps its arrays (P, Q) indexed [x, y]; only the files are (y, x):
``locpriv.io`` transposes on writing and reading.
"""

from __future__ import annotations

import json
import re

CONVENTIONS = "CF-1.10"
# the length unit of a box configured without one (the synthetic patterns' [-3, 3]^2)
DOMAIN_UNIT = "domain_unit"
NO_PROJECTION = (
    "none stated: x and y are plane coordinates in the dataset's units (synthetic data, or x/y "
    "data projected before locpriv)"
)
GRID_MAPPING = "crs"


def length_unit(units: str) -> str:
    """The UDUNITS spelling of a dataset's configured length unit ('1', the default, has no physical unit)."""
    return DOMAIN_UNIT if units in ("", "1") else units


def per_area(length: str) -> str:
    """The unit of a density per unit area, e.g. 'm' -> 'm-2'."""
    return f"{length}-2"


def coordinates(x, y, length: str, projected: bool) -> dict:
    """(dims, values, attrs) of the x and y coordinate variables of cell centres."""
    out = {}
    for axis, values in (("x", x), ("y", y)):
        attrs = {
            "long_name": f"{axis} coordinate of the grid cell centre"
            + (" (projected)" if projected else " in the domain box"),
            "units": length,
            "axis": axis.upper(),
        }
        if projected:  # CF's standard names for a projection's coordinates need a grid mapping
            attrs = {"standard_name": f"projection_{axis}_coordinate", **attrs}
        out[axis] = ((axis,), values, attrs)
    return out


def equirectangular(lon0: float, lat0: float, radius: float) -> dict:
    """The grid-mapping attrs of x = R cos(lat0) (lon - lon0), y = R (lat - lat0) (radians), R in metres.

    That is EPSG's "Equidistant Cylindrical (Spherical)" (method 1029) with standard
    parallel lat0, central meridian lon0 and false northing -R lat0 (its y counts from the
    equator).
    """
    import math

    false_northing = -radius * math.radians(lat0)
    wkt = (
        'PROJCRS["locpriv equirectangular",BASEGEOGCRS["sphere",DATUM["sphere",'
        f'ELLIPSOID["sphere",{radius!r},0,LENGTHUNIT["metre",1]]],'
        'PRIMEM["Greenwich",0,ANGLEUNIT["degree",0.0174532925199433]]],'
        'CONVERSION["equirectangular",METHOD["Equidistant Cylindrical (Spherical)",ID["EPSG",1029]],'
        f'PARAMETER["Latitude of 1st standard parallel",{lat0!r},ANGLEUNIT["degree",0.0174532925199433]],'
        f'PARAMETER["Longitude of natural origin",{lon0!r},ANGLEUNIT["degree",0.0174532925199433]],'
        'PARAMETER["False easting",0,LENGTHUNIT["metre",1]],'
        f'PARAMETER["False northing",{false_northing!r},LENGTHUNIT["metre",1]]],'
        'CS[Cartesian,2],AXIS["easting (X)",east,ORDER[1],LENGTHUNIT["metre",1]],'
        'AXIS["northing (Y)",north,ORDER[2],LENGTHUNIT["metre",1]]]'
    )
    return {
        "long_name": f"equirectangular projection about lon0={lon0}, lat0={lat0} on a sphere of radius "
        f"{radius} m (CF-1.10 names no grid_mapping_name for it: see crs_wkt)",
        "crs_wkt": wkt,
        "earth_radius": float(radius),
        "standard_parallel": float(lat0),
        "longitude_of_central_meridian": float(lon0),
        "false_easting": 0.0,
        "false_northing": false_northing,
    }


def flat(prefix: str, value) -> dict:
    """A nested record as readable attrs: ``{"a": {"b": 1}}`` -> ``{prefix_a_b: 1}``.

    Strings, ints and floats stay as they are; None is written "none", a bool "true"/"false",
    a list as JSON (NetCDF-3 attrs are numbers or text).
    """
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(flat(f"{prefix}_{re.sub(r'[^0-9A-Za-z_]', '_', str(key))}", item))
        return out
    if value is None:
        return {prefix: "none"}
    if isinstance(value, bool):
        return {prefix: str(value).lower()}
    if isinstance(value, (str, int, float)):
        return {prefix: value}
    if hasattr(value, "item"):  # a numpy scalar
        return flat(prefix, value.item())
    return {prefix: json.dumps(value, sort_keys=True, default=str)}
