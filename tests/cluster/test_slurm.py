"""A real one-node SLURM cluster on localhost runs the workflow.

tools/slurm-localhost.sh starts slurmctld, slurmd, munge, slurmdbd and MariaDB;
the test runs a small experiment through the SLURM executor plugin with the
project's profile and checks that the jobs went through sbatch (SLURM job ids in
the log, listed by sacct) and that the results are byte-identical to a local run.
Skipped, with the reason, where the cluster cannot be started (not root, no
apt/dpkg, packages not installable); the daemons are always stopped afterwards.
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, TINY, run_snakemake, write_config

pytestmark = [pytest.mark.cluster, pytest.mark.workflow]

SCRIPT = ROOT / "tools/slurm-localhost.sh"
OUTPUTS = [
    "results/summary/metrics.parquet",
    "results/summary/metrics.csv",
    "results/runs/gauss9/fedkde/n~600_h~0.55/rep~0/estimate.nc",
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
    env = {**os.environ, "SLURM_BASE": str(base)}
    start = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True, env=env)
    try:
        if start.returncode != 0:
            pytest.skip(f"SLURM could not be started: {(start.stdout + start.stderr)[-1500:]}")
        yield base
    finally:
        subprocess.run([str(SCRIPT), "stop"], capture_output=True, text=True, env=env)
        shutil.rmtree(base, ignore_errors=True)


def test_workflow_runs_through_sbatch_and_matches_the_local_run(cluster, tmp_path):
    # one shard per randomize job: fedkde's 600 users make 3 shards, so its batches 1 and 2 are
    # randomize jobs (as are zero's), which the profile groups (groups: randomize: run) into one cluster job
    config = dict(
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
    local, remote = tmp_path / "local", tmp_path / "slurm"
    for wd in (local, remote):
        wd.mkdir()
        write_config(wd, config)
    run_snakemake(local, "--cores", "2")
    # poll SLURM every few seconds instead of the plugin's 40 s start-up wait: a test, not a site
    proc = run_snakemake(
        remote,
        "--workflow-profile",
        str(ROOT / "workflow/profiles/slurm"),
        "--latency-wait",
        "5",
        "--slurm-init-seconds-before-status-checks",
        "5",
        "--seconds-between-status-checks",
        "5",
    )
    log = proc.stdout + proc.stderr
    job_ids = set(re.findall(r"submitted with SLURM jobid (\d+)", log))
    assert job_ids, "no job went through sbatch:\n" + log[-3000:]
    sacct = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "JobID,State"], capture_output=True, text=True, check=True
    ).stdout
    states = dict(line.split("|") for line in sacct.split())
    assert job_ids <= set(states) and all(states[j] == "COMPLETED" for j in job_ids)
    # grouping: the four later-batch randomize jobs went as one cluster job (the plugin
    # logs a group job under slurm_logs/group_<group>_<rules>/)
    grouped = re.findall(r"submitted with SLURM jobid \d+ \(log: \S*/group_run_", log)
    assert len(grouped) == 1, "\n".join(line for line in log.splitlines() if "submitted" in line)
    for path in OUTPUTS:
        assert (local / path).read_bytes() == (remote / path).read_bytes(), path
