"""The shared utility workload: one set of anchored range queries per dataset.

Every mechanism's density (and the truth) answers the same queries, drawn once per
dataset from the config seed (Kroshnin & Suvorikova 2025, App. A.2: anchors at
random data points, sides log-uniform in [1/256, 1/8] of the domain, kept if the
true count is in [20, 0.05 N]).  The anchors and counts come from a uniform sample
of at most ``workload_points`` users, so the rejection step's (queries x points)
matrix stays bounded on large real datasets; the count bounds then refer to the
sample.  Only the sampled rows are read, so memory follows the sample, not N.  The
workload's SHA-256 goes into its metadata and every run's metrics.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from .. import io
from ..errors import InputError
from ..seeding import rng as make_rng
from ..sldp.range_queries import anchored_workload
from .prepare import load_grid

COLUMNS = ["xmin", "xmax", "ymin", "ymax"]
DEFAULTS = {"range_queries": 200, "workload_points": 20000, "hotspot_k": 100}


def settings(config: dict) -> dict:
    """The ``utility`` config section with its defaults."""
    return {**DEFAULTS, **config.get("utility", {})}


def workload_hash(queries: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(queries, dtype="<f8").tobytes()).hexdigest()


def range_workload(
    *, dataset: str, points_path: str, grid_path: str, utility_cfg: dict, seed: int, out_parquet: str
) -> None:
    rng = make_rng(seed, "range-workload", dataset)
    n, keep = pq.read_metadata(points_path).num_rows, int(utility_cfg["workload_points"])
    rows = np.sort(rng.choice(n, keep, replace=False)) if n > keep else np.arange(n)
    pts = io.read_rows(points_path, rows, ["x", "y"]).to_numpy()
    try:
        queries = anchored_workload(pts, load_grid(grid_path).domain.as_list(), int(utility_cfg["range_queries"]), rng)
    except ValueError as exc:
        raise InputError(
            points_path,
            "utility.range_queries",
            str(exc),
            "lower utility.range_queries, or use a dataset with more points spread over its box "
            "(a query must hold 20 to 5 % of them: 400 points at the very least)",
        ) from exc
    io.write_parquet(
        pd.DataFrame(queries, columns=COLUMNS),
        out_parquet,
        metadata={
            "workload_sha256": workload_hash(queries),
            "points_used": len(pts),
            "generator": "anchored (Kroshnin & Suvorikova 2025, App. A.2)",
        },
    )


def read_workload(path: str) -> tuple[np.ndarray, str]:
    """The queries (n, 4) and their SHA-256, recomputed from the values (not trusted from metadata)."""
    queries = pd.read_parquet(path, columns=COLUMNS).to_numpy()
    return queries, workload_hash(queries)
