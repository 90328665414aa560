"""A real two-node SLURM cluster on this machine runs the workflow, and loses a node mid-run.

tools/slurm-localhost.sh (SLURM_NODES=2) starts slurmctld, munge, slurmdbd and MariaDB on this
machine (the head node, where snakemake runs) and two compute nodes, node1 and node2: each a
slurmd in its own network namespace (its own address and veth link to the head), UTS namespace
(its own host name) and mount namespace (its own empty /tmp and ~/.cache). The work directories
lie in the cluster's folder, which every node shares, as a real cluster shares a filesystem.

Through the SLURM executor plugin with the project's profile, a small experiment's jobs go
through sbatch (SLURM job ids in the log, listed by sacct), run on both nodes (sacct's node
lists) and give results byte-identical to a local run.  Then, in a copy of that run without its
runs' outputs (a run half done), node2 loses power (every process in its namespace killed at
once) while a job runs there: the run finishes on node1 or stops with one error line per failed
job, and the same command converges to the same bytes.

Skipped, with the reason, where the cluster cannot be started (not root, no apt/dpkg, packages
not installable); the daemons and namespaces are always removed afterwards.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, TINY, run_snakemake, write_config

pytestmark = [pytest.mark.cluster, pytest.mark.workflow]

SCRIPT = ROOT / "tools/slurm-localhost.sh"
NODES = {"node1", "node2"}
OUTPUTS = [
    "results/summary/metrics.parquet",
    "results/summary/metrics.csv",
    "results/runs/gauss9/fedkde/n~600_h~0.55/rep~0/estimate.nc",
]
# one shard per randomize job: fedkde's 600 users make 3 shards, so its batches 1 and 2 are
# randomize jobs (as are zero's), which the profile groups (groups: randomize: run) into one cluster job
CONFIG = dict(
    TINY,
    shards_per_job=1,
    experiments={
        "density": {
            "datasets": ["gauss9"],
            "reps": 1,
            "mechanisms": {"fedkde": {"n": 600, "h": 0.55}, "zero": {"n": 600}},
        }
    },
)
# the profile, polling SLURM every few seconds instead of the plugin's 40 s start-up wait: a test, not a site
PROFILE_RUN = [
    "--workflow-profile",
    str(ROOT / "workflow/profiles/slurm"),
    "--latency-wait",
    "5",
    "--slurm-init-seconds-before-status-checks",
    "5",
    "--seconds-between-status-checks",
    "5",
]


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0:
        pytest.skip("starting a SLURM cluster needs root")
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        pytest.skip("SLURM packages are installed with apt-get/dpkg, not available here")
    # not under pytest's private (0700) temp tree: MariaDB runs as user mysql
    base = Path(tempfile.mkdtemp(prefix="locpriv-slurm-test-", dir="/tmp"))
    base.chmod(0o755)
    # the nodes' /tmp is their own: the code and the Python a job runs stay shared wherever they lie
    shared = ":".join(str(p) for p in {ROOT, Path(sys.prefix), Path(sys.base_prefix)})
    env = {**os.environ, "SLURM_BASE": str(base), "SLURM_NODES": str(len(NODES)), "SLURM_SHARED_TMP": shared}
    start = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True, env=env)
    try:
        if start.returncode != 0:
            pytest.skip(f"SLURM could not be started: {(start.stdout + start.stderr)[-1500:]}")
        yield base
    finally:
        subprocess.run([str(SCRIPT), "stop"], capture_output=True, text=True, env=env)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    wd = tmp_path_factory.mktemp("local")
    write_config(wd, CONFIG)
    run_snakemake(wd, "--cores", "2")
    return wd


@pytest.fixture(scope="module")
def cluster_run(cluster):
    """The experiment run through SLURM in a work directory every node shares: (directory, console)."""
    wd = cluster / "work" / "clean"
    wd.mkdir(parents=True)
    write_config(wd, CONFIG)
    proc = run_snakemake(wd, *PROFILE_RUN)
    return wd, proc.stdout + proc.stderr


def sacct() -> dict[str, tuple[str, str]]:
    """SLURM job id -> (state, node list) of every job the cluster ran (each allocation, not its steps)."""
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "JobID,State,NodeList"], capture_output=True, text=True, check=True
    ).stdout
    return {job: (state.split()[0], nodes) for job, state, nodes in (line.split("|") for line in out.split())}


def assert_same_bytes(local: Path, remote: Path) -> None:
    for path in OUTPUTS:
        assert (local / path).read_bytes() == (remote / path).read_bytes(), path


def test_workflow_runs_through_sbatch_on_every_node_and_matches_the_local_run(cluster_run, local_run):
    remote, log = cluster_run
    job_ids = set(re.findall(r"submitted with SLURM jobid (\d+)", log))
    assert job_ids, "no job went through sbatch:\n" + log[-3000:]
    jobs = sacct()
    assert job_ids <= set(jobs) and all(jobs[j][0] == "COMPLETED" for j in job_ids), jobs
    # CR_LLN sends each job to the least loaded node: the concurrent randomize jobs land on both
    assert {jobs[j][1] for j in job_ids} == NODES, {j: jobs[j] for j in job_ids}
    # grouping: the four later-batch randomize jobs went as one cluster job (the plugin
    # logs a group job under slurm_logs/group_<group>_<rules>/)
    grouped = re.findall(r"submitted with SLURM jobid \d+ \(log: \S*/group_run_", log)
    assert len(grouped) == 1, "\n".join(line for line in log.splitlines() if "submitted" in line)
    assert_same_bytes(local_run, remote)


def test_a_node_lost_mid_run_and_the_same_command_converges(cluster, cluster_run, local_run):
    # mid-run: the finished run without its runs and what follows them, so the two runs'
    # estimate jobs start together again and CR_LLN puts one of them on node2
    remote = cluster / "work" / "lost"
    shutil.copytree(cluster_run[0], remote)
    for done in ("results/runs", "results/summary", "logs/results/runs"):
        shutil.rmtree(remote / done)
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(remote)]
    env = {**os.environ, "PYTHONHASHSEED": "0", "SLURM_BASE": str(cluster)}
    run = subprocess.Popen(
        [*cmd, *PROFILE_RUN], cwd=remote, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 600
        while True:  # until a job is running on node2 (squeue: job id, node list)
            running = subprocess.run(
                ["squeue", "-h", "-t", "RUNNING", "-o", "%i %N"], capture_output=True, text=True, check=True
            ).stdout.split("\n")
            victims = [line.split()[0] for line in running if line.endswith(" node2")]
            assert run.poll() is None, "the run ended before any job ran on node2"
            assert time.monotonic() < deadline, "no job ran on node2 within 600 s"
            if victims:
                break
            time.sleep(0.5)
        before = set(sacct())
        subprocess.run([str(SCRIPT), "kill-node", "node2"], env=env, check=True, capture_output=True)
        first = run.communicate(timeout=1800)[0]  # a guard against a hang, not a speed goal
    finally:
        if run.poll() is None:
            run.kill()
    # SLURM noticed: the job node2 was running ends NODE_FAIL once node2 misses SlurmdTimeout
    assert sacct()[victims[0]][0] == "NODE_FAIL", first[-3000:]
    if run.returncode != 0:  # a failed run says so in one line per failed job, no traceback
        assert "Error in rule" in first and "Traceback" not in first, first[-3000:]
    # the same command again: it makes whatever is still missing and converges to the local bytes
    run_snakemake(remote, *PROFILE_RUN)
    assert_same_bytes(local_run, remote)
    # what was made after the loss (the failed job's outputs at least) was made on node1
    after = {j: nodes for j, (state, nodes) in sacct().items() if j not in before and state == "COMPLETED"}
    assert after and set(after.values()) == {"node1"}, after
