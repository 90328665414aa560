"""Ingest stage: a dataset spec from the config in, points and their metadata out."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..domain import Domain, Grid
from ..errors import InputError
from . import persons, synthetic, times, windows
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
    timed = {k: spec[k] for k in ("time_column", "time_format", "time_zone") if k in spec}
    pts, report, meta = real.load_points(
        spec["path"], **{box_key: spec[box_key]}, columns=columns, user_column=spec.get("user_column"), **timed
    )
    limit = float(spec.get("max_dropped_fraction", DEFAULT_MAX_DROPPED_FRACTION))
    if "time_column" in spec:  # rows dropped for their time: the line names the time keys
        error = times.too_many_dropped(str(spec["path"]), spec, report.dropped, report.rows_read, limit)
        if error:
            raise error
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
    if "window" in spec:  # one window's release (datasets.windows): its rows only, the others counted;
        # the per-person cap below applies per window, as to any release
        keep = windows.inside(pts["time"], spec)
        meta["rows_outside_window"] = int((~keep).sum())
        meta["window"] = spec["window"]
        pts = pts[keep].reset_index(drop=True)
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

    Returns (iterator of DataFrames, metadata function to call after the last batch).  With a
    ``trajectory``, ``n_users`` persons each give days x per_day rows (:func:`synthetic.trajectories`).
    """
    if "trajectory" in spec:
        return _trajectory_batches(name, spec, rng, batch)
    n = int(spec["n_users"])
    domain, _ = domain_of(spec)
    outside = [0]

    def frames():
        for start in range(0, n, batch):
            pts, _ = synthetic.generate(spec["pattern"], min(batch, n - start), rng)
            pts["user"] += start
            outside[0] += int((~domain.contains(pts.x.to_numpy(), pts.y.to_numpy())).sum())
            yield pts

    def metadata():
        return _synthetic_meta(name, spec, n, outside[0])

    return frames(), metadata


def _synthetic_meta(name: str, spec: dict, rows: int, outside: int) -> dict:
    domain, units = domain_of(spec)
    return {
        "source": f"synthetic:{spec['pattern']}",
        "units": units,
        "bbox": domain.as_list(),
        "projection": "none",
        "licence": "generated",
        "rows_read": rows,
        "rows_kept": rows,
        "rows_dropped": {},
        "outside_domain": outside,
        "dataset": name,
        "n_users": rows,
    }


def _trajectory_batches(name: str, spec: dict, rng: np.random.Generator, batch: int):
    """``synthetic_batches`` of a trajectory dataset: whole persons per batch, rows in person and time order
    (each row a virtual user, as a real dataset's rows are; the first n rows are the first persons')."""
    traj = {"stay": 0.8, "start": "2026-01-05", **spec["trajectory"]}
    persons, steps = int(spec["n_users"]), int(traj["days"]) * int(traj["per_day"])
    per_batch = max(1, batch // steps)
    domain, _ = domain_of(spec)
    seen = {"outside": 0, "first": None, "last": None, "rows": 0}

    def frames():
        for start in range(0, persons, per_batch):
            pts = synthetic.trajectories(
                spec["pattern"],
                min(per_batch, persons - start),
                days=int(traj["days"]),
                per_day=int(traj["per_day"]),
                stay=float(traj["stay"]),
                start=str(traj["start"]),
                rng=rng,
            )
            pts["source_user"] = (pts["source_user"].astype(int) + start).astype(str)
            pts = pts[windows.inside(pts["time"], spec)].reset_index(drop=True)
            pts.insert(0, "user", np.arange(seen["rows"], seen["rows"] + len(pts), dtype=np.int64))
            seen["rows"] += len(pts)
            seen["outside"] += int((~domain.contains(pts.x.to_numpy(), pts.y.to_numpy())).sum())
            if len(pts):
                seen["first"] = min(filter(None, (seen["first"], pts["time"].min())))
                seen["last"] = max(filter(None, (seen["last"], pts["time"].max())))
            yield pts

    def metadata():
        # rows per person: all of a person's rows, or those of the window (per_day x the window's days)
        rows = seen["rows"] // persons
        per_person = {"min": float(rows), "median": float(rows), "p90": float(rows), "max": float(rows)}
        days = float(rows // int(traj["per_day"]))
        return {
            **_synthetic_meta(name, spec, seen["rows"], seen["outside"]),
            **({"window": spec["window"]} if "window" in spec else {}),
            "persons": persons,
            "person_cap": rows,
            "rows_over_person_cap": 0,
            "max_rows_per_person": rows,
            "user_column": "source_user",
            "trajectory": traj,
            "time_first": seen["first"].isoformat(),
            "time_last": seen["last"].isoformat(),
            "time_span_days": float((seen["last"] - seen["first"]) / pd.Timedelta(days=1)),
            "rows_per_person": per_person,
            "days_per_person": {k: days for k in per_person},
        }

    return frames(), metadata


def truth_density(spec: dict, grid: Grid, points: pd.DataFrame | None, h: float | None) -> tuple[np.ndarray, str]:
    """Reference density on the grid: analytic for synthetic data, complete-data KDE for real data."""
    from .. import kde

    if spec["source"] == "synthetic":
        return synthetic.PATTERNS[spec["pattern"]]().density(grid.x, grid.y), "analytic mixture density"
    total = kde.kde_sum(points[["x", "y"]].to_numpy(), grid.x, grid.y, h)
    return total / (len(points) * kde.normaliser(h)), f"complete-data Gaussian KDE, h={h}"
