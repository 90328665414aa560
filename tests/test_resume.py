"""kill -9 of snakemake mid-run, then the same command: it resumes and the results are byte-identical.

Also checks that the killed run's job processes do not outlive it (locpriv.smk's
parent watchdog) and that the killed run's stale locks do not stop the resume
(locpriv.smk.claim_workdir; --rerun-incomplete comes from profiles/default).
Both runs use the working tree's code: edits to lib/ while the test runs change the bytes.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, run_snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.heavy]


def results(wd: Path) -> dict:
    return {str(p.relative_to(wd)): p.read_bytes() for p in sorted((wd / "results").rglob("*")) if p.is_file()}


def job_processes(wd: Path) -> list[int]:
    """Pids of processes running one of this workdir's rule scripts."""
    mark = str(wd / ".snakemake/scripts").encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_kill_9_then_same_command_resumes_byte_identical(make_workdir):
    reference, crashed = make_workdir(name="reference"), make_workdir(name="crashed")
    run_snakemake(reference, "--cores", "2")

    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--cores", "2"]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen(cmd, cwd=crashed, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # kill once the per-run stages are under way: some run finished its metrics, jobs are running
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if list((crashed / "results/runs").rglob("metrics.parquet")) and job_processes(crashed):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (crashed / "results/summary/metrics.parquet").exists()

    # the killed run's jobs exit with it (the watchdog polls once a second; on a loaded machine a job
    # may still be importing, and it starts watching at its first locpriv import)
    deadline = time.monotonic() + 60
    while job_processes(crashed) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert job_processes(crashed) == []

    resumed = run_snakemake(crashed, "--cores", "2")  # the same command, nothing else
    assert "removed" in resumed.stderr and "lock" in resumed.stderr
    got, want = results(crashed), results(reference)
    assert sorted(got) == sorted(want)
    assert [k for k in want if got[k] != want[k]] == []
