"""The heatmaps study's multi-location stage ([DDP-Heatmaps] §5.7): Geolife users as weighted multisets.

Kept apart from ``study`` so that changing it does not re-run the single-location runs.  The study's
``aggregation`` switch applies here too (``multi_location.modular_sums``): ``population`` draws each
shard's summed noise at once, ``per_client`` and ``secure`` let every user build, noise and reduce its
own vector and sum the shards ideally or through ``locpriv.secagg``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import io
from ..datasets.points import load_points, projected_box
from ..dp.record import ADD_REMOVE, REPLACE_ONE, Guarantee
from ..seeding import rng as make_rng
from . import metrics, multi_location
from .study import make_secagg


def multi_guarantee(epsilon: float, sensitivities: dict) -> dict:
    """The guarantee of each scale's release, the same in every aggregation mode.

    Proof sketch: a user's vector is its weights normalised to L1 = 1, times s, stochastically
    rounded, so it has L1 <= ceil(s) + d over its d <= max_points non-zero entries (rounding adds < 1
    per entry); adding or removing the user moves a shard's sum by at most that Δ.  Every shard sum
    carries discrete-Laplace noise P(z) ∝ exp(−ε |z| / Δ) per entry (the clients' Pólya shares add up to
    it, [DDP-Heatmaps] Thm 4.2; no dropout here), hence ε-DP; replacing a user is 2ε.  The reduction mod
    2^bits, the masking and every clip width read from one release are post-processing.  Each scale is
    a fresh release: publishing the rows of k scales costs k ε by basic composition.
    """
    return Guarantee(
        model="epsilon-DP per user, distributed discrete Laplace ([DDP-Heatmaps] Thm 4.2, §5.7 weighted "
        "multisets); the server sees only each shard's sum mod 2^bits (ideal secure aggregation in the "
        "population and per_client modes, pairwise masking against an honest-but-curious server in "
        "secure mode)",
        epsilon=float(epsilon),
        delta=0.0,
        relation=ADD_REMOVE,
        covers="one user's whole weighted multiset (its top max_points pixels) in one scale's release; all "
        "clip widths of that release are post-processing; k scales released cost k epsilon",
        discretisation="integer vectors (stochastic rounding at scale s) and integer Polya noise: exact",
        note="L1 sensitivity ceil(s) + max_points per scale: "
        + ", ".join(f"s = {s:g}: {d}" for s, d in sensitivities.items()),
        other_relations={REPLACE_ONE: 2 * float(epsilon)},
    ).as_dict()


def multi_stage(*, cfg: dict, seed: int, out: str) -> None:
    """§5.7 on Geolife: each real user's points (weight = points in a pixel), top max_points pixels kept.

    ``cfg``: ``multi_location``, and the study's ``aggregation`` and ``secagg`` (defaults: population)."""
    multi, aggregation = cfg["multi_location"], cfg.get("aggregation", "population")
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
    config = {"shard_size": multi["shard_size"], "dropout": 0.0}
    rows, sensitivities = [], {}

    def mse_of(wrapped, scale):
        return metrics.mse((wrapped / scale).reshape(side, side), truth.reshape(side, side))

    for scale in multi["scale"]:
        rng = make_rng(seed, "heatmaps-multi", scale)
        contribution = multi_location.encode_users(u, w, scale, rng)
        sens = sensitivities[scale] = multi_location.sensitivity(scale, multi["max_points"])
        # secrets from the OS, the public layout from its own stream: secure and per_client share every DP draw
        secagg = make_secagg(
            config, aggregation, cfg.get("secagg"), layout=make_rng(seed, "heatmaps-multi-secagg-layout", scale)
        )
        sums = multi_location.modular_sums(
            u, idx, contribution, side * side, multi["epsilon"], sens, multi["bits"], secagg, rng
        )
        for bits in multi["bits"]:
            overflow = multi_location.overflow_count(sums.noisy, bits)
            # without DP noise the error is rounding + wrap-around alone: Table 2's effect of s and bits
            rows.append(
                {
                    "scale": scale,
                    "bits": bits,
                    "sensitivity": sens,
                    "overflow_entries": overflow,
                    "overflow_fraction": overflow / sums.noisy.size,
                    "mse": mse_of(sums.wrapped[bits], scale),
                    "mse_without_noise": mse_of(multi_location.wrapped_sum(sums.exact, bits), scale),
                    "overflow_entries_without_noise": multi_location.overflow_count(sums.exact, bits),
                    "secagg_bytes_per_client": sums.client_bytes[bits] or np.nan,
                }
            )
    meta = {
        "users": int(u.max()) + 1,
        "points_read": report.rows_read,
        "points_dropped": report.dropped,
        "points_kept": int(w.sum()),
        "mass_dropped_by_max_points": dropped_mass,
        "aggregation": aggregation,
        "guarantee": multi_guarantee(multi["epsilon"], sensitivities),
    }
    io.write_parquet(pd.DataFrame(rows), out, metadata=meta)
