"""Scale benchmark: exact federated KDE and Laplace LDP end to end, 10^6 to 10^9 users.

Runs the real workflow (snakemake, --cores 2) on gauss9 with two runs side by side:
fedkde (h = 0.55, all users) and laplace_ldp (epsilon = 4, deconvoluting KDE), in
fixed user shards (default 10^6; a randomize job runs the config's shards_per_job of
them, default 8, so 10^8 users make 2 x 13 randomize jobs).  Every job's wall time, CPU time
and peak RSS come from its log (locpriv.smk.logged writes them).  Printed per size, stage and
mechanism: jobs, summed wall and CPU time, the largest job's peak RSS; then, across sizes, each
stage's log-log growth exponent of CPU time (1 = linear in N) and the peak-RSS ratio of the two
largest sizes (memory bounded by the shard size keeps it near 1).

Run:  python perf/bench_scale.py [--sizes 1000000 100000000] [--shard 1000000] [--workdir DIR] [--report-only]
                                  [--cluster]
A run is restartable: an existing workdir for a size is reused (snakemake resumes);
--report-only runs nothing and reports the jobs logged so far (of a run still going, too).
--cluster (root, Debian's SLURM packages): the same run submitted through a two-node SLURM cluster on
this machine (tools/slurm-localhost.sh with SLURM_NODES=2: each node a slurmd in its own network, host
name and /tmp; the workdir shared as a site shares its filesystem) with the workflow's SLURM profile;
the node each job ran on (sacct) is kept in <workdir>/n<N>/nodes.tsv and reported per stage.  The jobs'
CPU time and peak RSS come from the same logs either way.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
GRID = 100
MECHANISMS = {
    "fedkde": {"n": "all", "h": 0.55},
    "laplace_ldp": {"n": "all", "h": 0.55, "epsilon": 4, "estimator": "deconv"},
}
SLURM = ROOT / "tools" / "slurm-localhost.sh"
NODES = 2
# the workflow's SLURM profile; status polled every 10 s (the plugin's default waits are for sites, and a
# job chain of ten stages would wait minutes on them); successful jobs' SLURM logs kept: they map job ids
# to rules for the node lists
CLUSTER_RUN = [
    "--workflow-profile",
    str(ROOT / "workflow" / "profiles" / "slurm"),
    "--slurm-init-seconds-before-status-checks",
    "10",
    "--seconds-between-status-checks",
    "10",
    "--slurm-keep-successful-logs",
]
LOG_LINE = re.compile(r"job finished: wall ([\d.]+) s, CPU ([\d.]+) s, peak RSS ([\d.]+) MB")


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


@contextmanager
def slurm_cluster(workdir: Path):
    """A two-node SLURM cluster for the duration of the block (started fresh, always stopped): its state
    under <workdir>/slurm, the workdir, the code and the Python shared with the nodes."""
    base = workdir.resolve() / "slurm"
    base.mkdir(parents=True, exist_ok=True)
    for folder in (workdir.resolve(), base):  # MariaDB runs as user mysql
        folder.chmod(0o755)
    shared = ":".join(str(p) for p in sorted({ROOT, Path(sys.prefix), Path(sys.base_prefix), workdir.resolve()}))
    env = {**os.environ, "SLURM_BASE": str(base), "SLURM_NODES": str(NODES), "SLURM_SHARED_TMP": shared}
    subprocess.run([str(SLURM), "start"], env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        yield
    finally:
        subprocess.run([str(SLURM), "stop"], env=env, stdout=subprocess.DEVNULL, check=False)


def record_nodes(wd: Path) -> None:
    """Append to nodes.tsv (SLURM job id, rule or group, state, node list) every cluster job of this
    invocation: sacct knows the nodes, the plugin's log folder (.snakemake/slurm_logs/rule_<name>/...
    /<job id>.log) the rule.  A restarted cluster forgets its jobs, so each invocation records its own."""
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "JobID,State,NodeList"], capture_output=True, text=True, check=True
    ).stdout
    sacct = {job: (state.split()[0], nodes) for job, state, nodes in (line.split("|") for line in out.split())}
    logs = wd / ".snakemake" / "slurm_logs"
    rules = {log.stem: log.relative_to(logs).parts[0] for log in logs.rglob("*.log")} if logs.exists() else {}
    with (wd / "nodes.tsv").open("a") as fh:
        for job, (state, nodes) in sorted(sacct.items(), key=lambda kv: int(kv[0].split("_")[0])):
            fh.write(f"{job}\t{rules.get(job, '?')}\t{state}\t{nodes}\n")


def run(n: int, shard: int, workdir: Path, on_cluster: bool) -> None:
    """Run (or resume) the workflow at N users; one line per invocation in invocations.txt."""
    wd = workdir / f"n{n}"
    wd.mkdir(parents=True, exist_ok=True)
    (wd / "config.yaml").write_text(yaml.safe_dump(config(n, shard)))
    t = time.perf_counter()
    # resume by file times only: a changed default param or script would otherwise redo an hour of 10^8 jobs
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
    command += CLUSTER_RUN if on_cluster else ["--cores", "2"]
    command += ["--rerun-incomplete", "--rerun-triggers=mtime", "results/summary/metrics.parquet"]
    with (wd / "snakemake.log").open("a") as err:
        done = subprocess.run(command, cwd=wd, check=False, stdout=subprocess.DEVNULL, stderr=err)
    total = time.perf_counter() - t
    if on_cluster:  # a failed invocation's jobs too: the cluster is restarted, and forgets them
        record_nodes(wd)
    done.check_returncode()
    with (wd / "invocations.txt").open("a") as fh:  # a resumed run's invocations add up
        where = f"through SLURM ({NODES} nodes)" if on_cluster else "local"
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        fh.write(f"{where}: wall {total:.1f} s, load average {load} at the end\n")


def node_report(wd: Path) -> None:
    """Per rule (or group): its cluster jobs per node, from nodes.tsv."""
    if not (wd / "nodes.tsv").exists():
        return
    per_rule: dict[str, Counter] = defaultdict(Counter)
    for line in (wd / "nodes.tsv").read_text().splitlines():
        _, rule, state, nodes = line.split("\t")
        per_rule[rule][f"{nodes} {state}"] += 1
    print("\ncluster jobs per rule (node, state: jobs):")
    for rule, counts in sorted(per_rule.items()):
        print(f"  {rule:<40}" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))


def stages_of(wd: Path) -> dict[str, Stage]:
    """Per stage, from the logs of the jobs that finished (all of them once the run is complete)."""
    stages: dict[str, Stage] = defaultdict(Stage)
    logs = wd / "logs"
    for log in logs.rglob("*.log"):
        m = LOG_LINE.search(log.read_text())
        if m:
            wall, cpu, rss = (float(g) for g in m.groups())
            stages[stage_of(log, logs)].add(wall, cpu, rss)
    return dict(stages)


@dataclass
class Stage:
    jobs: int = 0
    wall: float = 0.0  # summed over its jobs, s
    cpu: float = 0.0  # summed over its jobs, s
    rss: float = 0.0  # largest job's peak, MB

    def add(self, wall: float, cpu: float, rss: float) -> None:
        self.jobs += 1
        self.wall += wall
        self.cpu += cpu
        self.rss = max(self.rss, rss)


def randomize_in_estimate(stages: dict[str, Stage]) -> dict[str, Stage]:
    """'randomize M' folded into 'estimate M', as 'randomize+estimate M': the estimate job randomizes the
    first batch of shards itself, so only the two together hold all N users' work at every size."""
    out: dict[str, Stage] = defaultdict(Stage)
    for name, st in stages.items():
        key = re.sub(r"^(randomize|estimate) ", "randomize+estimate ", name)
        out[key].jobs += st.jobs
        out[key].wall += st.wall
        out[key].cpu += st.cpu
        out[key].rss = max(out[key].rss, st.rss)
    return dict(out)


def slope(n0: int, v0: float, n1: int, v1: float) -> str:
    """Log-log growth exponent between two sizes ('-' where a value is too small to time)."""
    return f"{math.log(v1 / v0) / math.log(n1 / n0):.2f}" if min(v0, v1) >= 0.05 else "-"


def report(results: dict[int, dict[str, Stage]], walls: dict[int, str]) -> None:
    sizes = sorted(results)
    for n in sizes:
        print(f"\nN = {n:,}: {walls[n]}")
        print(f"{'stage':<32}{'jobs':>6}{'wall s (sum)':>14}{'CPU s (sum)':>13}{'peak RSS MB (max job)':>24}")
        for name, st in sorted(results[n].items()):
            print(f"{name:<32}{st.jobs:>6}{st.wall:>14.2f}{st.cpu:>13.2f}{st.rss:>24.1f}")
    if len(sizes) < 2:
        return
    pairs = list(itertools.pairwise(sizes))
    results = {n: randomize_in_estimate(results[n]) for n in sizes}
    head = "".join(f"{f'{a:.0e}->{b:.0e}':>16}" for a, b in pairs)
    print(f"\nlog-log growth exponent of CPU s (1 = linear in N) between sizes:\n{'stage':<32}{head}")
    for name in sorted(results[sizes[-1]] | results[sizes[0]]):
        cells = [
            slope(a, results[a][name].cpu, b, results[b][name].cpu)
            if name in results[a] and name in results[b]
            else "."
            for a, b in pairs
        ]
        print(f"{name:<32}" + "".join(f"{c:>16}" for c in cells))
    (a, b) = pairs[-1]
    print(f"\npeak RSS ratio N = {b:,} / N = {a:,} per stage:")
    for name in sorted(results[b]):
        if name in results[a]:
            print(f"  {name:<32}{results[b][name].rss / results[a][name].rss:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 100_000_000])
    ap.add_argument("--shard", type=int, default=1_000_000)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/locpriv-bench-scale"))
    ap.add_argument(
        "--report-only", action="store_true", help="run nothing: report the jobs finished so far in the workdirs"
    )
    ap.add_argument("--cluster", action="store_true", help="submit through a two-node SLURM cluster on this machine")
    args = ap.parse_args()
    results, walls = {}, {}
    for n in sorted(args.sizes):
        if not args.report_only:
            if args.cluster:
                with slurm_cluster(args.workdir):
                    run(n, args.shard, args.workdir, on_cluster=True)
            else:
                run(n, args.shard, args.workdir, on_cluster=False)
        wd = args.workdir / f"n{n}"
        invocations = (wd / "invocations.txt").read_text().splitlines() if (wd / "invocations.txt").exists() else []
        walls[n] = "; ".join(invocations) or "no invocation finished yet (the jobs logged so far)"
        results[n] = stages_of(wd)
        report({n: results[n]}, walls)
        node_report(wd)
    if len(results) > 1:
        report(results, walls)


if __name__ == "__main__":
    main()
