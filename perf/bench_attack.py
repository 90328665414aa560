"""Attack-stage cost of the informed adversary: the attack jobs of one config before vs after, in one session.

BEFORE and AFTER are two working directories of the workflow (e.g. fresh clones of the reference
revision and of this one) where the same config has run once.  Each round re-runs every attack job
in both, alternately (``snakemake --forcerun attack --until attack``), and sums the attack jobs'
``benchmark:`` records (wall ``s`` and ``cpu_time``, start-up included) and the in-job wall time of
their logs (``locpriv.smk.logged``: the work alone).  Printed per round: the sums for BEFORE and
AFTER, their ratio, and the load average; alternating rounds share the machine's load between both.

Each workdir's snakemake runs with PYTHONPATH = its own ``lib`` (then ``--path-after`` folders), whatever
the caller's PYTHONPATH: the BEFORE code is the BEFORE checkout's.

Run:  python perf/bench_attack.py BEFORE AFTER [--rounds 2] [--cores 2] [--path-after DIR]
      [-- more snakemake arguments, e.g. --configfile ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

LOG_LINE = re.compile(r"job finished: wall ([\d.]+) s")


def rerun_attacks(workdir: Path, cores: int, extra: list[str], path_after: list[str]) -> None:
    """Each workdir's jobs import its own ``lib`` first: an inherited PYTHONPATH (e.g. another checkout's lib)
    would make one side run the other's code (Snakemake's logger plugin imports locpriv before the Snakefile)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(workdir.resolve() / "lib"), *path_after])}
    subprocess.run(
        ["snakemake", "--cores", str(cores), "--forcerun", "attack", "--until", "attack", *extra],
        cwd=workdir,
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def attack_sums(workdir: Path) -> dict[str, float]:
    """Sums over the attack jobs: benchmark wall and CPU seconds, and the logs' in-job wall seconds."""
    records = [pd.read_csv(p, sep="\t") for p in sorted((workdir / "benchmarks").rglob("attack.tsv"))]
    bench = pd.concat(records, ignore_index=True)
    work = [
        float(m.group(1))
        for p in sorted((workdir / "logs").rglob("attack.log"))
        for m in LOG_LINE.finditer(p.read_text())
    ]
    return {
        "jobs": len(bench),
        "wall_s": float(bench["s"].sum()),
        "cpu_s": float(bench["cpu_time"].sum()),
        "in_job_s": float(sum(work)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--path-after",
        action="append",
        default=[],
        help="a folder for PYTHONPATH after the workdir's lib (e.g. a logger plugin an older checkout lacks)",
    )
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)  # after "--": snakemake's, options included
    args = parser.parse_args(argv[:cut])
    args.extra = argv[cut + 1 :]
    for r in range(args.rounds):
        sums = {}
        for name, workdir in (("before", args.before), ("after", args.after)):
            rerun_attacks(workdir, args.cores, args.extra, args.path_after)
            sums[name] = attack_sums(workdir)
        load = " ".join(f"{v:.1f}" for v in os.getloadavg())
        for key in ("wall_s", "cpu_s", "in_job_s"):
            b, a = sums["before"][key], sums["after"][key]
            print(
                f"round {r + 1}: {key:8s} before {b:8.1f}  after {a:8.1f}  after/before {a / b:.3f}  "
                f"({sums['after']['jobs']} attack jobs; load average {load})",
                flush=True,
            )


if __name__ == "__main__":
    main()
