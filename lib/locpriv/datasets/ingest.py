"""Ingest stage: a dataset spec from the config in, points and their metadata out."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..domain import Domain, Grid
from . import points as real
from . import synthetic


def domain_of(spec: dict) -> tuple[Domain, str]:
    """The public evaluation domain and its units, from the config alone."""
    if spec["source"] == "synthetic":
        return Domain.from_list(spec["bbox"]), spec.get("units", "1")
    if "lonlat_bbox" in spec:
        box, _ = real.projected_box(spec["lonlat_bbox"])
        return Domain.from_list(box), "m"
    return Domain.from_list(spec["bbox"]), spec.get("units", "1")


def real_points(name: str, spec: dict, rng: np.random.Generator) -> tuple[pd.DataFrame, dict]:
    """Real points with user ids 0..N-1 and the metadata to record with them.

    Points are assigned virtual user ids by a seeded permutation, so the first
    n users of any run are a uniform random subsample (file order is by user
    and time and would bias a prefix).
    """
    box_key = "lonlat_bbox" if "lonlat_bbox" in spec else "bbox"
    pts, _, meta = real.load_points(spec["path"], **{box_key: spec[box_key]},
                                    user_column=spec.get("user_column", "user"))
    order = rng.permutation(len(pts))
    pts = pts.iloc[order].reset_index(drop=True)
    pts.insert(0, "user", np.arange(len(pts), dtype=np.int64))
    meta.update(source=str(spec["path"]), licence=spec.get("licence", "see the source's SOURCE.md"),
                users="each point is an independent virtual user (as seed 000 does with check-ins)",
                dataset=name, n_users=int(len(pts)))
    return pts, meta


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
        return {"source": f"synthetic:{spec['pattern']}", "units": units, "bbox": domain.as_list(),
                "projection": "none", "licence": "generated", "rows_read": n, "rows_kept": n,
                "rows_dropped": {}, "outside_domain": outside[0], "dataset": name, "n_users": n}

    return frames(), metadata


def truth_density(spec: dict, grid: Grid, points: pd.DataFrame | None, h: float | None) -> tuple[np.ndarray, str]:
    """Reference density on the grid: analytic for synthetic data, complete-data KDE for real data."""
    from .. import kde
    if spec["source"] == "synthetic":
        return synthetic.PATTERNS[spec["pattern"]]().density(grid.x, grid.y), "analytic mixture density"
    total = kde.kde_sum(points[["x", "y"]].to_numpy(), grid.x, grid.y, h)
    return total / (len(points) * kde.normaliser(h)), f"complete-data Gaussian KDE, h={h}"
