"""Attack stage: localise sampled users from exactly what the server saw."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from .. import attack as attacks
from ..adversary import bayes
from .. import io, mechanisms
from ..seeding import rng as make_rng
from .prepare import POINTS_ROW_GROUP, load_grid
from .run import n_users_of, resolve_params, shard_size


def attack_sample(dataset: str, n_users: int, size: int, seed: int) -> np.ndarray:
    """The users every mechanism is attacked on: same ids for the same dataset and n."""
    size = min(size, n_users)
    return np.sort(make_rng(seed, "attack-sample", dataset, n_users).choice(n_users, size, replace=False))


def _rows_of_users(path: str, users: np.ndarray, columns: list[str]) -> pd.DataFrame:
    """The rows of a few users, one row group in memory at a time (sorted by user).

    The sample spans every row group, so a filtered read would materialise the
    whole columns first: memory would grow with the dataset, not the sample.  pre_buffer=False:
    pyarrow's pre-buffering would keep every batch read (see ``prepare.pooled_kde``).
    """
    parts = []
    for batch in pq.ParquetFile(path, pre_buffer=False).iter_batches(POINTS_ROW_GROUP, columns=columns):
        frame = batch.to_pandas()
        parts.append(frame[np.isin(frame["user"].to_numpy(), users)])
    return pd.concat(parts, ignore_index=True).sort_values("user", ignore_index=True)


def _sampled_view(run: dict, seed: int, size: int, users_per_shard: int, view_paths: list[str],
                  points_path: str, meta_json: str) -> tuple[pd.DataFrame, np.ndarray]:
    """The server's view of the attacked users and their true locations, both sorted by user."""
    n = n_users_of(run["params"], meta_json)
    users = attack_sample(run["dataset"], n, size, seed)
    shards = np.unique(users // shard_size(run["mechanism"], users_per_shard))
    view = pd.concat([pd.read_parquet(view_paths[s], filters=[("user", "in", users.tolist())])
                      for s in shards], ignore_index=True).sort_values("user", ignore_index=True)
    truth_pts = _rows_of_users(points_path, users, ["user", "x", "y"])
    return view, truth_pts[["x", "y"]].to_numpy()


def _write_refused(columns: dict, out: str, metadata: dict) -> None:
    io.write_parquet(pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()}), out,
                     metadata={**metadata, "note": "no user answered"})


def attack(run: dict, seed: int, attack_cfg: dict, users_per_shard: int, view_paths: list[str],
           points_path: str, meta_json: str, grid_path: str, bandwidth_json: str | None,
           out_attack: str) -> None:
    mech = mechanisms.get(run["mechanism"])
    params = resolve_params(run["params"], bandwidth_json)
    grid = load_grid(grid_path)
    view, true_xy = _sampled_view(run, seed, int(attack_cfg["users"]), users_per_shard, view_paths,
                                  points_path, meta_json)
    meta = {"attack": "local_maxima", "ratio": attack_cfg["ratio"]}
    if view.empty:  # the query was refused: nothing to attack
        _write_refused(attacks.RESULT_COLUMNS, out_attack, meta)
        return
    batch = int(attack_cfg.get("batch", attacks.DEFAULT_BATCH))
    result = attacks.local_maxima_attack(
        ((sl, mech.surfaces(view.iloc[sl], params, grid)) for sl in attacks.batches(len(view), batch)),
        grid, view["user"].to_numpy(), true_xy, float(attack_cfg["ratio"]))
    io.write_parquet(result, out_attack, metadata=meta)


def bayes_attack(run: dict, seed: int, adversary_cfg: dict, users_per_shard: int, view_paths: list[str],
                 points_path: str, meta_json: str, grid_path: str, truth_path: str,
                 bandwidth_json: str | None, out_attack: str) -> None:
    """Shokri et al. (2011)'s Bayes-optimal adversary on the same sampled users as the local maxima.

    ``adversary_cfg``: prior (population | uniform), users, r (radius of ``hit_r`` in grid
    cells, i.e. r times the larger cell side), batch.
    """
    mech = mechanisms.get(run["mechanism"])
    params = resolve_params(run["params"], bandwidth_json)
    grid = load_grid(grid_path)
    view, true_xy = _sampled_view(run, seed, int(adversary_cfg["users"]), users_per_shard, view_paths,
                                  points_path, meta_json)
    radius = float(adversary_cfg["r"]) * max(grid.x[1] - grid.x[0], grid.y[1] - grid.y[0])
    meta = {"attack": "bayes", "prior": adversary_cfg["prior"], "r": radius, "r_cells": adversary_cfg["r"],
            "aggregate_only": mech.aggregate_only}
    if view.empty:
        _write_refused(bayes.RESULT_COLUMNS, out_attack, meta)
        return
    prior = bayes.prior(adversary_cfg["prior"], io.read_netcdf(truth_path)["density"].values)
    batch = int(adversary_cfg.get("batch", attacks.DEFAULT_BATCH))
    result = bayes.bayes_attack(
        ((sl, mech.likelihood(view.iloc[sl], params, grid)) for sl in attacks.batches(len(view), batch)),
        prior, grid, view["user"].to_numpy(), true_xy, radius)
    io.write_parquet(result, out_attack, metadata=meta)
