"""The heatmaps study's multi-location stage ([DDP-Heatmaps] §5.7): Geolife users as weighted multisets.

Kept apart from ``study`` so that changing it does not re-run the single-location runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import io
from ..datasets.points import load_points, projected_box
from ..seeding import rng as make_rng
from . import metrics, multi_location, polya


def multi_stage(cfg: dict, seed: int, out: str) -> None:
    """§5.7 on Geolife: each real user's points (weight = points in a pixel), top max_points pixels kept."""
    multi = cfg["multi_location"]
    pts, report, _ = load_points(multi["path"], lonlat_bbox=multi["lonlat_bbox"])
    box, _ = projected_box(multi["lonlat_bbox"])
    side = 1 << multi["depth"]
    px = np.clip(((pts["x"] - box[0]) / (box[1] - box[0]) * side).astype(np.int64), 0, side - 1)
    py = np.clip(((pts["y"] - box[2]) / (box[3] - box[2]) * side).astype(np.int64), 0, side - 1)
    user = pd.factorize(pts["source_user"])[0]
    cells = pd.DataFrame({"user": user, "cell": px.to_numpy() * side + py.to_numpy()}).value_counts().reset_index()
    cells = cells.sort_values(["user", "count", "cell"], ascending=[True, False, True])
    keep = cells.groupby("user").cumcount() < multi["max_points"]
    dropped_mass = float(cells.loc[~keep, "count"].sum() / cells["count"].sum())
    cells = cells[keep]
    u, idx, w = cells["user"].to_numpy(), cells["cell"].to_numpy(), cells["count"].to_numpy(float)
    truth = np.bincount(idx, weights=multi_location.normalise_weights(u, w), minlength=side * side)
    rows = []
    for scale in multi["scale"]:
        rng = make_rng(seed, "heatmaps-multi", scale)
        contribution = multi_location.encode_users(u, w, scale, rng)
        sens = multi_location.sensitivity(scale, multi["max_points"])
        exact, members = multi_location.shard_sums(u, idx, contribution, side * side, multi["shard_size"], rng)
        sums = exact + polya.aggregate_noise(members, exact.shape, multi["epsilon"], sens, members, rng)
        for bits in multi["bits"]:
            def mse_of(shard_sums):
                estimate = multi_location.modular_estimate(shard_sums, bits, scale)
                return metrics.mse(estimate.reshape(side, side), truth.reshape(side, side))
            overflow = multi_location.overflow_count(sums, bits)
            # without DP noise the error is rounding + wrap-around alone: Table 2's effect of s and bits
            rows.append({"scale": scale, "bits": bits, "sensitivity": sens, "overflow_entries": overflow,
                         "overflow_fraction": overflow / sums.size, "mse": mse_of(sums),
                         "mse_without_noise": mse_of(exact),
                         "overflow_entries_without_noise": multi_location.overflow_count(exact, bits)})
    meta = {"users": int(u.max()) + 1, "points_read": report.rows_read, "points_dropped": report.dropped,
            "points_kept": int(w.sum()), "mass_dropped_by_max_points": dropped_mass,
            "guarantee": {"model": "epsilon-DP per user, sensitivity ceil(s) + max_points ([DDP-Heatmaps] §5.7)",
                          "epsilon": multi["epsilon"]}}
    io.write_parquet(pd.DataFrame(rows), out, metadata=meta)
