"""Scale benchmark: exact federated KDE and Laplace LDP end to end at 10^6 and 10^8 users.

Runs the real workflow (snakemake, --cores 2) on gauss9 with two runs side by side:
fedkde (h = 0.55, all users) and laplace_ldp (epsilon = 4, deconvoluting KDE), in
fixed user shards (default 10^6; a randomize job runs the config's shards_per_job of
them, default 8, so 10^8 users make 2 x 13 randomize jobs).  Every job's wall time
and peak RSS come from its log (locpriv.smk.logged writes them).  Printed per stage and mechanism: jobs, summed and
largest single-job wall time, largest single-job peak RSS, and the peak-RSS ratio
largest N / smallest N, which must stay <= 2 for memory bounded by the shard size.

Run:  python perf/bench_scale.py [--sizes 1000000 100000000] [--shard 1000000] [--workdir DIR]
A run is restartable: an existing workdir for a size is reused (snakemake resumes).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
GRID = 100
MECHANISMS = {
    "fedkde": {"n": "all", "h": 0.55},
    "laplace_ldp": {"n": "all", "h": 0.55, "epsilon": 4, "estimator": "deconv"},
}
LOG_LINE = re.compile(r"job finished: wall ([\d.]+) s, peak RSS ([\d.]+) MB")


def config(n: int, shard: int) -> dict:
    return {
        "seed": 1,
        "users_per_shard": shard,
        "grid": {"P": GRID, "Q": GRID},
        "attack": {"users": 200, "ratio": 1.1},
        "plots": {"dpi": 60},
        "datasets": {
            "gauss9": {"source": "synthetic", "pattern": "gauss9", "n_users": n, "bbox": [-3, 3, -3, 3], "knn_k": 200}
        },
        "experiments": {"scale": {"datasets": ["gauss9"], "reps": 1, "mechanisms": MECHANISMS}},
    }


def stage_of(log: Path, logs: Path) -> str:
    """'randomize fedkde' for logs/results/runs/<ds>/<mechanism>/.../randomize-<batch>.log, else the rule
    (the folder, or the file name, right under logs/results/)."""
    rel = log.relative_to(logs / "results").parts
    if rel[0] == "runs":
        return f"{re.sub(r'-[0-9]+$', '', log.stem)} {rel[2]}"
    return Path(rel[0]).stem


def run(n: int, shard: int, workdir: Path) -> tuple[float, dict]:
    wd = workdir / f"n{n}"
    wd.mkdir(parents=True, exist_ok=True)
    (wd / "config.yaml").write_text(yaml.safe_dump(config(n, shard)))
    t = time.perf_counter()
    # resume by file times only: a changed default param or script would otherwise redo an hour of 10^8 jobs
    with (wd / "snakemake.log").open("a") as err:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "--snakefile",
                str(ROOT / "Snakefile"),
                "--cores",
                "2",
                "--rerun-incomplete",
                "--rerun-triggers=mtime",
                "results/summary/metrics.parquet",
            ],
            cwd=wd,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    total = time.perf_counter() - t
    stages = defaultdict(lambda: [0, 0.0, 0.0, 0.0])  # jobs, wall sum, wall max, peak RSS max
    logs = wd / "logs"
    for log in logs.rglob("*.log"):
        m = LOG_LINE.search(log.read_text())
        if m:
            s = stages[stage_of(log, logs)]
            wall, rss = float(m.group(1)), float(m.group(2))
            s[0] += 1
            s[1] += wall
            s[2] = max(s[2], wall)
            s[3] = max(s[3], rss)
    return total, dict(stages)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 100_000_000])
    ap.add_argument("--shard", type=int, default=1_000_000)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/locpriv-bench-scale"))
    args = ap.parse_args()
    results = {}
    for n in sorted(args.sizes):
        results[n] = run(n, args.shard, args.workdir)
        total, stages = results[n]
        print(
            f"\nN = {n:,} users, shards of {args.shard:,}: workflow wall {total:.1f} s "
            f"(this invocation; a resumed run counts only what it ran)",
            flush=True,
        )
        print(f"{'stage':<32}{'jobs':>6}{'wall s (sum)':>14}{'wall s (max job)':>18}{'peak RSS MB (max job)':>24}")
        for name, (jobs, wall, wmax, rss) in sorted(stages.items()):
            print(f"{name:<32}{jobs:>6}{wall:>14.2f}{wmax:>18.2f}{rss:>24.1f}", flush=True)
    if len(results) > 1:
        small, large = (results[n][1] for n in (min(results), max(results)))
        print(f"\npeak RSS ratio (N = {max(results):,} / N = {min(results):,}) per stage (bounded if <= 2):")
        for name in sorted(small):
            if name in large:
                print(f"  {name:<32}{large[name][3] / small[name][3]:.2f}")


if __name__ == "__main__":
    main()
