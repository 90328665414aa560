"""The public Python API: configured, validated, keyword-only mechanism objects.

In the style of IBM diffprivlib: a mechanism is configured once, its
parameters checked on construction, and then used on arrays::

    mech = GeoInd(epsilon=5.0, h=0.05)
    view = mech.randomize(xy, rng=rng)        # what the server sees
    density = mech.estimate(view, grid=grid)  # a pdf on the grid
    mech.guarantee()                          # the privacy record (model, epsilon, relation, ...)

Each class is a thin layer over the mechanism plugin the workflow uses
(``locpriv.mechanisms.get(name)``): parameters are validated by the plugin's
own ``Param`` declarations and every computation is the plugin's, so a
notebook and the Snakemake DAG run the same code and, for the same random
stream, give the same bytes.  The API answers one shard holding every user;
the DAG may split users into shards, each with its own stream.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import mechanisms
from .domain import Domain, Grid

__all__ = ["DPHeatmap", "FedKDE", "GeoInd", "HDG", "HeatmapFlat", "HeatmapHierarchical", "LDPKDTree",
           "LaplaceLDP", "OUEGrid", "PrivTree", "RFF", "SLDP", "Zero"]


def _points(xy) -> pd.DataFrame:
    """Users' locations as the plugins take them: columns user (int64), x, y (float)."""
    if isinstance(xy, pd.DataFrame):
        missing = {"x", "y"} - set(xy.columns)
        if missing:
            raise ValueError(f"xy: DataFrame lacks column(s) {sorted(missing)}; give columns x and y "
                             "(and optionally user)")
        user = xy["user"].to_numpy(np.int64) if "user" in xy.columns else np.arange(len(xy), dtype=np.int64)
        xy = xy[["x", "y"]].to_numpy(float)
    else:
        xy = np.asarray(xy, dtype=float)
        if xy.ndim != 2 or xy.shape[1] != 2:
            raise ValueError(f"xy: expected an (n, 2) array of locations, got shape {xy.shape}")
        user = np.arange(len(xy), dtype=np.int64)
    if not np.isfinite(xy).all():
        raise ValueError("xy: locations must be finite numbers (drop rows with NaN or inf first)")
    return pd.DataFrame({"user": user, "x": xy[:, 0], "y": xy[:, 1]})


def _randomize_grid(domain) -> Grid | None:
    """The plugin's ``grid`` argument at randomisation, from a Grid, a Domain or a box [xmin, xmax, ymin, ymax].

    Randomisation reads only the public domain box (to clamp, or to partition it); a
    Domain alone becomes a grid with no cells, so any use of cell centres fails loudly.
    """
    if domain is None or isinstance(domain, Grid):
        return domain
    if not isinstance(domain, Domain):
        domain = Domain.from_list(domain)
    return Grid(np.empty(0), np.empty(0), domain)


class _APIMechanism:
    """One registered mechanism plugin (``_name``) with its parameters fixed and validated."""

    _name = ""
    # randomisation clamps to or partitions the public domain box, so needs it
    _needs_domain = True

    def __init__(self, *args, **params):
        cls = type(self).__name__
        if args:
            raise TypeError(f"{cls}() takes keyword arguments only, e.g. {cls}(epsilon=1.0); "
                            f"got {len(args)} positional")
        if params.get("h") == "knn":
            raise ValueError(f"'{cls}.h': 'knn' is computed from a whole dataset's raw locations (the "
                             "workflow's bandwidth rule); give a number, e.g. locpriv.kde.knn_bandwidth(xy, k, rng)")
        self._plugin = mechanisms.get(self._name)
        self._params = self._plugin.validate(params, cls)

    @property
    def params(self) -> dict:
        """The validated parameters, defaults filled in."""
        return dict(self._params)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._params.items())})"

    def guarantee(self) -> dict:
        """The privacy record (``locpriv.dp.Guarantee.as_dict()``): model, epsilon, delta,
        neighbouring relation and what it covers; epsilon None where no formal DP holds."""
        return self._plugin.guarantee(self._params)

    def randomize(self, xy, *, rng: np.random.Generator, domain=None) -> pd.DataFrame:
        """The server's view of the users at ``xy`` ((n, 2) array, or DataFrame with x, y[, user]).

        ``domain`` (Grid, Domain or [xmin, xmax, ymin, ymax]) is the public box; required by
        mechanisms that clamp to it or partition it.  Server-side releases (a partition with
        counts, a refusal) travel in the returned DataFrame's ``attrs``.
        """
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng: expected a numpy Generator (e.g. locpriv.seeding.rng(seed, 'name')), "
                            f"got {type(rng).__name__}")
        grid = _randomize_grid(domain)
        if grid is None and self._needs_domain:
            raise ValueError(f"{type(self).__name__}.randomize: domain= is required (the public box "
                             "[xmin, xmax, ymin, ymax], a Domain or a Grid)")
        points = _points(xy)
        return self._plugin.randomize(points, self._plugin.for_users(self._params, len(points)), grid, rng)

    def estimate(self, view: pd.DataFrame, *, grid: Grid) -> np.ndarray:
        """Density (a pdf, (P, Q) array indexed [x, y]) on ``grid`` from a view of ``randomize``.

        Uses the same domain as ``randomize``.  A view with no users (e.g. every user
        refused the query) has no estimate: all NaN, as in the workflow.
        """
        if not isinstance(view, pd.DataFrame):
            raise TypeError(f"view: expected the DataFrame randomize returned, got {type(view).__name__}")
        if not isinstance(grid, Grid):
            raise TypeError(f"grid: expected a locpriv.Grid (e.g. Grid.regular(Domain(...), P, Q)), "
                            f"got {type(grid).__name__}")
        if len(view) == 0:
            return np.full(grid.shape, np.nan)
        params = self._plugin.for_users(self._params, len(view))
        return self._plugin.estimate(self._plugin.partial(view, params, grid), len(view), params, grid)

    def fit_estimate(self, xy, *, rng: np.random.Generator, grid: Grid) -> np.ndarray:
        """``estimate(randomize(xy, rng=rng, domain=grid), grid=grid)``."""
        return self.estimate(self.randomize(xy, rng=rng, domain=grid), grid=grid)


class FedKDE(_APIMechanism):
    """Exact federated KDE, no privacy (the reference of the RFF paper's Alg. 1). Parameters: h."""
    _name, _needs_domain = "fedkde", False


class GeoInd(_APIMechanism):
    """Geo-indistinguishability (Andrés et al. 2013): planar Laplace, then exact KDE. Parameters: epsilon, h."""
    _name, _needs_domain = "geoind", False


class Zero(_APIMechanism):
    """The 0-feature baseline: a constant answer, the uniform density. No parameters."""
    _name, _needs_domain = "zero", False


class LaplaceLDP(_APIMechanism):
    """Laplace LDP reports, naive or deconvoluting KDE (Farokhi 2020). Parameters: epsilon, h, estimator."""
    _name = "laplace_ldp"


class RFF(_APIMechanism):
    """Federated KDE with random Fourier features. Parameters: h, B, h0, max_features, risk, min_bands."""
    _name = "rff"


class SLDP(_APIMechanism):
    """Semi-local DP partition (Kroshnin & Suvorikova 2025). Parameters: epsilon, delta, max_depth,
    split_rule, threshold, calibration, leaves."""
    _name = "sldp"


class PrivTree(_APIMechanism):
    """Central-DP PrivTree partition (Zhang et al. 2016). Parameters: epsilon."""
    _name = "privtree"


class OUEGrid(_APIMechanism):
    """Optimized unary encoding over a 2^level grid (Wang et al. 2017). Parameters: epsilon, level."""
    _name = "ldp_oue_grid"


class LDPKDTree(_APIMechanism):
    """LDP kd-tree with private medians (Alptekin, Balioglu & Gursoy 2025). Parameters: epsilon, height,
    buckets."""
    _name = "ldp_kdtree"


class HDG(_APIMechanism):
    """HDG (Yang et al. 2021): user groups over 1-D and 2-D grids, OUE, consistency, weighted update.
    Parameters: epsilon, variant (hdg or tdg), fine_level."""
    _name = "hdg"


class DPHeatmap(_APIMechanism):
    """Adaptive distributed-DP heatmap (Bagdasaryan et al. 2022). Parameters: epsilon, depth, ..."""
    _name = "dp_heatmap"


class HeatmapFlat(_APIMechanism):
    """Flat distributed-DP heatmap baseline (Bagdasaryan et al. 2022 §6.2). Parameters: epsilon, depth, ..."""
    _name = "heatmap_flat"


class HeatmapHierarchical(_APIMechanism):
    """Hierarchical heatmap baseline (Bagdasaryan et al. 2022 §6.2). Parameters: epsilon, depth, ..."""
    _name = "heatmap_hierarchical"
