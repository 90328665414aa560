"""Ingest stage: a dataset spec from the config in, points and their metadata out."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..domain import Domain, Grid
from ..errors import InputError
from . import persons, synthetic
from . import points as real

# stop the ingest when more of the file than this is unusable (config: max_dropped_fraction)
DEFAULT_MAX_DROPPED_FRACTION = 0.01
# a density, a bandwidth and an attack need at least two users
MIN_USERS = 2


def domain_of(spec: dict) -> tuple[Domain, str]:
    """The public evaluation domain and its units, from the config alone."""
    if spec["source"] == "synthetic":
        return Domain.from_list(spec["bbox"]), spec.get("units", "1")
    if "lonlat_bbox" in spec:
        box, _ = real.projected_box(spec["lonlat_bbox"])
        return Domain.from_list(box), "m"
    return Domain.from_list(spec["bbox"]), spec.get("units", "1")


def grid_mapping_of(spec: dict) -> dict | None:
    """The CF grid-mapping attrs of the dataset's map projection; None where there is none (synthetic or x/y data)."""
    if spec["source"] != "synthetic" and "lonlat_bbox" in spec:
        return real.projected_box(spec["lonlat_bbox"])[1].grid_mapping()
    return None


def real_points(name: str, spec: dict, rng: np.random.Generator) -> tuple[pd.DataFrame, dict]:
    """Real points with user ids 0..N-1 and the metadata to record with them.

    Points are assigned virtual user ids by a seeded permutation, so the first
    n users of any run are a uniform random subsample (file order is by user
    and time and would bias a prefix).  With a ``user_column`` the person is
    kept as ``source_user`` and, with ``max_points_per_person``, each person's
    rows are capped (a seeded uniform subset) so that the person-level ε is at
    most cap × the record-level ε (:mod:`locpriv.datasets.persons`); with
    ``person_budget: split`` each person keeps one seeded row (cap 1), so the
    person-level ε is the configured ε; ``split_epsilon`` keeps up to the cap, each row
    then randomised at ε / cap (``person_reports``, set by ``config.person_split``).
    Rows dropped for bad or out-of-box coordinates above ``max_dropped_fraction``
    of the file stop the ingest with the counts.
    """
    box_key = "lonlat_bbox" if "lonlat_bbox" in spec else "bbox"
    col_keys = ("lon_column", "lat_column") if box_key == "lonlat_bbox" else ("x_column", "y_column")
    columns = tuple(
        spec.get(k, d)
        for k, d in zip(col_keys, ("lon", "lat") if box_key == "lonlat_bbox" else ("x", "y"), strict=True)
    )
    pts, report, meta = real.load_points(
        spec["path"], **{box_key: spec[box_key]}, columns=columns, user_column=spec.get("user_column")
    )
    limit = float(spec.get("max_dropped_fraction", DEFAULT_MAX_DROPPED_FRACTION))
    dropped = report.rows_read - report.rows_kept
    if dropped > limit * report.rows_read:
        keep = f"max_dropped_fraction: {real.fraction_above(dropped / report.rows_read)}"
        raise InputError(
            str(spec["path"]),
            "rows",
            f"{dropped} of {report.rows_read} rows "
            f"({dropped / report.rows_read:.1%}) dropped ({describe_drops(report.dropped)}), above "
            f"max_dropped_fraction {limit}",
            f"{report.advice(limit, name)}; or keep your box and drop the rows outside it with {keep}"
            if report.data_box
            else f"fix those rows, or set the dataset's {keep} in the config if dropping them is intended",
        )
    # person_budget split: one seeded row per person per release, so the person-level epsilon is the
    # configured one (group: up to max_points_per_person rows, person-level epsilon cap x epsilon)
    cap = 1 if spec.get("person_budget") == "split" else spec.get("max_points_per_person")
    if "source_user" in pts:
        meta["persons"] = int(pts["source_user"].nunique())
        if cap is not None:
            keep = persons.cap_rows(pts["source_user"].to_numpy(), int(cap), rng)
            meta["rows_over_person_cap"] = int((~keep).sum())
            pts = pts[keep].reset_index(drop=True)
        meta["max_rows_per_person"] = int(pts["source_user"].value_counts().max()) if len(pts) else 0
    meta["person_cap"] = int(cap) if cap is not None and "source_user" in pts else None
    budget = spec.get("person_budget", "group")
    if "source_user" in pts and budget != "group":  # (group, the default, keeps its records' bytes)
        meta["person_budget"] = budget  # how the cap's rows share the budget (persons.person_level_epsilon)
    if len(pts) < MIN_USERS:
        raise InputError(
            str(spec["path"]),
            "rows",
            f"only {len(pts)} usable row(s) of {report.rows_read} "
            f"({describe_drops(report.dropped)} dropped): the workflow needs at least {MIN_USERS} users",
            "point the dataset at a file with more rows inside its box",
        )
    order = rng.permutation(len(pts))
    pts = pts.iloc[order].reset_index(drop=True)
    pts.insert(0, "user", np.arange(len(pts), dtype=np.int64))
    meta.update(
        source=str(spec["path"]),
        licence=spec.get("licence", "see the source's SOURCE.md"),
        users=_users_note(meta, "source_user" in pts),
        dataset=name,
        n_users=len(pts),
    )
    return pts, meta


def _users_note(meta: dict, has_persons: bool) -> str:
    note = "each point is an independent virtual user (as [RFF-KDE] does with check-ins)"
    if not has_persons:
        return note + "; no person column"
    if meta["person_cap"] is None:
        return note + "; no per-person cap, so the person-level epsilon is unbounded"
    kept = note + f"; each person ({meta['user_column']!r}) keeps at most {meta['person_cap']} points, "
    if meta.get("person_budget") == "split_epsilon":
        return kept + "each randomised at epsilon / that cap, so the person-level epsilon is the configured epsilon"
    return kept + "so the person-level epsilon is person_cap x the record-level epsilon"


def describe_drops(dropped: dict) -> str:
    """'missing_coordinate 3, outside_bbox 20' (or 'none')."""
    return ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())) or "none"


def synthetic_batches(name: str, spec: dict, rng: np.random.Generator, batch: int):
    """Synthetic users in batches of ``batch`` (memory bounded whatever n_users).

    Returns (iterator of DataFrames, metadata function to call after the last batch).
    """
    n = int(spec["n_users"])
    domain, units = domain_of(spec)
    outside = [0]

    def frames():
        for start in range(0, n, batch):
            pts, _ = synthetic.generate(spec["pattern"], min(batch, n - start), rng)
            pts["user"] += start
            outside[0] += int((~domain.contains(pts.x.to_numpy(), pts.y.to_numpy())).sum())
            yield pts

    def metadata():
        return {
            "source": f"synthetic:{spec['pattern']}",
            "units": units,
            "bbox": domain.as_list(),
            "projection": "none",
            "licence": "generated",
            "rows_read": n,
            "rows_kept": n,
            "rows_dropped": {},
            "outside_domain": outside[0],
            "dataset": name,
            "n_users": n,
        }

    return frames(), metadata


def truth_density(spec: dict, grid: Grid, points: pd.DataFrame | None, h: float | None) -> tuple[np.ndarray, str]:
    """Reference density on the grid: analytic for synthetic data, complete-data KDE for real data."""
    from .. import kde

    if spec["source"] == "synthetic":
        return synthetic.PATTERNS[spec["pattern"]]().density(grid.x, grid.y), "analytic mixture density"
    total = kde.kde_sum(points[["x", "y"]].to_numpy(), grid.x, grid.y, h)
    return total / (len(points) * kde.normaliser(h)), f"complete-data Gaussian KDE, h={h}"
