"""Continual (binary-tree) against window-by-window heatmaps at equal person-level epsilon, measured.

``python -m locpriv.heatmaps.continual_compare --out docs/results/continual_heatmaps.csv`` generates
synthetic trajectories (``datasets.synthetic.trajectories``, gauss9 on [-3, 3]^2, one window a day),
releases the T daily flat heatmaps both ways (``heatmaps.continual.release``) ``reps`` times with
independent noise, and reports the root-mean-square error per pixel (counts) of every window's map and of
every running total (mean over windows t = 1 .. T), with a 95 % t-interval over the replications, and the
analytic prediction of ``dp.continual.variance`` (central).  Both modes get the same person-level
epsilon: a person has ``per_day`` rows in each of the T windows, and the per-row epsilon is
epsilon_person / (per_day T) in both (the ledger's charge is equal, ``heatmaps.continual``).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd
from scipy import stats

from ..datasets.ingest import domain_of, real_points
from ..datasets.persons import cap_rows
from ..datasets.synthetic import trajectories
from ..datasets.windows import length
from ..domain import Domain, Grid
from ..dp import continual as tree
from ..mechanisms.heatmap import pixels
from ..seeding import rng as make_rng
from . import continual
from .aggregation import SecAgg

BOX = [-3.0, 3.0, -3.0, 3.0]
GEOLIFE_BOX = [116.15, 116.60, 39.75, 40.10]  # registry's Beijing box, as workflow/configs/geolife.yaml
CENTRAL = 2**62  # one shard whatever the users: the curator's discrete-Laplace histogram


def daily_pixels(persons: int, days: int, per_day: int, depth: int, seed: int) -> list[np.ndarray]:
    """Each day's rows as flat pixels (x 2^depth + y) of the domain's quadtree."""
    rows = trajectories(
        "gauss9", persons, days=days, per_day=per_day, stay=0.8, start="2026-01-05", rng=make_rng(seed, "trajectories")
    )
    x, y, _ = pixels(rows, Grid.regular(Domain.from_list(BOX), 2, 2), depth)
    day = ((rows["time"] - pd.Timestamp("2026-01-05", tz="UTC")) // pd.Timedelta(days=1)).to_numpy()
    flat = x * (1 << depth) + y
    return [flat[day == t] for t in range(days)]


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    mean = float(np.mean(values))
    half = stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def geolife_window_rows(path: str, *, start: str, window: str, count: int, cap: int, seed: int) -> list:
    """The T windows' rows of the Geolife file (``registry``'s Beijing box, projected as the ingest does: x, y in
    metres, ``source_user``, ``time``), each person's rows capped at ``cap`` per window (a seeded subset, as
    the ingest's per-window cap)."""
    spec = {
        "source": "points",
        "path": path,
        "lonlat_bbox": GEOLIFE_BOX,
        "user_column": "user",
        "time_column": "timestamp_utc",
    }
    rows, _ = real_points("geolife", spec, make_rng(seed, "geolife"))
    lo, step = pd.Timestamp(start, tz="UTC"), length(window, "--window")
    k = ((rows["time"] - lo) // step).to_numpy()
    out = []
    for t in range(count):
        inside = np.flatnonzero(k == t)
        keep = cap_rows(rows["source_user"].to_numpy()[inside], cap, make_rng(seed, "cap", t))
        out.append(rows.iloc[inside[keep]].reset_index(drop=True))
    return out


def geolife_domain() -> Domain:
    """The projected Beijing box of ``geolife_window_rows`` (metres)."""
    return domain_of({"source": "points", "lonlat_bbox": GEOLIFE_BOX})[0]


def geolife_windows(path: str, *, start: str, window: str, count: int, cap: int, depth: int, seed: int) -> list:
    """``geolife_window_rows`` as flat pixels (x 2^depth + y) of the box's quadtree."""
    grid = Grid.regular(geolife_domain(), 2, 2)
    out = []
    for rows in geolife_window_rows(path, start=start, window=window, count=count, cap=cap, seed=seed):
        x, y, _ = pixels(rows, grid, depth)
        out.append(x * (1 << depth) + y)
    return out


def compare(
    windows: list, *, rows: int, depth: int, epsilon_person: float, shard_size: int, reps: int, seed: int, data: str
) -> list[dict]:
    """One row per mode: the RMSE of the window maps and of the running totals over ``reps`` releases; ``rows``:
    a person's rows per window at most (the per-row epsilon is epsilon_person / (rows T) in both modes)."""
    T = len(windows)
    exact = continual.truth(windows, depth)
    totals = np.cumsum(exact, axis=0)
    epsilon = epsilon_person / (rows * T)
    predicted = tree.variance(T, epsilon_person, rows=rows)
    out = []
    for mode in continual.MODES:
        errors = []
        for rep in range(reps):
            nodes = continual.release(
                windows,
                depth,
                epsilon,
                make_rng(seed, "continual compare", data, T, mode, shard_size, rep),
                SecAgg(shard_size=shard_size),
                mode,
            )
            errors.append(
                (
                    math.sqrt(np.mean((continual.window_maps(nodes) - exact) ** 2.0)),
                    math.sqrt(np.mean((continual.running_totals(nodes) - totals) ** 2.0)),
                )
            )
        errors = np.array(errors)
        key = "tree" if mode == continual.CONTINUAL else "windowed"
        row = {
            "data": data,
            "T": T,
            "model": "central" if shard_size >= CENTRAL else f"distributed (shards of {shard_size})",
            "mode": mode,
            "rows_per_window": rows,
            "epsilon_person": epsilon_person,
            "epsilon_row": epsilon,
            "reps": reps,
            "window_count_rms": math.sqrt(np.mean(exact**2.0)),  # the signal's scale
            "total_count_rms": math.sqrt(np.mean(totals**2.0)),
        }
        for i, what in enumerate(("window", "total")):
            mean, low, high = _interval(errors[:, i])
            row |= {f"{what}_rmse": mean, f"{what}_rmse_low": low, f"{what}_rmse_high": high}
            if shard_size >= CENTRAL:
                row[f"{what}_rmse_predicted"] = math.sqrt(predicted[f"{what}_{key}"])
        out.append(row)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV of the table")
    parser.add_argument("--windows", type=int, nargs="+", default=[7, 30, 365])
    parser.add_argument("--persons", type=int, default=300, help="synthetic: persons")
    parser.add_argument("--per-day", type=int, default=2, help="synthetic: a person's rows per day (window)")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--epsilon-person", type=float, default=1.0, help="add/remove one person, all T windows")
    parser.add_argument("--shard-size", type=int, default=100, help="the distributed model's shard size")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--geolife", help="the Geolife CSV: its windows instead of synthetic trajectories")
    parser.add_argument("--start", default="2008-10-20", help="Geolife: the first window's start (UTC)")
    parser.add_argument("--window", default="1d", help="Geolife: window length (1d, 1w)")
    parser.add_argument("--cap", type=int, default=20, help="Geolife: a person's rows per window at most")
    args = parser.parse_args(argv)
    rows = []
    for T in args.windows:
        if args.geolife:
            data = f"geolife {args.window} from {args.start}"
            windows = geolife_windows(
                args.geolife,
                start=args.start,
                window=args.window,
                count=T,
                cap=args.cap,
                depth=args.depth,
                seed=args.seed,
            )
            per_window = args.cap
        else:
            data = f"synthetic trajectories, {args.persons} persons"
            windows = daily_pixels(args.persons, T, args.per_day, args.depth, args.seed)
            per_window = args.per_day
        for shards in (CENTRAL, args.shard_size):
            rows += compare(
                windows,
                rows=per_window,
                depth=args.depth,
                epsilon_person=args.epsilon_person,
                shard_size=shards,
                reps=args.reps,
                seed=args.seed,
                data=data,
            )
    table = pd.DataFrame(rows)
    table.to_csv(args.out, index=False, float_format="%.6g")
    print(markdown(table))


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def _with_interval(row, what: str) -> str:
    return f"{_number(row[what + '_rmse'])} [{_number(row[what + '_rmse_low'])}, {_number(row[what + '_rmse_high'])}]"


def markdown(table: pd.DataFrame) -> str:
    """The table of docs/results/continual_heatmaps.md: per T and model, both modes' RMSE and their ratio."""
    lines = [
        "| T | model | signal rms: window / total | window map RMSE, windowed | tree | tree / windowed | "
        "running total RMSE, windowed | tree | tree / windowed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (T, model), group in table.groupby(["T", "model"], sort=False):
        flat, tree_row = (group[group["mode"] == mode].iloc[0] for mode in continual.MODES)
        lines.append(
            f"| {T} | {model} | {flat['window_count_rms']:.3g} / {_number(flat['total_count_rms'])} | "
            f"{_with_interval(flat, 'window')} | {_with_interval(tree_row, 'window')} | "
            f"{tree_row['window_rmse'] / flat['window_rmse']:.2f} | {_with_interval(flat, 'total')} | "
            f"{_with_interval(tree_row, 'total')} | {tree_row['total_rmse'] / flat['total_rmse']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
