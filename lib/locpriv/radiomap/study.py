"""File-level stages of the radiomap study ([GeoDP-Radio]); the rule scripts call these.

ingest (city, users, stations, link geometry, measurements) → run per (scheme, mu, rho): federated
training, then the WCL attack on its transcript → summary: one tidy table (:data:`STUDY`) and Fig. 5's
gradient maps → plots (:mod:`.plots`, a plot rule, from those two files only).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import xarray as xr

from .. import cf, io
from ..errors import InputError
from ..seeding import rng as make_rng
from ..study import Study
from . import scenario
from .config import run_dir, run_list, validate_config
from .geo import GeoSettings
from .geometry import Links
from .noise import guarantee
from .tables import LABEL, attack_frame, history_frame, model_frame, rmse_table, transcript_frame, uploads_from_frame
from .training import Settings, train


def ingest(cfg: dict, rng, out: dict) -> None:
    env = scenario.make_environment(cfg, rng)
    grid = scenario.grid_of(cfg)
    c = (np.arange(grid.n) + 0.5) * grid.cell
    io.write_parquet(env["buildings"], out["buildings"], metadata={"n": len(env["buildings"])})
    # cells are row-major (m = iy * n + ix): the heights reshape to (y, x)
    heights = {"long_name": "true building height over each cell (0: open ground)", "units": "m"}
    io.write_netcdf(
        xr.Dataset(
            {"h_true": (("y", "x"), env["heights"].reshape(grid.n, grid.n), heights)},
            coords=cf.coordinates(c, c, "m", projected=False),
            attrs={"cell": grid.cell, "projection": cf.NO_PROJECTION},
        ),
        out["heights"],
    )
    io.write_parquet(env["users"], out["users"])
    io.write_parquet(env["stations"], out["stations"])
    io.write_parquet(env["measurements"], out["pairs"])
    io.write_parquet(
        env["eval_points"], out["eval_points"], metadata={"indoor_points_dropped": env["n_eval_indoor_dropped"]}
    )


def _read(path, columns):
    frame = pd.read_parquet(path)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing field(s) {missing}; re-run the radiomap ingest rule to regenerate it")
    return frame


def load_env(cfg: dict, paths) -> dict:
    heights = io.read_netcdf(paths["heights"])["h_true"].transpose("y", "x").to_numpy().ravel()  # m = iy * n + ix
    return {
        "heights": heights,
        "users": _read(paths["users"], ["x", "y"]),
        "stations": _read(paths["stations"], ["x", "y", "z"]),
        "measurements": _read(paths["pairs"], ["user", "station"]),
        "eval_points": _read(paths["eval_points"], ["x", "y"]),
    }


def _write_links(links: Links, entries_path, dist_path) -> None:
    io.write_parquet(
        links.to_frame(), entries_path, metadata={"n_links": links.matrix.shape[0], "M": links.matrix.shape[1]}
    )
    io.write_parquet(pd.DataFrame({"log10_distance": links.log10_distance}), dist_path)


def read_links(entries_path, dist_path, M: int) -> Links:
    entries = _read(entries_path, ["link", "cell", "z"])
    dist = _read(dist_path, ["log10_distance"])["log10_distance"].to_numpy()
    return Links.from_frame(entries, dist, M)


def geometry(cfg: dict, paths, out: dict) -> None:
    meas, ev = scenario.link_geometry(cfg, load_env(cfg, paths))
    _write_links(meas, out["links"], out["link_distance"])
    _write_links(ev, out["eval_links"], out["eval_distance"])


def measure(cfg: dict, paths, rng, out: dict) -> None:
    env = load_env(cfg, paths)
    M = scenario.grid_of(cfg).M
    links = read_links(paths["links"], paths["link_distance"], M)
    y, los = scenario.measure(cfg, links, env["heights"], rng)
    frame = env["measurements"].assign(y=y, los=los)
    io.write_parquet(frame, out["measurements"], metadata={"los_fraction": float(np.mean(los))})


def load_problem(cfg: dict, paths):
    env = load_env(cfg, paths)
    M = scenario.grid_of(cfg).M
    links = read_links(paths["links"], paths["link_distance"], M)
    ev = read_links(paths["eval_links"], paths["eval_distance"], M)
    y = _read(paths["measurements"], ["y"])["y"].to_numpy()
    return scenario.problem(cfg, env, links, ev, y)


def settings(cfg: dict, run: dict) -> Settings:
    tr, mo = cfg["training"], cfg["model"]
    return Settings(
        epochs=tr["epochs"],
        eta_h=tr["eta_h"],
        eta_theta=tr["eta_theta"],
        clip=tr["clip"],
        psi_scale=mo["psi_scale"],
        h_init=mo["h_init"],
        theta_init=tuple(mo["theta_init"]),
        scheme=run["scheme"],
        mu=run["mu"],
        rho=run["rho"],
        geo=GeoSettings(**cfg["geo"]),
        theta=tr["theta"],
        calibration=tr["calibration"],
    )


def train_run(cfg: dict, run: dict, paths, rng, out: dict) -> None:
    pb = load_problem(cfg, paths)
    hist = train(pb, settings(cfg, run), rng, keep_epochs=cfg["attack"]["epochs"])
    M = pb.centres.shape[0]
    tr = cfg["training"]
    g = guarantee(run["scheme"], run["mu"], M, cfg["delta"], tr["epochs"], tr["theta"], tr["calibration"])
    meta = {"run": run, "guarantee": g}
    io.write_parquet(transcript_frame(hist.uploads), out["transcript"], metadata=meta)
    io.write_parquet(model_frame(hist.heights), out["model"], metadata=meta)
    io.write_parquet(history_frame(hist), out["history"], metadata=meta)


def attack(cfg: dict, paths, transcript_path, out_path) -> None:
    users = load_env(cfg, paths)["users"][["x", "y"]].to_numpy()
    grid = scenario.grid_of(cfg)
    frame = _read(transcript_path, ["epoch", "user", "cell", "gradient"])
    epochs, uploads = uploads_from_frame(frame, len(users), grid.M)
    io.write_parquet(
        attack_frame(epochs, uploads, grid.centres(), users, cfg["attack"]["nu"]),
        out_path,
        metadata=io.read_parquet_metadata(transcript_path),
    )


def setup_stage(*, cfg: dict, seed: int, out: dict) -> None:
    """ingest, geometry and measure in one job (each takes well under a second at the default size).

    ``out`` names every file of the three stages; each is the file the stage writes alone.
    """
    ingest(cfg, make_rng(seed, "radiomap", "environment"), out)
    geometry(cfg, out, out)
    measure(cfg, out, make_rng(seed, "radiomap", "measurements"), out)


def run_stage(*, cfg: dict, run: dict, seed: int, paths: dict, out: dict) -> None:
    """One (scheme, mu, rho) run: federated training (transcript, model, history), then the WCL attack."""
    train_run(cfg, run, paths, make_rng(seed, "radiomap", "train", run), out)
    attack(cfg, paths, out["transcript"], out["attack"])


# the summary's metrics: the WCL attack's per (epoch, nu), training's per epoch (nu "")
ATTACK_METRICS = {"rmse_m": "wcl_rmse_m", "n_users": "wcl_users", "n_no_estimate": "wcl_no_estimate"}
HISTORY_METRICS = ("mae_db", "loss", "clipped_fraction")


def _long(wide: pd.DataFrame, metrics: dict) -> list[dict]:
    """Rows (epoch, nu, metric, value) of a per-epoch table whose columns ``metrics`` renames."""
    wide = wide.assign(nu=wide.get("nu", "")).rename(columns=metrics)
    long = wide.melt(id_vars=["epoch", "nu"], value_vars=list(metrics.values()), var_name="metric")
    return long.astype({"epoch": "int64", "value": "float64"}).to_dict("records")


def run_rows(run: dict, guarantee: dict, attack: pd.DataFrame, history: pd.DataFrame, n_users: int) -> pd.DataFrame:
    """One run's tidy summary rows: method is the scheme, epsilon and delta its guarantee's (NaN: none)."""
    rows = _long(rmse_table(attack), ATTACK_METRICS) + _long(history, {m: m for m in HISTORY_METRICS})
    none = lambda v: math.nan if v is None else float(v)  # noqa: E731
    return STUDY.run_table(
        [{"method": run["scheme"], **row} for row in rows],
        epsilon=none(guarantee["epsilon"]),
        n=n_users,
        rep=0,
        mu=float(run["mu"]),
        rho=float(run["rho"]),
        delta=none(guarantee["delta"]),
    )


def summarise(*, cfg: dict, runs: list[dict], attack_paths, history_paths, transcripts, out: dict) -> None:
    """The tidy summary (``out`` parquet, csv; each run's full guarantee in its metadata) and Fig. 5's maps."""
    parts, guarantees = [], {}
    for run, a_path, h_path in zip(runs, attack_paths, history_paths, strict=True):
        g = io.read_parquet_metadata(h_path)["guarantee"]
        guarantees[run_dir(run)] = g
        parts.append(run_rows(run, g, pd.read_parquet(a_path), pd.read_parquet(h_path), cfg["n_users"]))
    STUDY.write_summary(
        pd.concat(parts, ignore_index=True),
        out_parquet=out["parquet"],
        out_csv=out["csv"],
        metadata={"guarantees": guarantees},
    )
    maps, titles = gradient_maps(cfg, runs, transcripts)
    io.write_parquet(
        maps,
        out["gradient_maps"],
        metadata={
            "titles": titles,
            "epoch": min(cfg["attack"]["epochs"]),
            "user": cfg["plots"]["example_user"],
            "n": scenario.grid_of(cfg).n,
        },
    )


def gradient_maps(cfg: dict, runs: list[dict], transcripts) -> tuple[pd.DataFrame, list[str]]:
    """Fig. 5's data: the example user's upload at the first kept epoch, one panel per noisy run.

    FedAvg is left out (no noise to show) and geo runs only at their smallest rho.  Rows are the
    non-zero cells of each panel (``panel`` indexes the returned titles).
    """
    first = min(cfg["attack"]["epochs"])
    user = cfg["plots"]["example_user"]
    geo_rho = min((r["rho"] for r in runs if r["scheme"] == "radio_geo"), default=None)
    parts, titles = [], []
    for run, path in zip(runs, transcripts, strict=True):
        if run["scheme"] == "radio_fedavg" or (run["scheme"] == "radio_geo" and run["rho"] != geo_rho):
            continue
        frame = pd.read_parquet(path, filters=[("epoch", "==", first), ("user", "==", user)])
        parts.append(
            pd.DataFrame(
                {
                    "panel": np.full(len(frame), len(titles), np.int32),
                    "cell": frame["cell"].to_numpy(np.int32),
                    "gradient": frame["gradient"].to_numpy(float),
                }
            )
        )
        titles.append(f"{LABEL[run['scheme']]} mu={run['mu']:g}")
    empty = pd.DataFrame({"panel": np.zeros(0, np.int32), "cell": np.zeros(0, np.int32), "gradient": np.zeros(0)})
    return (pd.concat(parts, ignore_index=True) if parts else empty), titles


# radiomap has no repetitions (rep 0); nu is "" on the training rows, which have no attack
STUDY = Study(
    name="radiomap",
    validate=validate_config,
    runs=run_list,
    run_dir=run_dir,
    identity={"mu": "float64", "rho": "float64", "delta": "float64", "epoch": "int64", "nu": "str"},
)
