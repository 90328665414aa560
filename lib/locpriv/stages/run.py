"""Client and server stages of one run: randomize, aggregate, estimate."""

from __future__ import annotations

import logging
import math
import os
import sys

import numpy as np
import pandas as pd

from .. import cf, io, mechanisms
from ..errors import InputError
from ..mechanisms.base import Mechanism
from ..seeding import rng as make_rng
from .prepare import density_units, load_grid


def resolve_params(params: dict, bandwidth_json: str | None) -> dict:
    """Mechanism params with 'knn' bandwidth replaced by the dataset's computed value."""
    out = {k: v for k, v in params.items() if k != "n"}
    if out.get("h") == "knn":
        out["h"] = float(io.read_json(bandwidth_json)["h"])
    return out


def users_asked(params: dict, available: int) -> int:
    """The run's ``n`` as a number of users (``all``: every user the dataset kept)."""
    n = params.get("n", "all")
    return available if n == "all" else int(n)


def configured(run: dict, bandwidth_json: str | None) -> Mechanism:
    """The run's one configured mechanism object (its 'knn' bandwidth resolved); every stage of the run
    calls its methods, and ``run_guarantee(run["params"])`` records what the configured values leak."""
    return mechanisms.get(run["mechanism"])(**resolve_params(run["params"], bandwidth_json))


def n_users_of(params: dict, meta_json: str) -> int:
    available = int(io.read_json(meta_json)["n_users"])
    n = users_asked(params, available)
    if n > available:
        raise InputError(
            meta_json,
            "n_users",
            f"the run asks for n={n} users but the dataset has {available}",
            "lower the experiment's 'n' for this dataset (or use n: all)",
        )
    return n


def shard_count(n_users: int, users_per_shard: int) -> int:
    return max(1, math.ceil(n_users / users_per_shard))


def shard_size(mechanism: str, users_per_shard: int) -> int:
    """Users per randomize job: the configured shard, or every user for an interactive mechanism."""
    return sys.maxsize if mechanisms.get(mechanism).interactive else users_per_shard


def _shard_users(points: io.RangeReader, shard: int, users_per_shard: int, n_users: int) -> pd.DataFrame:
    lo, hi = shard * users_per_shard, min(n_users, (shard + 1) * users_per_shard)
    return points.read(lo, hi)


def run_seed_keys(run: dict, mech: Mechanism) -> tuple:
    """What a run's client randomness is keyed by: its configured mechanism's explicit settings
    (resolved, without 'n').

    'n' is left out so the first n users answer alike whatever the run's size;
    a mechanism with persistent user state is keyed by that state only.
    """
    state = mech.state_params()
    return (run["dataset"], run["mechanism"], mech.explicit_settings() if state is None else state, run["rep"])


def shard_file(view_dir: str, shard: int) -> str:
    """The view of one shard inside its randomize job's folder."""
    return os.path.join(view_dir, f"shard~{shard}.parquet")


def shard_batches(n_shards: int, shards_per_job: int) -> list[range]:
    """Shards grouped into randomize jobs: consecutive runs of at most ``shards_per_job``."""
    return [range(lo, min(n_shards, lo + shards_per_job)) for lo in range(0, n_shards, shards_per_job)]


def check_views(paths: list[str]) -> list[str]:
    """The shard views a server-side job reads, checked to exist (a randomize folder is all or nothing)."""
    for path in paths:
        if not os.path.exists(path):
            folder = os.path.dirname(path)
            raise InputError(
                path,
                "<file>",
                "shard view missing from its randomize job's folder",
                f"delete {folder} and run the same command again",
            )
    return paths


def randomize(
    *,
    run: dict,
    seed: int,
    shards: list[int],
    users_per_shard: int,
    points_path: str,
    meta_json: str,
    grid_path: str,
    bandwidth_json: str | None,
    out_dir: str,
) -> None:
    """The client side of ``shards`` (one job may hold several): ``out_dir/shard~{k}.parquet`` each.

    Each shard's users and randomness are those of its own index, so a shard's bytes do not
    depend on how shards are grouped into jobs.  ``out_dir`` is complete or absent: the shard
    files go into a temporary sibling folder that is renamed into place at the end.
    """
    mech = configured(run, bandwidth_json)
    params = mech.explicit_settings()
    n = n_users_of(run["params"], meta_json)
    grid = load_grid(grid_path)
    size = shard_size(run["mechanism"], users_per_shard)
    points = io.RangeReader(points_path, "user")  # its footer once per job, not once per shard
    with io.atomic_dir(out_dir) as tmp:
        for shard in shards:
            pts = _shard_users(points, shard, size, n)
            rng = make_rng(seed, "randomize", *run_seed_keys(run, mech), shard)
            view = mech.randomize(pts, rng=rng, domain=grid)
            if "refusal" in view.attrs:
                logging.warning("users refused the query: %s", view.attrs["refusal"]["reason"])
            # view.attrs carries what the server learns besides the rows, e.g. a refusal
            io.write_parquet(
                view,
                shard_file(tmp, shard),
                metadata={"mechanism": mech.name, "params": params, "shard": shard, "users": len(view), **view.attrs},
            )


def aggregate(*, run: dict, view_paths: list[str], grid_path: str, bandwidth_json: str | None, out_agg: str) -> None:
    mech = configured(run, bandwidth_json)
    grid = load_grid(grid_path)
    total, n, refusals = None, 0, set()
    for path in view_paths:  # one shard in memory at a time
        view = pd.read_parquet(path)
        part = mech.partial(view, grid)
        total = part if total is None else mech.combine(total, part)
        n += len(view)
        if "refusal" in (meta := io.read_parquet_metadata(path)):
            refusals.add(meta["refusal"]["reason"])
    geometry = io.read_nc3(grid_path)
    attrs = {
        "long_name": "sum of the users' reports on the grid (the mechanism's aggregate, before normalising)",
        "units": density_units(geometry) if mech.partial_per_area else "1",
        "n_users": n,
        "mechanism": mech.name,
        **cf.flat("param", mech.explicit_settings()),
    }
    if refusals:
        attrs["refusal"] = "; ".join(sorted(refusals))
    io.write_netcdf(grid.surface(total, "sum", attrs, geometry), out_agg)


def estimate(*, run: dict, agg_path: str, grid_path: str, bandwidth_json: str | None, out_est: str) -> None:
    mech = configured(run, bandwidth_json)
    grid = load_grid(grid_path)
    agg = io.read_nc3(agg_path)
    n = int(agg["sum"].attrs["n_users"])
    refusal = agg["sum"].attrs.get("refusal")
    # users who refused the query sent nothing: there is no estimate, not a zero one
    # C order, as the API's in-memory partial has it: read back from NetCDF the array can be a transposed view,
    # and NumPy's pairwise sums differ by an ulp with the memory order (dp_heatmap's density, numpy 2.4)
    total = np.ascontiguousarray(agg["sum"].values)
    dens = np.full(grid.shape, np.nan) if n == 0 else mech.density(total, n, grid)
    geometry = io.read_nc3(grid_path)
    guarantee = mech.run_guarantee(run["params"]).as_dict()
    # the guarantee as readable attrs (guarantee_epsilon, ...) and, exactly, as the JSON record
    attrs = {
        "long_name": f"probability density of the users' locations estimated by {mech.name}",
        "units": density_units(geometry),
        "mechanism": mech.name,
        **cf.flat("param", mech.explicit_settings()),
        "n_users": n,
        **cf.flat("guarantee", guarantee),
        "guarantee": guarantee,
        **({"refusal": refusal} if refusal else {}),
    }
    io.write_netcdf(grid.surface(dens, "density", attrs, geometry), out_est)


def aggregate_estimate(
    *, run: dict, view_paths: list[str], grid_path: str, bandwidth_json: str | None, out_agg: str, out_est: str
) -> None:
    """The server side of one run in one job: aggregate, then estimate from the written aggregate.

    The estimate reads the aggregate back from its file, exactly as a separate job would.
    """
    aggregate(
        run=run, view_paths=check_views(view_paths), grid_path=grid_path, bandwidth_json=bandwidth_json, out_agg=out_agg
    )
    estimate(run=run, agg_path=out_agg, grid_path=grid_path, bandwidth_json=bandwidth_json, out_est=out_est)


def estimate_group(
    *,
    runs: list[dict],
    seed: int,
    shards: list[list[int]],
    users_per_shard: int,
    view_paths: list[list[str]],
    points_path: str,
    meta_json: str,
    grid_path: str,
    bandwidth_json: str | None,
    out_views: list[str],
    out_agg: list[str],
    out_est: list[str],
) -> None:
    """The client and server side of a group of runs (the reps of one setting) in one job.

    Per run, in order: its first randomize batch (``shards[k]`` into ``out_views[k]``), then
    aggregate and estimate from all of its shard views (``view_paths[k]``; later batches were
    written by randomize jobs).  Each run keeps its own seeds and files, so every file's bytes are
    those of one job per stage; the job only saves the start-up of the others.
    """
    for k, run in enumerate(runs):
        randomize(
            run=run,
            seed=seed,
            shards=shards[k],
            users_per_shard=users_per_shard,
            points_path=points_path,
            meta_json=meta_json,
            grid_path=grid_path,
            bandwidth_json=bandwidth_json,
            out_dir=out_views[k],
        )
        aggregate_estimate(
            run=run,
            view_paths=view_paths[k],
            grid_path=grid_path,
            bandwidth_json=bandwidth_json,
            out_agg=out_agg[k],
            out_est=out_est[k],
        )
