"""The ``studies.heatmaps`` workflow section ([DDP-Heatmaps]): validation and file-level stages.

* ingest: the population image (pixel = users there): the NYT Manhattan crop
  (``.npy``) or a synthetic image (Gaussian hot spots on a uniform background,
  multinomial counts);
* run (method, epsilon, n, c, shard, dropout, rep): one protocol run with ideal
  aggregation — ``dp_heatmap`` (Alg. 2) or a baseline — writing the map
  (NetCDF), the per-round transcript and the per-round noisy sums (Parquet);
* metrics: §6 / App. A.1 metrics against the population and communication;
* multi (optional, ``multi_study``): Geolife users with several weighted
  locations (§5.7), modular overflow and MSE per scale and clip bits.

Runs are the base setting for every method (Table 1) plus one-at-a-time sweeps of
dp_heatmap over users per round, calibration c, shard size and dropout rate
(Fig. 7, 8); the non-private floor follows the users-per-round sweep.

``aggregation`` selects how every run sums its vectors: ``population`` (per-pixel
counts and the summed noise's exact law, for 10^6-user sweeps), ``per_client`` (one
noisy vector mod 2^bits per client, ideal modular sum) or ``secure`` (the same vectors
through the pairwise-masking protocol of ``locpriv.secagg``; its server transcript is
written per run).  ``secagg`` sets m = 2^bits and the protocol's graph, threshold (>= 0.5) and
variant (honest-but-curious or active server); ``secagg_scale`` (optional) runs one sub-query in
secure mode at population scale as shard jobs (``secagg_scale``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .. import cf, io
from ..config import StudySection
from ..errors import InputError
from ..secagg import ProtocolParams
from ..seeding import rng as make_rng
from ..study import Study
from . import baselines, metrics
from .adaptive import AdaptiveParams, render, run_adaptive
from .aggregation import SecAgg
from .guarantee import heatmap_guarantee
from .prefix_tree import PrefixTree

BASELINES = {
    "flat": baselines.flat,
    "hierarchical": baselines.hierarchical,
    "count_min": baselines.count_min,
    "adaptive_grid": baselines.adaptive_grid,
    "psd": baselines.private_spatial_decomposition,
}
METHODS = ("dp_heatmap", *BASELINES, "nonprivate")
SWEEPS = ("users_per_round", "calibration", "shard_size", "dropout")
# keys, bounds and defaults: workflow/schemas/config.source.yaml, $defs.heatmaps (docs/configuration.md)
SECTION = StudySection("heatmaps")
DEFAULTS = SECTION.defaults()
_INTEGER_SETTINGS = ("users_per_round", "shard_size")  # the other run settings are floats


def _setting(key: str, value):
    return int(value) if key in _INTEGER_SETTINGS else float(value)


def validate_config(section: dict) -> dict:
    """The section checked against its schema, defaults filled in, numbers as the runs read them."""
    cfg = SECTION.validate(section)
    if cfg["population"]["source"] == "npy" and cfg["population"]["path"] is None:
        raise SECTION.error("population.path", "missing", "the path of a 2^D x 2^D .npy image of user counts")
    cfg["base"] = {k: _setting(k, v) for k, v in cfg["base"].items()}
    cfg["sweep"] = {k: [_setting(k, v) for v in values] for k, values in cfg["sweep"].items()}
    cfg["secagg"]["threshold"] = float(cfg["secagg"]["threshold"])
    if cfg["aggregation"] == "secure":
        _check_secure_shards(cfg)
    _check_secagg_scale(cfg)
    cfg["adaptive"]["collapse_floor"] = float(cfg["adaptive"]["collapse_floor"])
    multi = cfg["multi_location"]
    if multi is not None:
        if multi["path"] is None or multi["lonlat_bbox"] is None:
            raise SECTION.error(
                "multi_location.path",
                "path and lonlat_bbox [lon0, lon1, lat0, lat1] are required",
                "a Geolife-style CSV (user, lat, lon) and its box",
            )
        multi["scale"] = [float(s) for s in multi["scale"]]
    return cfg


def _check_secure_shards(cfg: dict) -> None:
    """Secure aggregation needs t >= 2, i.e. every shard of every run at least 2 clients (one client's
    sum is its input); the threshold's lower bound 0.5 is the schema's."""
    for run in runs({**cfg, "reps": 1}):
        n, size = run["users_per_round"], run["shard_size"]
        if size < 2 or (n > size and n % size == 1) or n < 2:
            key = "sweep.shard_size" if size != cfg["base"]["shard_size"] else "base.shard_size"
            raise SECTION.error(
                key,
                f"shards of {size} with {n} users per round leave a shard of 1 client, whose "
                "'sum' is its input (secure aggregation needs t >= 2)",
                "shard_size >= 2 and users_per_round not 1 more than a multiple of it",
            )


def _check_secagg_scale(cfg: dict) -> None:
    scale, pop = cfg["secagg_scale"], cfg["population"]
    if scale is None:
        return
    if scale["users"] % scale["shard_size"] == 1:
        raise SECTION.error(
            "secagg_scale.users",
            f"{scale['users']} users in shards of {scale['shard_size']} leave a "
            "shard of 1 client (secure aggregation needs t >= 2)",
            "users not 1 more than a multiple of shard_size",
        )
    if pop["source"] == "synthetic" and scale["level"] > pop["depth"]:
        raise SECTION.error(
            "secagg_scale.level",
            f"{scale['level']} is deeper than the population's depth {pop['depth']}",
            f"an integer in [0, {pop['depth']}]",
        )
    if pop["source"] == "synthetic" and scale["users"] > pop["users"]:
        raise SECTION.error(
            "secagg_scale.users",
            f"{scale['users']} exceeds the population's {pop['users']} people",
            f"at most population.users = {pop['users']}",
        )


def runs(cfg: dict) -> list[dict]:
    base = cfg["base"]
    out = {}

    def add(method, **change):
        run = {"method": method, **base, **change}
        out[run_dir({**run, "rep": 0})] = run

    for method in cfg["methods"]:
        add(method)
    for key in SWEEPS:
        for value in cfg["sweep"][key]:
            if "dp_heatmap" in cfg["methods"]:
                add("dp_heatmap", **{key: value})
            if key == "users_per_round" and "nonprivate" in cfg["methods"]:
                add("nonprivate", **{key: value})
    return [{**run, "rep": rep} for run in out.values() for rep in range(cfg["reps"])]


def run_dir(run: dict) -> str:
    return (
        f"method~{run['method']}/epsilon~{run['epsilon']}/n~{run['users_per_round']}/c~{run['calibration']}"
        f"/shard~{run['shard_size']}/dropout~{run['dropout']}/rep~{run['rep']}"
    )


def synthetic_population(pop: dict, seed: int) -> np.ndarray:
    """Hot spots (isotropic Gaussians, widths 1-6 % of the side) holding 80 % of the people, the rest uniform."""
    rng = make_rng(seed, "heatmaps-population", pop["depth"], pop["users"], pop["hotspots"])
    side = 1 << pop["depth"]
    centres = rng.uniform(0.1, 0.9, (pop["hotspots"], 2)) * side
    widths = rng.uniform(0.01, 0.06, pop["hotspots"]) * side
    weights = rng.dirichlet(np.ones(pop["hotspots"]))
    grid = np.arange(side) + 0.5
    density = np.full((side, side), 0.2 / side**2)
    for (cx, cy), w, p in zip(centres, widths, weights, strict=True):  # a loop over a dozen hot spots, not over pixels
        blob = np.exp(-0.5 * (((grid - cx) / w)[:, None] ** 2 + ((grid - cy) / w)[None, :] ** 2))
        density += 0.8 * p * blob / blob.sum()
    return rng.multinomial(pop["users"], density.ravel() / density.sum()).reshape(side, side)


def load_population(path: str) -> np.ndarray:
    try:
        image = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(path, "array", f"cannot be read as a .npy array ({exc})", "give a NumPy .npy file") from None
    side = image.shape[0] if image.ndim == 2 else 0
    if image.ndim != 2 or image.shape[0] != image.shape[1] or side & (side - 1) or side == 0:
        raise InputError(
            path, "shape", f"{image.shape} is not a 2^D x 2^D square", "crop or pad the image to a power-of-two square"
        )
    if not np.issubdtype(image.dtype, np.number) or (image < 0).any() or not np.all(np.mod(image, 1) == 0):
        raise InputError(
            path,
            "values",
            "pixels must be non-negative whole numbers (users per pixel)",
            "round the image to user counts",
        )
    return image.astype(np.int64)


def ingest_stage(*, cfg: dict, seed: int, out: str) -> None:
    pop = cfg["population"]
    image = synthetic_population(pop, seed) if pop["source"] == "synthetic" else load_population(pop["path"])
    attrs = {
        "long_name": "users located in each pixel of the population image",
        "units": "pixel-2",
        "source": pop["source"],
        "path": pop["path"] or "",
        "users": int(image.sum()),
        "depth": int(image.shape[0]).bit_length() - 1,
    }
    io.write_netcdf(pixel_map(image, "users", attrs), out)


def pixel_map(image: np.ndarray, name: str, attrs: dict):
    """``image`` (indexed [x, y]) as the CF variable ``name`` on the pixel grid, dims (y, x): for ``io.write_netcdf``.

    Lengths are in pixels (the image's own unit), so a count or share per pixel is per pixel^2.
    """
    import xarray as xr  # here, not at the top: the heatmap mechanisms' per-run jobs import this module

    coords = {
        axis: (
            axis,
            np.arange(image.shape[0]),
            {
                "long_name": f"pixel {what} of the image ({axis}), at the pixel's centre",
                "units": "pixel",
                "axis": axis.upper(),
            },
        )
        for axis, what in (("x", "column"), ("y", "row"))
    }
    return xr.Dataset(
        {name: (("y", "x"), image.T, attrs)},
        coords=coords,
        attrs={"projection": "none: a pixel grid (the population image's)"},
    )


def read_population(path: str) -> np.ndarray:
    return io.read_netcdf(path)["users"].to_numpy()


# §4 "DP shard size": noise is provisioned for more dropouts than expected.  Survivors of a shard of S
# are Binomial(S, 1 - d), so planning for d + 4 sd of the dropped fraction leaves a shard short of its
# plan with probability ~3e-5 (ours; the paper gives no margin).  The achieved epsilon is recorded anyway.
DROPOUT_MARGIN_SD = 4.0


def planned_dropout(dropout: float, shard_size: int) -> float:
    if dropout == 0:
        return 0.0
    return min(0.99, dropout + DROPOUT_MARGIN_SD * math.sqrt(dropout * (1 - dropout) / shard_size))


def make_secagg(
    run: dict,
    aggregation: str = "population",
    secagg: dict | None = None,
    entropy: np.random.Generator | None = None,
    layout: np.random.Generator | None = None,
) -> SecAgg:
    """The run's shards, dropout and noise plan, and how its vectors are summed (``aggregation``);
    ``entropy`` and ``layout`` as ``SecAgg``'s (the study passes the OS and a seeded public layout)."""
    sec = {**DEFAULTS["secagg"], **(secagg or {})}
    return SecAgg(
        shard_size=run["shard_size"],
        dropout_rate=run["dropout"],
        planned_dropout=planned_dropout(run["dropout"], run["shard_size"]),
        mode=aggregation,
        protocol=ProtocolParams(
            bits=sec["bits"],
            graph=sec["graph"],
            degree=sec["degree"],
            threshold=sec["threshold"],
            variant=sec["variant"],
        ),
        entropy=entropy,
        layout=layout,
    )


RELEASE_COLUMNS = {"round": np.int64, "level": np.int64, "code": np.int64, "noisy": np.int64}
PROTOCOL_COLUMNS = {
    "round": np.int64,
    "shard": np.int64,
    "step": object,
    "sender": np.int64,
    "owner": np.int64,
    "kind": object,
    "items": np.int64,
    "bytes": np.int64,
}


def run_stage(
    *,
    run: dict,
    seed: int,
    population_path: str,
    out_map: str,
    out_transcript: str,
    out_releases: str,
    out_protocol: str,
    aggregation: str = "population",
    secagg: dict | None = None,
    adaptive: dict | None = None,
) -> None:
    image = read_population(population_path)
    rng = make_rng(seed, "heatmaps-run", run_dir(run))
    # secrets from the OS; the public graph layout from its own seeded stream (so the transcript is
    # reproducible); neither touches the DP stream, so secure and per_client runs share every DP draw
    config = make_secagg(run, aggregation, secagg, layout=make_rng(seed, "heatmaps-secagg-layout", run_dir(run)))
    n = run["users_per_round"]
    releases = pd.DataFrame({k: pd.Series(dtype=v) for k, v in RELEASE_COLUMNS.items()})
    protocol = None
    if run["method"] == "dp_heatmap":
        params = AdaptiveParams(
            epsilon=run["epsilon"], users_per_round=n, calibration=run["calibration"], secagg=config, **(adaptive or {})
        )
        result = run_adaptive(image, params, rng)
        heatmap, transcript, protocol = result.heatmap(), result.transcript, result.protocol_transcript
        releases = pd.concat(
            [
                pd.DataFrame({"round": t, "level": r.levels, "code": r.codes, "noisy": r.noisy})
                for t, r in enumerate(result.rounds)
            ],
            ignore_index=True,
        ).astype(RELEASE_COLUMNS)
        guarantee = heatmap_guarantee(
            result.epsilon_spent, result.epsilon_achieved, aggregation, variant=config.protocol.variant
        )
        communication = result.communication
    elif run["method"] == "nonprivate":
        res = baselines.sampling_floor(image, n, rng)
        heatmap, communication = res.heatmap, res.communication
        transcript = pd.DataFrame([{"round": 0, "epsilon": math.inf, "vector_length": communication, **res.detail}])
        guarantee = {"model": "none (non-private sampling floor)", "epsilon": math.inf, "achieved_epsilon": math.inf}
    else:
        res = BASELINES[run["method"]](image, n, run["epsilon"], rng, config)
        heatmap, communication, protocol = res.heatmap, res.communication, res.protocol_transcript
        transcript = pd.DataFrame(
            [
                {
                    "round": 0,
                    "epsilon": res.epsilon,
                    "achieved_epsilon": res.achieved_epsilon,
                    "vector_length": communication,
                    **{k: v for k, v in res.detail.items() if np.isscalar(v)},
                }
            ]
        )
        leak = "tree level chosen by MSE against the true population" if "best_level" in res.detail else ""
        guarantee = heatmap_guarantee(res.epsilon, res.achieved_epsilon, aggregation, leak, config.protocol.variant)
    meta = {"run": run, "guarantee": guarantee, "communication": int(communication), "aggregation": aggregation}
    if protocol is None:
        protocol = pd.DataFrame({k: pd.Series(dtype=v) for k, v in PROTOCOL_COLUMNS.items()})
    io.write_parquet(protocol[list(PROTOCOL_COLUMNS)].astype(PROTOCOL_COLUMNS), out_protocol, metadata=meta)
    attrs = {
        "long_name": f"share of the users located in each pixel, released by {run['method']}",
        "units": "pixel-2",
        "method": run["method"],
        "communication": int(communication),
        "epsilon": float(guarantee["epsilon"]),
        **cf.flat("guarantee", guarantee),
    }
    io.write_netcdf(pixel_map(heatmap, "heatmap", attrs), out_map)
    io.write_parquet(transcript, out_transcript, metadata=meta)
    io.write_parquet(releases, out_releases, metadata=meta)


def metrics_stage(*, run: dict, population_path: str, map_path: str, transcript_path: str, out: str) -> None:
    """The run's tidy summary rows: §6 / App. A.1 metrics, communication and epsilon spent / achieved.

    ``epsilon`` is the run's configured epsilon (NaN for the non-private floor), ``n`` its users per round.
    """
    truth = read_population(population_path)
    heatmap = io.read_netcdf(map_path)["heatmap"].to_numpy()
    meta = io.read_parquet_metadata(transcript_path)
    values = {
        **metrics.all_metrics(heatmap, truth),
        "communication": float(meta["communication"]),
        "epsilon_spent": float(meta["guarantee"]["epsilon"]),
        "epsilon_achieved": float(meta["guarantee"]["achieved_epsilon"]),
        # empty where the method read the true population (no formal guarantee holds)
        "guarantee_epsilon": float(meta["guarantee"].get("guaranteed_epsilon") or math.nan),
    }
    rows = [{"method": run["method"], "metric": k, "value": v} for k, v in values.items()]
    table = STUDY.run_table(
        rows,
        epsilon=math.nan if run["method"] == "nonprivate" else float(run["epsilon"]),
        n=run["users_per_round"],
        rep=run["rep"],
        calibration=run["calibration"],
        shard_size=run["shard_size"],
        dropout=run["dropout"],
    )
    io.write_parquet(table, out, metadata={"run": run})


def check_data_paths(cfg: dict) -> None:
    """The real-data files the section names exist (checked before any job)."""
    for key, path in (
        ("population.path", cfg["population"]["path"]),
        ("multi_location.path", (cfg["multi_location"] or {}).get("path")),
    ):
        if path and not Path(path).exists():
            raise SECTION.error(
                key, f"file {path!r} does not exist", "a path (absolute or relative to the working directory)"
            )


def setting_of(wildcards) -> dict:
    """A run's setting (every key of :func:`run_dir` but the rep) from its path's wildcards."""
    return {
        "method": wildcards.method,
        "epsilon": float(wildcards.epsilon),
        "users_per_round": int(wildcards.n),
        "calibration": float(wildcards.c),
        "shard_size": int(wildcards.shard),
        "dropout": float(wildcards.dropout),
    }


def setting_stage(
    *,
    setting: dict,
    reps: int,
    seed: int,
    population_path: str,
    out: dict,
    aggregation: str = "population",
    secagg: dict | None = None,
    adaptive: dict | None = None,
) -> None:
    """Every rep of one setting: the run, then its metrics (one job: each takes well under a second).

    ``out`` maps heatmap, transcript, releases, protocol and metrics to one path per rep; each file
    is the one :func:`run_stage` and :func:`metrics_stage` write for that rep alone.
    """
    for rep in range(reps):
        run = {**setting, "rep": rep}
        run_stage(
            run=run,
            seed=seed,
            population_path=population_path,
            out_map=out["heatmap"][rep],
            out_transcript=out["transcript"][rep],
            out_releases=out["releases"][rep],
            out_protocol=out["protocol"][rep],
            aggregation=aggregation,
            secagg=secagg,
            adaptive=adaptive,
        )
        metrics_stage(
            run=run,
            population_path=population_path,
            map_path=out["heatmap"][rep],
            transcript_path=out["transcript"][rep],
            out=out["metrics"][rep],
        )


def tree_from_reporting(depth: int, levels: np.ndarray, codes: np.ndarray) -> PrefixTree:
    """The tree a round's reporting nodes come from: their closure under parents.

    Exact: every leaf reports, and every internal node is an ancestor of a leaf.
    """
    lv, cd = [np.asarray(levels, np.int64)], [np.asarray(codes, np.int64)]
    while lv[-1].size and lv[-1].max() > 0:
        up = lv[-1] > 0
        lv.append(lv[-1][up] - 1)
        cd.append(cd[-1][up] >> 2)
    nodes = np.unique(np.stack([np.concatenate(lv), np.concatenate(cd)], axis=1), axis=0)
    return PrefixTree.from_nodes(depth, nodes[:, 0], nodes[:, 1])


def round_maps(releases_path: str, depth: int) -> list[np.ndarray]:
    """Each round's normalised map, as the server could draw it after that round."""
    releases = pd.read_parquet(releases_path)
    out = []
    for _, grp in releases.groupby("round", sort=True):
        levels, codes = grp["level"].to_numpy(), grp["code"].to_numpy()
        tree = tree_from_reporting(depth, levels, codes)
        # put the released sums in the tree's reporting order, matching (level, code) keys
        r_levels, r_codes = tree.reporting_nodes()
        released = np.lexsort((codes, levels))
        counts = np.empty(len(grp))
        counts[np.lexsort((r_codes, r_levels))] = grp["noisy"].to_numpy()[released]
        out.append(render(tree, counts))
    return out


def summary_stage(*, paths: list[str], out_parquet: str, out_csv: str) -> None:
    STUDY.collect(paths, out_parquet=out_parquet, out_csv=out_csv)


STUDY = Study(
    name="heatmaps",
    validate=validate_config,
    runs=runs,
    run_dir=run_dir,
    identity={"calibration": "float64", "shard_size": "int64", "dropout": "float64"},
)
