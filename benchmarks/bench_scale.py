"""Scale benchmark (issue 8): one density branch end to end at 10^6 and 10^7 users.

Runs the real workflow (snakemake, --cores 2) on gauss9 with exact federated KDE
(fedkde, h = 0.55, all users) in fixed 500,000-user shards, then reads every
job's wall time and peak RSS from its log (locpriv.smk.logged writes them) and
prints, per stage: jobs, summed wall time, largest single-job peak RSS.  The
aggregate stage is also expressed as a fraction of this machine's dense GEMM
throughput measured in the same run (exact KDE on a P x Q grid is a GEMM of
2 P Q N flops, plus the kernel factors).

Run:  python benchmarks/bench_scale.py [--sizes 1000000 10000000] [--workdir DIR] [--mechanism fedkde|rff]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import yaml

from locpriv import kde

ROOT = Path(__file__).resolve().parents[1]
SHARD = 500_000
GRID = 100
LOG_LINE = re.compile(r"job finished: wall ([\d.]+) s, peak RSS ([\d.]+) MB")


def gemm_flops_per_s(reps: int = 5) -> float:
    """Best-of-reps float64 GEMM rate in the aggregate's shapes: (P x c) @ (c x Q) per user chunk."""
    c = kde.DEFAULT_CHUNK
    rng = np.random.default_rng(0)
    a, b = rng.random((GRID, c)), rng.random((c, GRID))
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(64):
            a @ b
        best = min(best, time.perf_counter() - t)
    return 64 * 2 * GRID * GRID * c / best


def config(n: int, mechanism: str) -> dict:
    params = {"n": "all", "h": 0.55} | ({"B": 1} if mechanism == "rff" else {})
    return {"seed": 1, "users_per_shard": SHARD, "grid": {"P": GRID, "Q": GRID},
            "attack": {"users": 200, "ratio": 1.1}, "plots": {"dpi": 60},
            "datasets": {"gauss9": {"source": "synthetic", "pattern": "gauss9", "n_users": n,
                                    "bbox": [-3, 3, -3, 3], "knn_k": 200}},
            "experiments": {"scale": {"datasets": ["gauss9"], "reps": 1,
                                      "mechanisms": {mechanism: params}}}}


def stage_of(log: Path, logs: Path) -> str:
    rel = log.relative_to(logs).parts
    if rel[0] == "results":  # logs/results/runs/.../<stage>.log or <stage>-<shard>.log
        return re.sub(r"-\d+$", "", log.stem)
    return Path(rel[0]).stem


def run(n: int, workdir: Path, mechanism: str) -> tuple[float, dict]:
    wd = workdir / f"n{n}"
    shutil.rmtree(wd, ignore_errors=True)
    wd.mkdir(parents=True)
    (wd / "config.yaml").write_text(yaml.safe_dump(config(n, mechanism)))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--cores", "2",
                    "results/summary/metrics.parquet"], cwd=wd, check=True,
                   stdout=subprocess.DEVNULL, stderr=(wd / "snakemake.log").open("w"))
    total = time.perf_counter() - t
    stages = defaultdict(lambda: [0, 0.0, 0.0])
    logs = wd / "logs"
    for log in logs.rglob("*.log"):
        m = LOG_LINE.search(log.read_text())
        if m:
            s = stages[stage_of(log, logs)]
            s[0] += 1
            s[1] += float(m.group(1))
            s[2] = max(s[2], float(m.group(2)))
    return total, dict(stages)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/locpriv-bench-scale"))
    ap.add_argument("--mechanism", choices=["fedkde", "rff"], default="fedkde")
    args = ap.parse_args()
    # the machine may be shared: measure the GEMM rate around every run and keep the best
    rate = gemm_flops_per_s()
    results = {}
    for n in args.sizes:
        results[n] = run(n, args.workdir, args.mechanism)
        rate = max(rate, gemm_flops_per_s())
    print(f"dense float64 GEMM ({GRID} x {kde.DEFAULT_CHUNK}) @ ({kde.DEFAULT_CHUNK} x {GRID}), best around "
          f"the runs: {rate / 1e9:.1f} GFLOP/s")
    for n, (total, stages) in results.items():
        print(f"\nN = {n:,} users, {args.mechanism}, shards of {SHARD:,}: workflow wall {total:.1f} s")
        print(f"{'stage':<14}{'jobs':>6}{'wall s (sum)':>14}{'peak RSS MB (max job)':>24}")
        for name, (jobs, wall, rss) in sorted(stages.items()):
            print(f"{name:<14}{jobs:>6}{wall:>14.2f}{rss:>24.1f}")
        if "aggregate" in stages:
            factor = 1 if args.mechanism == "fedkde" else 2  # RFF: inner dimension 2NB
            achieved = 2 * GRID * GRID * n * factor / stages["aggregate"][1]
            print(f"aggregate GEMM work: {achieved / 1e9:.1f} GFLOP/s = {achieved / rate:.2f} of the GEMM rate")
    if len(args.sizes) == 2:
        (_, small), (_, large) = (results[n] for n in sorted(args.sizes))
        print("\npeak RSS ratio (largest N / smallest N) per stage:")
        for name in sorted(small):
            if name in large:
                print(f"  {name:<14}{large[name][2] / small[name][2]:.2f}")


if __name__ == "__main__":
    main()
