"""Snakemake's main-process CPU with and without its local submission rate limiter (locpriv.smk).

Snakemake's command line sets ``--max-jobs-per-timespan 100/1s``; with it, every scheduler pass that
started or finished jobs arms a one-second timer that starts another pass, so the passes per second
grow with the jobs finished and each pass checks the inputs of every ready job.  The workflow's
``onstart`` drops the limiter for local runs (``locpriv.smk.drop_local_rate_limit``).  This runs one
toy DAG twice in the same session, once as Snakemake ships and once with that hook: ``--pairs``
pairs of jobs (each ``sleep``), every first job reading ``--inputs`` files, 2 cores.  Printed: wall
and CPU seconds of the whole ``snakemake`` process tree (the jobs' own CPU is a few ms each) and
the ratio.  Same wall time is expected: the jobs sleep.

Run:  python perf/bench_scheduler.py [--pairs 150] [--inputs 30] [--sleep 0.5]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOOK = """onstart:
    from locpriv.smk import drop_local_rate_limit

    drop_local_rate_limit(workflow)


"""

RULES = """rule all:
    input:
        expand("out/b{{i}}.txt", i=range({pairs})),


rule a:
    input:
        expand("in/{{j}}.txt", j=range({inputs})),
    output:
        "out/a{{i}}.txt",
    shell:
        "sleep {sleep}; touch {{output}}"


rule b:
    input:
        "out/a{{i}}.txt",
    output:
        "out/b{{i}}.txt",
    shell:
        "sleep {sleep}; touch {{output}}"
"""


def run(folder: Path, hook: bool, pairs: int, inputs: int, sleep: float) -> tuple[float, float]:
    folder.mkdir()
    (folder / "in").mkdir()
    for j in range(inputs):
        (folder / "in" / f"{j}.txt").touch()
    (folder / "Snakefile").write_text((HOOK if hook else "") + RULES.format(pairs=pairs, inputs=inputs, sleep=sleep))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    command = [sys.executable, "-m", "snakemake", "--cores", "2", "--quiet", "all"]
    subprocess.run(command, cwd=folder, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=150)
    parser.add_argument("--inputs", type=int, default=30)
    parser.add_argument("--sleep", type=float, default=0.5)
    parser.add_argument("--repeat", type=int, default=3, help="alternating pairs of runs")
    args = parser.parse_args()
    print(f"{2 * args.pairs} jobs, {args.inputs} inputs per first job, 2 cores")
    print("| pair | shipped wall s | shipped CPU s | dropped wall s | dropped CPU s | CPU ratio |")
    print("|---|---|---|---|---|---|")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeat):
            shipped = run(Path(tmp) / f"shipped{k}", False, args.pairs, args.inputs, args.sleep)
            dropped = run(Path(tmp) / f"dropped{k}", True, args.pairs, args.inputs, args.sleep)
            ratios.append(shipped[1] / dropped[1])
            cells = [f"{v:.1f}" for v in (*shipped, *dropped)] + [f"{ratios[-1]:.2f}"]
            print(f"| {k} | " + " | ".join(cells) + " |")
    mean = sum(ratios) / len(ratios)
    print(f"CPU ratio shipped / dropped: mean {mean:.2f}, range {min(ratios):.2f}-{max(ratios):.2f}")


if __name__ == "__main__":
    main()
