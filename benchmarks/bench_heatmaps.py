"""Location heatmaps under distributed DP ([DDP-Heatmaps] Table 1 setting): adaptive vs baselines.

NYT Manhattan population image (1024 x 1024, pixel = users there), ε = 1 per
user, 10^6 users per sub-query, SecAgg shards of 10 000, ideal aggregation.
Prints MSE, elementwise L1 and communication (integers per user summed over
sub-queries) for the adaptive algorithm, every baseline and the non-private
sampling floor (mean over repetitions); then the adaptive MSE with 20 % dropout
and noise over-provisioned for it (20 % + 4 binomial sd) relative to no dropout; then
the wall time of one adaptive run with 10^6 users and the functions dominating it.

Run:  python benchmarks/bench_heatmaps.py [--quick] [--data PATH]
"""

from __future__ import annotations

import argparse
import math
import cProfile
import pstats
import time
from pathlib import Path

import numpy as np

from locpriv.heatmaps import baselines, metrics
from locpriv.heatmaps.adaptive import AdaptiveParams, run_adaptive
from locpriv.heatmaps.aggregation import SecAgg
from locpriv.heatmaps.study import planned_dropout
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
    print(f"  per-round achieved epsilon / planned: max {np.nanmax(achieved / np.concatenate([r.transcript['epsilon'].to_numpy() for r in runs])):.4f}"
          f" ({int(np.isnan(achieved).sum())} of {len(achieved)} rounds too costly to evaluate: per-round epsilon < ~1e-3)")


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition instead of three")
    parser.add_argument("--data", default=DEFAULT_DATA, help="population .npy (relative to the project root)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    path = Path(args.data) if Path(args.data).is_absolute() else ROOT / args.data
    image = np.load(path)
    reps = 1 if args.quick else 3
    print(f"{path.name}: {image.shape[0]}x{image.shape[1]}, {int(image.sum()):,} users; eps = {EPSILON}, "
          f"{USERS:,} users per sub-query, shard 10,000; mean of {reps} rep(s)\n")
    accuracy_table(image, reps, args.seed)
    dropout_ratio(image, reps, args.seed)
    timing(image, args.seed)


if __name__ == "__main__":
    main()
