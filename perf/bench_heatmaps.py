"""Location heatmaps under distributed DP ([DDP-Heatmaps] Table 1 setting): adaptive vs baselines.

NYT Manhattan population image (1024 x 1024, pixel = users there), ε = 1 per
user, 10^6 users per sub-query, SecAgg shards of 10 000, ideal aggregation.
Prints MSE, elementwise L1 and communication (integers per user summed over
sub-queries) for the adaptive algorithm, every baseline and the non-private
sampling floor (mean over repetitions); then the adaptive MSE with 20 % dropout
and noise over-provisioned for it (20 % + 4 binomial sd) relative to no dropout; then
the wall time of one adaptive run with 10^6 users and the functions dominating it.

``--combination``: instead, dp_heatmap with the authors' options (threshold σ(ε_t),
start at the root's children, collapse floor 5; our implementation, the authors'
code is not run here), with Eq. 6 as printed from the root, and with our defaults, each with the map read from the last
sub-query, from every sub-query combined by least squares (``consistency``), and from
the combined counts rendered smoothly inside each cell (``render.smooth``; the others
spread each count uniformly over its cell), on Manhattan and on the study's synthetic
mixture (1024 x 1024, 5 x 10^7 users, 12 hot spots), at 10^5 and 10^6 users per
sub-query, ε = 1: mean MSE, L1, integers per user and seconds over the repetitions,
plus the MSE of the true counts on the same final partition, rendered both ways (no
count estimator on that partition does better with the same renderer); then the
paired comparison with the last-round map and with the authors' options (mean and
standard error over repetitions).  The per-repetition table is also written as CSV
with ``--out``; ``--summary CSV`` prints the comparison of a written table again.

Run:  python perf/bench_heatmaps.py [--quick] [--data PATH] [--combination [--reps R] [--out CSV]]
      python perf/bench_heatmaps.py --summary CSV
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import time
from pathlib import Path

import numpy as np
import pandas as pd

from locpriv.heatmaps import baselines, metrics
from locpriv.heatmaps.adaptive import AdaptiveParams, render, run_adaptive
from locpriv.heatmaps.aggregation import SecAgg
from locpriv.heatmaps.render import smooth
from locpriv.heatmaps.study import DEFAULTS, planned_dropout, synthetic_population
from locpriv.seeding import rng as make_rng

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = "../shared/data/nyt_manhattan/nyt_manhattan_crop_1024.npy"
EPSILON = 1.0
USERS = 1_000_000


def methods(secagg):
    """name -> function(image, rng) returning (heatmap, communication)."""
    def adaptive(image, rng):
        result = run_adaptive(image, AdaptiveParams(epsilon=EPSILON, users_per_round=USERS, secagg=secagg), rng)
        return result.heatmap(), result.communication

    def baseline(fn):
        return lambda image, rng: (lambda r: (r.heatmap, r.communication))(fn(image, USERS, EPSILON, rng, secagg))

    return {
        "non-private (sampling floor)": lambda image, rng: (lambda r: (r.heatmap, r.communication))(
            baselines.sampling_floor(image, USERS, rng)),
        "adaptive (ours, Alg. 2)": adaptive,
        "flat one-hot": baseline(baselines.flat),
        "hierarchical one-hot": baseline(baselines.hierarchical),
        "count-min sketch": baseline(baselines.count_min),
        "adaptive grid (Qardaji)": baseline(baselines.adaptive_grid),
        "spatial decomposition (Cormode)": baseline(baselines.private_spatial_decomposition),
    }


def accuracy_table(image, reps, seed):
    print(f"{'method':34s} {'MSE':>10s} {'L1 (elementwise)':>17s} {'comm':>9s} {'time s':>7s}")
    for name, fn in methods(SecAgg()).items():
        mse, l1, start = [], [], time.perf_counter()
        for rep in range(reps):
            heatmap, comm = fn(image, make_rng(seed, "bench_heatmaps", name, rep))
            mse.append(metrics.mse(heatmap, image))
            l1.append(metrics.l1_elementwise(heatmap, image))
        elapsed = (time.perf_counter() - start) / reps
        print(f"{name:34s} {np.mean(mse):10.3e} {np.mean(l1):17.4f} {comm:9d} {elapsed:7.2f}")


def dropout_ratio(image, reps, seed):
    def mean_mse(secagg, tag):
        params = AdaptiveParams(epsilon=EPSILON, users_per_round=USERS, secagg=secagg)
        runs = [run_adaptive(image, params, make_rng(seed, "bench_heatmaps", tag, rep)) for rep in range(reps)]
        return np.mean([metrics.mse(r.heatmap(), image) for r in runs]), runs

    base, _ = mean_mse(SecAgg(), "dropout0")
    plan = planned_dropout(0.2, 10_000)
    dropped, runs = mean_mse(SecAgg(dropout_rate=0.2, planned_dropout=plan), "dropout20")
    achieved = np.concatenate([r.transcript["achieved_epsilon"].to_numpy() for r in runs])
    print(f"\ndropout 20% with noise provisioned for {plan:.3f} (the study's 4-sd margin; n_dp = "
          f"{math.ceil(10_000 * (1 - plan))} of 10000) vs no dropout, {reps} reps:")
    print(f"  MSE {dropped:.3e} vs {base:.3e}: ratio {dropped / base:.3f}")
    planned = np.concatenate([r.transcript["epsilon"].to_numpy() for r in runs])
    print(f"  per-round achieved epsilon / planned: max {np.nanmax(achieved / planned):.4f}"
          f" ({int(np.isnan(achieved).sum())} of {len(achieved)} rounds too costly to evaluate:"
          " per-round epsilon < ~1e-3)")


def timing(image, seed):
    params = AdaptiveParams(epsilon=EPSILON, users_per_round=USERS, secagg=SecAgg())
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    result = run_adaptive(image, params, make_rng(seed, "bench_heatmaps", "timing"))
    result.heatmap()
    profile.disable()
    elapsed = time.perf_counter() - start
    print(f"\n10^6 users per sub-query, {len(result.transcript)} sub-queries + rendering: {elapsed:.2f} s "
          f"(goal < 10 s), i.e. {elapsed / len(result.transcript):.2f} s per sub-query")
    stats = pstats.Stats(profile).sort_stats("tottime")
    rows = sorted(((v[2], k) for k, v in stats.stats.items()), reverse=True)[:6]
    print("  dominated by (own time):")
    for own, (filename, line, func) in rows:
        print(f"    {own:6.2f} s  {func} ({Path(filename).name}:{line})")
    print(result.transcript[["round", "epsilon", "vector_length", "n_split", "n_collapsed", "threshold"]]
          .to_string(index=False))


# the authors' main-result options on our implementation, and our defaults
SETTINGS = {"authors' options": dict(threshold="authors", start="children", collapse_floor=5.0),
            "paper rule": dict(threshold="paper", start="root"),      # Eq. 6 as printed, root first
            "locpriv defaults": {}}
MIXTURE = {**DEFAULTS["population"], "depth": 10, "users": 50_000_000}
SMOOTH = "least_squares + smooth"


def combination_table(inputs, reps, seed):
    rows = []
    print(f"{'input':10s} {'n':>8s} {'setting':17s} {'map':14s} {'MSE':>10s} {'L1':>8s} {'comm':>7s} {'time s':>7s}")
    for label, image in inputs.items():
        side = image.shape[0]
        x, y = np.divmod(np.arange(side * side), side)
        for n in (100_000, 1_000_000):
            for setting, options in SETTINGS.items():
                params = AdaptiveParams(epsilon=EPSILON, users_per_round=n, **options)
                for rep in range(reps):
                    start = time.perf_counter()
                    result = run_adaptive(image, params, make_rng(seed, "bench_heatmaps", label, n, setting, rep))
                    maps = {"last": (render(result.tree, result.rounds[-1].noisy), time.perf_counter() - start)}
                    start = time.perf_counter()
                    counts = result.combined().on(result.tree)
                    maps["least_squares"] = (render(result.tree, counts), maps["last"][1] + time.perf_counter() - start)
                    start = time.perf_counter()
                    maps[SMOOTH] = (smooth(result.tree, counts), maps["least_squares"][1] + time.perf_counter() - start)
                    # every estimator of counts on this partition is at least this far from the truth (per renderer)
                    truth = result.tree.histogram(x, y, image.ravel())
                    maps["true counts"] = (render(result.tree, truth), 0.0)
                    maps["true counts + smooth"] = (smooth(result.tree, truth), 0.0)
                    for name, (heatmap, seconds) in maps.items():
                        rows.append(dict(input=label, users_per_round=n, setting=setting, map=name, rep=rep,
                                         mse=metrics.mse(heatmap, image), l1=metrics.l1_elementwise(heatmap, image),
                                         communication=result.communication, seconds=seconds))
                for name, grp in pd.DataFrame(rows).query("input == @label and users_per_round == @n "
                                                          "and setting == @setting").groupby("map", sort=False):
                    print(f"{label:10s} {n:8d} {setting:17s} {name:14s} {grp.mse.mean():10.3e} {grp.l1.mean():8.4f}"
                          f" {grp.communication.mean():7.0f} {grp.seconds.mean():7.2f}", flush=True)
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per input × n × setting: means, and paired MSE changes (%) against the last round and the authors' options."""
    keys = ["input", "users_per_round", "setting"]
    per_rep = table.pivot_table(index=[*keys, "rep"], columns="map", values=["mse", "l1"])
    mse = per_rep["mse"]
    authors = mse.xs("authors' options", level="setting")["last"].reindex(mse.index.droplevel("setting")).to_numpy()
    change = 100 * pd.DataFrame({
        "least squares vs last": mse["least_squares"] / mse["last"] - 1,
        "smooth vs last": mse[SMOOTH] / mse["last"] - 1,
        "smooth vs authors": mse[SMOOTH] / authors - 1,
        "true counts vs last": mse["true counts"] / mse["last"] - 1,
        "true counts + smooth vs last": mse["true counts + smooth"] / mse["last"] - 1})
    means = per_rep.groupby(level=keys, sort=False).mean()
    grouped = change.groupby(level=keys, sort=False)
    by_setting = table.groupby(keys, sort=False)
    out = pd.concat({"integers per user": by_setting.communication.mean(),
                     **{f"{metric.upper()} {name}": means[metric][m] for metric in ("mse", "l1")
                        for name, m in (("last", "last"), ("least squares", "least_squares"), ("smooth", SMOOTH))},
                     **{f"{c} (%)": grouped[c].mean() for c in change},
                     "smooth vs last ± s.e. (%)": grouped["smooth vs last"].sem(),
                     "reps smooth better": (change["smooth vs last"] < 0).groupby(level=keys, sort=False).sum(),
                     "seconds smooth": table[table["map"] == SMOOTH].groupby(keys, sort=False).seconds.mean()}, axis=1)
    return out.reindex(table.drop_duplicates(keys).set_index(keys).index)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition instead of three")
    parser.add_argument("--data", default=DEFAULT_DATA, help="population .npy (relative to the project root)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--combination", action="store_true", help="authors' options vs defaults, last vs combined")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 1 with --quick, else 3)")
    parser.add_argument("--out", default=None, help="--combination: write the per-repetition table here (CSV)")
    parser.add_argument("--summary", default=None, help="print the comparison of a --combination CSV and exit")
    args = parser.parse_args()
    if args.summary:
        print(summary(pd.read_csv(args.summary)).to_string(float_format="%.4g"))
        return
    path = Path(args.data) if Path(args.data).is_absolute() else ROOT / args.data
    image = np.load(path)
    reps = args.reps or (1 if args.quick else 3)
    if args.combination:
        inputs = {"manhattan": image.astype(np.int64), "mixture": synthetic_population(MIXTURE, args.seed)}
        print(f"eps = {EPSILON}, shard 10,000, disjoint samples per sub-query; {reps} rep(s)\n")
        table = combination_table(inputs, reps, args.seed)
        print("\n" + summary(table).to_string(float_format="%.4g"))
        if args.out:
            table.to_csv(args.out, index=False, float_format="%.6g")
        return
    print(f"{path.name}: {image.shape[0]}x{image.shape[1]}, {int(image.sum()):,} users; eps = {EPSILON}, "
          f"{USERS:,} users per sub-query, shard 10,000; mean of {reps} rep(s)\n")
    accuracy_table(image, reps, args.seed)
    dropout_ratio(image, reps, args.seed)
    timing(image, args.seed)


if __name__ == "__main__":
    main()
