"""Metrics stage (one tidy row per run and metric) and the summary gather."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import io, mechanisms, metrics
from .prepare import load_grid
from .run import resolve_params


def run_metrics(run: dict, est_path: str, truth_path: str, pooled_path: str | None, attack_path: str,
                grid_path: str, bandwidth_json: str | None, out_metrics: str) -> None:
    mech = mechanisms.get(run["mechanism"])
    params = resolve_params(run["params"], bandwidth_json)
    grid = load_grid(grid_path)
    est = io.read_netcdf(est_path)
    dens = est["density"].values
    truth_d = io.read_netcdf(truth_path)["density"].values
    att = pd.read_parquet(attack_path)
    g = mech.guarantee(params)
    answered = bool(np.isfinite(dens).all())
    # the pooled reference is the same users' exact KDE (seed 000's score); a mechanism
    # without a bandwidth answers a constant, whose rank correlation with anything is 0
    pooled_d = io.read_netcdf(pooled_path)["density"].values if pooled_path else truth_d
    nan = float("nan")
    values = {
        "answered": float(answered),
        "spearman": metrics.spearman(dens, truth_d) if answered else nan,
        "spearman_pooled": metrics.spearman(dens, pooled_d) if answered else nan,
        "ise": metrics.ise(dens, truth_d, grid.cell_area) if answered else nan,
        "privacy_Z": float(att["Z"].mean()),
        "argmax_error": float(att["argmax_error"].mean()),
        "comm_per_user": mech.communication(params, grid),
        "n_users": float(est["density"].attrs["n_users"]),
        "guarantee_epsilon": float("nan") if g["epsilon"] is None else float(g["epsilon"]),
    }
    if "h" in params:
        values["bandwidth"] = float(params["h"])
    rows = pd.DataFrame({"metric": list(values), "value": list(values.values())})
    rows.insert(0, "rep", run["rep"])
    rows.insert(0, "mechanism", run["mechanism"])
    rows.insert(0, "dataset", run["dataset"])
    for k, v in run["params"].items():
        rows[k] = str(v)
    io.write_parquet(rows, out_metrics)


def summary(metric_paths: list[str], out_parquet: str, out_csv: str) -> None:
    """Gather every run's tidy metrics; parameter columns a run lacks are empty."""
    frames = [pd.read_parquet(p) for p in sorted(metric_paths)]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["dataset", "mechanism", "rep", "metric", "value"])
    fixed = ["dataset", "mechanism", "rep", "metric", "value"]
    params = sorted(c for c in table.columns if c not in fixed)
    table = table[fixed[:3] + params + fixed[3:]]
    table[params] = table[params].fillna("")
    table = table.sort_values(fixed[:3] + params + ["metric"], kind="stable", ignore_index=True)
    io.write_parquet(table, out_parquet)
    with io.atomic_path(out_csv) as tmp:
        table.to_csv(tmp, index=False, float_format="%.10g")
