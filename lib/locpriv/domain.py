"""The public, data-independent geometry the server broadcasts: domain box and grid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import cf, nc3


@dataclass(frozen=True)
class Domain:
    xmin: float
    xmax: float
    ymin: float
    ymax: float

    def __post_init__(self):
        if not (self.xmax > self.xmin and self.ymax > self.ymin):
            raise ValueError(f"domain box must have xmax > xmin and ymax > ymin, got {self.as_list()}")

    @classmethod
    def from_list(cls, box) -> Domain:
        return cls(*map(float, box))

    def as_list(self) -> list[float]:
        return [self.xmin, self.xmax, self.ymin, self.ymax]

    @property
    def inscribed_square(self) -> float:
        """Side of the largest square inside the box (Lemma 3's l)."""
        return min(self.xmax - self.xmin, self.ymax - self.ymin)

    def contains(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return (x >= self.xmin) & (x <= self.xmax) & (y >= self.ymin) & (y <= self.ymax)


@dataclass(frozen=True)
class Grid:
    """P x Q evaluation grid of cell centres; arrays on it are indexed [p, q] = [x, y]."""

    x: np.ndarray
    y: np.ndarray
    domain: Domain

    @classmethod
    def regular(cls, domain: Domain, P: int, Q: int) -> Grid:
        if P < 2 or Q < 2:
            raise ValueError(f"grid needs P >= 2 and Q >= 2, got P={P}, Q={Q}")
        dx = (domain.xmax - domain.xmin) / P
        dy = (domain.ymax - domain.ymin) / Q
        return cls(domain.xmin + dx * (np.arange(P) + 0.5), domain.ymin + dy * (np.arange(Q) + 0.5), domain)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.x.size, self.y.size)

    @property
    def cell_area(self) -> float:
        return float((self.x[1] - self.x[0]) * (self.y[1] - self.y[0]))

    def to_dataset(self, units: str, crs: dict | None = None) -> nc3.Dataset:
        """The grid file: cell-centre coordinates in ``units`` (the configured length unit), the box, and
        the map projection's grid-mapping attrs ``crs`` (``locpriv.cf``; None: synthetic, no projection)."""
        length = cf.length_unit(units)
        variables = {
            name: nc3.Variable(*spec) for name, spec in cf.coordinates(self.x, self.y, length, crs is not None).items()
        }
        if crs is not None:
            variables[cf.GRID_MAPPING] = nc3.Variable((), np.int32(0), crs)
        return nc3.Dataset(
            variables, {"bbox": self.domain.as_list(), "projection": crs["long_name"] if crs else cf.NO_PROJECTION}
        )

    @classmethod
    def from_dataset(cls, ds) -> Grid:
        """The grid of a grid file's contents (``locpriv.nc3.Dataset`` or ``xarray.Dataset``)."""
        box = ds.attrs["bbox"]
        if isinstance(box, str):
            import json

            box = json.loads(box)
        return cls(ds["x"].values, ds["y"].values, Domain.from_list(box))

    def surface(self, values: np.ndarray, name: str, attrs: dict, geometry) -> nc3.Dataset:
        """``values`` (indexed [x, y]) on the grid as the variable ``name`` on dims (y, x), for
        ``locpriv.io.write_netcdf``.

        ``geometry``: the grid file's contents (its coordinates, their units and its grid mapping
        are copied), or just the configured length unit (no projection).  ``attrs`` should hold
        the variable's CF ``long_name`` and ``units``.
        """
        if isinstance(geometry, str):
            geometry = self.to_dataset(geometry)
        if cf.GRID_MAPPING in geometry.variables:
            attrs = {**attrs, "grid_mapping": cf.GRID_MAPPING}
        # the data variable first, as xarray orders a Dataset built from it and its coordinates (so
        # the dimensions come in the order xarray writes them: y, x)
        variables = {
            name: nc3.Variable(("y", "x"), np.asarray(values).T, attrs),
            **{k: geometry[k] for k in ("x", "y", cf.GRID_MAPPING) if k in geometry.variables},
        }
        return nc3.Dataset(variables, {"projection": geometry.attrs["projection"]})
