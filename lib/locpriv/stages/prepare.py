"""ingest, encode, bandwidth and truth stages."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from .. import cf, io, kde
from ..config import ConfigError
from ..datasets import ingest as ds_ingest
from ..datasets import windows
from ..domain import Grid
from ..errors import InputError
from ..sanity import DEFAULTS, knn_warnings, too_few_users
from ..seeding import rng as make_rng
from ..smk import console, warn

# Points are sorted by user id; row groups of this size let a shard job read
# only the groups its user range overlaps (Parquet min/max statistics).
POINTS_ROW_GROUP = 65_536
# relative distance error of the equirectangular projection above which ingest warns
PROJECTION_WARN = 0.01


def ingest(
    *, name: str, spec: dict, seed: int, out_points: str, out_meta: str, requested: list[tuple[str, int]] = ()
) -> None:
    """Points and metadata of one dataset; ``requested``: the runs' (config key, n), checked against
    the users kept before anything is written (``locpriv.sanity.too_few_users``)."""
    # a window of a dataset (datasets.windows) draws from the dataset's stream: the windows share its persons
    rng = make_rng(seed, "ingest", windows.base_name(name, spec))
    if spec["source"] == "synthetic":
        frames, metadata_of = ds_ingest.synthetic_batches(name, spec, rng, POINTS_ROW_GROUP)
        meta = io.write_parquet_batches(frames, out_points, metadata_of, POINTS_ROW_GROUP)
    else:
        pts, meta = ds_ingest.real_points(name, spec, rng)
        problem = too_few_users(list(requested), name, meta)
        if problem:
            raise ConfigError(problem)
        io.write_parquet(pts, out_points, metadata=meta, row_group_size=POINTS_ROW_GROUP)
    io.write_json(meta, out_meta)
    for line in ingest_report(name, meta):
        (warn if line.startswith("warning:") else console)(line)


def ingest_report(name: str, meta: dict) -> list[str]:
    """The console lines of an ingest: rows read, kept and dropped by reason; persons; projection warning."""
    lines = [
        f"ingest {name}: {meta['rows_read']} rows read, {meta['n_users']} kept as users; dropped: "
        f"{ds_ingest.describe_drops(meta['rows_dropped'])}"
        + (
            f"; {meta['rows_over_person_cap']} over the per-person cap {meta['person_cap']}"
            if meta.get("person_cap")
            else ""
        )
    ]
    if "persons" in meta:  # rows come from fewer people: what one row's epsilon means for a person
        persons = meta["persons"]
        lines.append(
            f"ingest {name}: {persons:,} person{'s' if persons != 1 else ''}, up to "
            f"{meta['max_rows_per_person']:,} rows each; "
            + (
                f"each row randomised at epsilon / {meta['person_cap']}, person-level epsilon = the configured "
                "epsilon (person_budget: split_epsilon)"
                if meta.get("person_budget") == "split_epsilon"
                else f"person-level epsilon = {meta['person_cap']} x the row-level epsilon "
                "(max_points_per_person, or person_budget: split)"
                if meta.get("person_cap")
                else "person-level epsilon unbounded: set max_points_per_person or person_budget: split"
            )
        )
    error = meta.get("projection_max_distance_error", 0.0)
    if error > PROJECTION_WARN:
        lines.append(
            f"warning: ingest {name}: the equirectangular projection distorts distances by up to "
            f"{error:.1%} over lonlat_bbox {meta['lonlat_bbox']} (> {PROJECTION_WARN:.0%}); "
            "use a smaller box, or project the data yourself and give x/y with bbox"
        )
    return lines


def encode_grid(*, spec: dict, grid_spec: dict, out_grid: str) -> None:
    domain, units = ds_ingest.domain_of(spec)
    grid = Grid.regular(domain, int(grid_spec["P"]), int(grid_spec["Q"]))
    io.write_netcdf(grid.to_dataset(units, ds_ingest.grid_mapping_of(spec)), out_grid)


def bandwidth(
    *,
    points_path: str,
    name: str,
    k: int,
    seed: int,
    out_json: str,
    spec: dict | None = None,
    limits: dict | None = None,
) -> None:
    """The kNN bandwidth; with ``spec`` and ``limits`` (``locpriv.sanity``), warn when it is absurdly wide."""
    pts = pd.read_parquet(points_path, columns=["x", "y"]).to_numpy()
    if not 1 <= int(k) < len(pts):  # the k-th neighbour of a point must be another point
        local = max(1, int((limits or DEFAULTS)["max_knn_fraction"] * len(pts)))
        raise InputError(
            points_path,
            "x/y",
            f"knn_k = {k} nearest neighbours asked of dataset '{name}', which has {len(pts)} points",
            f"set datasets.{name}.knn_k to at most {len(pts) - 1} ({local} keeps the bandwidth local: "
            "sanity.max_knn_fraction), or give the mechanisms a numeric h",
        )
    h = kde.knn_bandwidth(pts, int(k), make_rng(seed, "bandwidth", name, int(k)))
    if h <= 0:
        raise InputError(
            points_path,
            "x/y",
            f"the bandwidth h: knn of dataset '{name}' is 0: the sampled points "
            f"each share their location with more than knn_k = {k} others (identical points)",
            f"raise datasets.{name}.knn_k above the largest number of identical points, or give a numeric h",
        )
    for line in knn_warnings(name, spec, h, int(k), len(pts), limits) if spec and limits else []:
        warn(line)
    io.write_json(
        {
            "h": h,
            "k": int(k),
            "sample_fraction": 0.1,
            "n_points": len(pts),
            "rule": "mean distance from a 10% sample to the k-th nearest neighbour ([RFF-KDE] §4.2.4)",
        },
        out_json,
    )


def load_grid(path: str) -> Grid:
    return Grid.from_dataset(io.read_nc3(path))


def truth(*, spec: dict, points_path: str, grid_path: str, bandwidth_json: str | None, out_truth: str) -> None:
    geometry = io.read_nc3(grid_path)
    grid = Grid.from_dataset(geometry)
    pts = pd.read_parquet(points_path, columns=["x", "y"]) if spec["source"] != "synthetic" else None
    h = io.read_json(bandwidth_json)["h"] if bandwidth_json else None
    dens, how = ds_ingest.truth_density(spec, grid, pts, h)
    attrs = {
        "long_name": "true probability density of the users' locations",
        "units": density_units(geometry),
        "truth": how,
    }
    io.write_netcdf(grid.surface(dens, "density", attrs, geometry), out_truth)


def density_units(geometry) -> str:
    """CF units of a density on the grid of the grid file's contents ``geometry``, e.g. 'm-2'."""
    return cf.per_area(geometry["x"].attrs["units"])


def pooled_kde(*, points_path: str, n_users: int, h: float, grid_path: str, out_nc: str) -> None:
    """Exact KDE of the first ``n_users`` users at bandwidth h: [RFF-KDE]'s reference.

    [RFF-KDE] §4.2.1 scores every private estimate against 'Federated KDE on the full
    (pooled) dataset', i.e. the non-private estimate from the same users and
    bandwidth; its Spearman then isolates what privacy costs, apart from the KDE's
    own smoothing bias against the analytic density.
    """
    geometry = io.read_nc3(grid_path)
    grid = Grid.from_dataset(geometry)
    total, seen = np.zeros(grid.shape), 0
    # one row per user, sorted by id: the first n users are the first n rows.  pre_buffer=False:
    # pyarrow's pre-buffering keeps every batch read (RSS grew to 2.2 GB at 10^8 users)
    for batch in pq.ParquetFile(points_path, pre_buffer=False).iter_batches(POINTS_ROW_GROUP, columns=["x", "y"]):
        pts = np.column_stack([batch.column("x").to_numpy(), batch.column("y").to_numpy()])[: n_users - seen]
        total += kde.kde_sum(pts, grid.x, grid.y, h)
        seen += len(pts)
        if seen == n_users:
            break
    dens = total / (seen * kde.normaliser(h))
    attrs = {
        "long_name": "exact Gaussian KDE of the users' locations (the non-private reference)",
        "units": density_units(geometry),
        "reference": f"exact Gaussian KDE of users 0..{n_users - 1}, h={h}",
        "n_users": n_users,
    }
    io.write_netcdf(grid.surface(dens, "density", attrs, geometry), out_nc)
