"""Job granularity: a reduced paper config end to end, old code against this checkout, in one session.

Runs ``snakemake --cores 2`` on the same config with two code trees, alternating (old, new, old,
new, ...) so that both see the same machine load, each in a fresh working directory, and prints per
round the wall and CPU time, the number of jobs and the summed wall time of each stage's ``benchmark:``
records (per job: the stage's work plus its start-up), then the ratio old / new of the wall times
(per round and of the sums).  Finally the two trees' results are compared byte for byte (every file
under results/; the logs and benchmark records are outside it).

Run:  python perf/bench_granularity.py --old DIR --config CONFIG [--rounds 2] [--workdir DIR]
  --old: a checkout of the reference code (e.g. ``git worktree add /tmp/old <commit>``);
  --config: the config file, e.g. a reduced workflow/configs/paper_rff.yaml (relative data paths
  are resolved from the working directory: give absolute ones).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import shutil
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def run(code: Path, config: Path, wd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (Snakemake and every job, user + system) of one complete run of
    ``config`` with the workflow in ``code``, in ``wd``.  On a shared machine the CPU time is the
    steadier of the two: it does not count the time spent waiting for a core."""
    if wd.exists():
        shutil.rmtree(wd)
    wd.mkdir(parents=True)
    shutil.copy(config, wd / "config.yaml")
    env = {**os.environ, "PYTHONPATH": str(code / "lib")}
    cmd = ["snakemake", "--snakefile", str(code / "Snakefile"), "--directory", str(wd), "--cores", "2"]
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(cmd, cwd=wd, env=env, check=True, capture_output=True)
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def stages(wd: Path) -> dict[str, tuple[int, float]]:
    """Stage -> (jobs, summed wall seconds) from the run's benchmark records.  A stage is the
    record's file name without its batch or epsilon suffix (randomize-0 -> randomize)."""
    out = defaultdict(lambda: [0, 0.0])
    for tsv in (wd / "benchmarks").rglob("*.tsv"):
        name = tsv.stem.split("-")[0]
        if "/studies/" in str(tsv) and name == "run":
            name = "study_run:" + tsv.parent.parent.parent.name  # the task
        out[name][0] += 1
        out[name][1] += float(pd.read_csv(tsv, sep="\t")["s"].iloc[0])
    return {k: (n, s) for k, (n, s) in out.items()}


def differing(a: Path, b: Path) -> list[str]:
    """Files under results/ that differ or exist in one tree only."""
    out = []

    def walk(cmp: filecmp.dircmp, rel: str) -> None:
        out.extend(f"{rel}{f} (one side only)" for f in cmp.left_only + cmp.right_only)
        out.extend(f"{rel}{f}" for f in filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)[1])
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{rel}{name}/")

    walk(filecmp.dircmp(a / "results", b / "results"), "results/")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, required=True)
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=Path("perf-granularity"))
    a = ap.parse_args()
    walls, cpus = {"old": [], "new": []}, {"old": [], "new": []}
    for r in range(a.rounds):
        for label, code in (("old", a.old.resolve()), ("new", ROOT)):
            wd = a.workdir.resolve() / label
            wall, cpu = run(code, a.config.resolve(), wd)
            walls[label].append(wall)
            cpus[label].append(cpu)
            load = os.getloadavg()[0]
            per = stages(wd)
            jobs = sum(n for n, _ in per.values())
            print(f"round {r} {label}: wall {wall:7.1f} s, CPU {cpu:7.1f} s, {jobs} jobs, load {load:.1f}", flush=True)
            for name, (n, s) in sorted(per.items(), key=lambda kv: -kv[1][1]):
                print(f"    {name:28s} {n:5d} jobs  {s:8.1f} s  ({s / n:5.2f} s per job)")
        ratios = walls["old"][-1] / walls["new"][-1], cpus["old"][-1] / cpus["new"][-1]
        print(f"round {r}: old / new wall = {ratios[0]:.2f}, CPU = {ratios[1]:.2f}", flush=True)
    wall_ratio, cpu_ratio = sum(walls["old"]) / sum(walls["new"]), sum(cpus["old"]) / sum(cpus["new"])
    print(f"all rounds: old / new wall = {wall_ratio:.2f}, CPU = {cpu_ratio:.2f}")
    bad = differing(a.workdir.resolve() / "old", a.workdir.resolve() / "new")
    print("results byte-identical" if not bad else f"{len(bad)} result files differ, e.g. {bad[:5]}")


if __name__ == "__main__":
    main()
