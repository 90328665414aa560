"""Damaged, deleted or foreign intermediates: the same command remakes them, byte-identical.

Every kind of file the density DAG writes is damaged three ways (cut in half, 64 random
bytes inside, deleted); the same ``snakemake`` command must then make the results again,
byte for byte those of an undamaged run, touching nothing the workflow did not write.
The detection of every format is checked without Snakemake (fast); the workflow runs damage
several independent kinds at once (one file per run or per result, so no remade file hides
another's detection) and the full kind x damage matrix is ``heavy``.
"""

import copy
import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, TINY, run_snakemake, write_config
from locpriv import integrity, io, nc3

RUNS = "results/runs/gauss9"
A, B, C = f"{RUNS}/fedkde/n~300_h~0.55/rep~0", f"{RUNS}/fedkde/n~300_h~knn/rep~0", f"{RUNS}/zero/n~300/rep~0"
GRID = "grid~24x20"
# one file of every kind the density DAG writes
KINDS = {
    "points": "results/ingest/gauss9/points.parquet",
    "meta": "results/ingest/gauss9/meta.json",
    "bandwidth": "results/ingest/gauss9/bandwidth.json",
    "truth": f"results/ingest/gauss9/{GRID}/truth.nc",
    "pooled_kde": f"results/ingest/gauss9/{GRID}/pooled-kde/n~300_h~0.55.nc",
    "range_workload": "results/ingest/gauss9/range-workload.parquet",
    "grid": f"results/encode/gauss9/{GRID}/grid.nc",
    "shard": f"{A}/view/batch~0/shard~0.parquet",
    "aggregate": f"{B}/aggregate.nc",
    "estimate": f"{B}/estimate.nc",
    "attack_local_maxima": f"{C}/attack-local_maxima.parquet",
    "attack_bayes": f"{B}/attack-bayes.parquet",
    "metrics": f"{C}/metrics.parquet",
    "audit": "results/audit/zero/default.parquet",
    "audit_table": "results/audit/audit.csv",
    "summary": "results/summary/metrics.parquet",
    "runs_table": "results/summary/runs.csv",
    "ingest_counts": "results/summary/ingest.csv",
    "frontier": "results/summary/frontier.csv",
    "frontier_plot": "results/plots/frontier.png",
    "plot": "results/plots/tradeoff.png",
    "surfaces": "results/plots/surfaces-gauss9.png",
}
CONFIG = copy.deepcopy(TINY)
CONFIG["experiments"]["density"]["mechanisms"] = {"fedkde": {"n": 300, "h": [0.55, "knn"]}, "zero": {"n": 300}}
CONFIG["audit"] = {"draws": 1000}


def cut(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def garble(path: Path) -> None:
    """64 random bytes (fixed seed) in the middle of the file."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = np.random.default_rng(29).bytes(64)
    path.write_bytes(bytes(data))


def foreign(path: Path) -> None:
    """A whole, readable Parquet file of another schema (put there by hand)."""
    pd.DataFrame({"foo": [1.0]}).to_parquet(path)


DAMAGE = {"cut": cut, "garble": garble, "delete": Path.unlink, "foreign": foreign}


def files(wd: Path) -> dict:
    return {
        str(p.relative_to(wd)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (wd / "results").rglob("*")
        if p.is_file() and p.name != ".snakemake_timestamp"
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    wd = tmp_path_factory.mktemp("reference")
    write_config(wd, CONFIG)
    proc = run_snakemake(wd, "--cores", "2")
    (wd.parent / "reference-console.txt").write_text(proc.stdout + proc.stderr)
    assert set(KINDS.values()) <= set(files(wd)), sorted(set(KINDS.values()) - set(files(wd)))
    return wd


def damaged_copy(reference: Path, tmp_path: Path, damage: dict[str, str]) -> Path:
    wd = tmp_path / "wd"
    shutil.copytree(reference, wd, symlinks=True)  # copy2: the mtimes stay as they were
    for kind, how in damage.items():
        DAMAGE[how](wd / KINDS[kind])
    return wd


def same_command_converges(reference: Path, wd: Path, damage: dict[str, str], keep: tuple = ()) -> str:
    """Run the same command; the results must equal the reference's (plus ``keep``, untouched)."""
    proc = run_snakemake(wd, "--cores", "2")
    console = proc.stdout + proc.stderr
    want, got = files(reference), files(wd)
    assert sorted(set(got) - set(want)) == sorted(keep), console[-3000:]
    assert [f for f in want if got.get(f) != want[f]] == [], console[-3000:]
    for kind, how in damage.items():
        if how != "delete":
            path = KINDS[kind] if kind != "shard" else os.path.dirname(KINDS[kind])
            assert [line for line in console.splitlines() if "locpriv: removed" in line and path in line], kind
    return console


@pytest.mark.workflow
def test_the_console_is_a_progress_line_and_the_files_to_open(reference):
    """A first run prints no job blocks and no caching notices (Snakemake's default: ~700 lines for
    this config's 41 jobs): progress lines with the time left once the data are read, the ingest's
    line and, last, the three files to open."""
    lines = (reference.parent / "reference-console.txt").read_text().splitlines()
    assert len(lines) <= 20, lines
    assert not [line for line in lines if "eligible for caching" in line or line.startswith(("rule ", "localrule "))]
    progress = [line for line in lines if line.startswith("locpriv: ") and "jobs done" in line]
    assert progress and "(more once the data are read)" in progress[0] and progress[-1].endswith(" s")
    assert any("left" in line for line in progress)
    opened = ["results/summary/frontier.csv", "results/plots/frontier.png", "results/summary/runs.csv"]
    assert lines[-1].startswith(f"locpriv: done. Open {', '.join(opened)};"), lines[-1]
    # the files README's quick start tells a user to open, in its order (issue 40: the console named five)
    quick_start = (ROOT / "README.md").read_text().split("## Quick start")[1].split("\n## ")[0]
    assert sorted(quick_start.index(f"`{f}`") for f in opened) == [quick_start.index(f"`{f}`") for f in opened]


def test_every_format_finds_a_cut_or_garbled_file(tmp_path):
    """Structural checks (integrity.damage without a digest) on every writer's output: whole passes,
    cut fails, random bytes fail where the format can tell (not in a NetCDF-3 variable's data, nor in
    a Parquet footer's key-value metadata: the recorded digests find those, see below)."""
    import xarray as xr
    from matplotlib.figure import Figure

    frame = pd.DataFrame({"user": np.arange(500), "x": np.linspace(0, 1, 500)})
    made = {
        "table.parquet": lambda p: io.write_parquet(frame, p),
        "streamed.parquet": lambda p: io.write_parquet_batches(iter([frame, frame]), p, dict, 256),
        "surface.nc": lambda p: io.write_netcdf(
            nc3.Dataset({"v": nc3.Variable(("x", "y"), np.ones((20, 30)))}, {"units": "m"}), p
        ),
        "labelled.nc": lambda p: io.write_netcdf(xr.Dataset({"v": (("x", "y"), np.ones((20, 30)))}), p),
        "figure.png": lambda p: Figure().savefig(p, format="png"),
        "meta.json": lambda p: io.write_json({"a": list(range(100))}, p),
        "table.csv": lambda p: frame.to_csv(p, index=False),
    }
    for name, write in made.items():
        for how in ("cut", "garble"):
            path = tmp_path / how / name
            path.parent.mkdir(exist_ok=True)
            write(path)
            assert integrity.damage(path) is None, (name, integrity.damage(path))
            DAMAGE[how](path) if how == "cut" else _garble_checked_part(path)
            assert integrity.damage(path), (name, how)
    empty = tmp_path / "empty.parquet"
    empty.touch()
    assert integrity.damage(empty) == "empty file"


def _garble_checked_part(path: Path) -> None:
    """64 random bytes where the format checks them: a Parquet data page (CRC), a NetCDF header."""
    data = bytearray(path.read_bytes())
    at = {".parquet": 200, ".nc": 0}.get(path.suffix, len(data) // 2)
    data[at : at + 64] = np.random.default_rng(29).bytes(64)
    path.write_bytes(bytes(data))


def test_a_recorded_digest_finds_any_change(tmp_path, monkeypatch):
    """What a job recorded (size, SHA-256) finds what no structure can: a byte in a NetCDF-3
    variable's data, the footer of a small Parquet file, a valid file of another schema."""
    monkeypatch.chdir(tmp_path)
    io.write_netcdf(nc3.Dataset({"v": nc3.Variable(("x", "y"), np.ones((20, 30)))}), "s.nc")
    io.write_parquet(pd.DataFrame({"a": np.arange(30.0)}), "t.parquet", metadata={"k": 1})
    integrity.record_digests(["s.nc", "t.parquet"])
    for name in ("s.nc", "t.parquet"):
        assert integrity.damage(name, integrity.recorded(name)) is None
    garble(Path("s.nc"))  # lands in the data: the header still adds up
    assert integrity.damage("s.nc") is None and integrity.damage("s.nc", integrity.recorded("s.nc"))
    garble(Path("t.parquet"))  # lands in the footer's metadata
    assert integrity.damage("t.parquet", integrity.recorded("t.parquet"))
    foreign(Path("t.parquet"))
    assert integrity.damage("t.parquet") is None and integrity.damage("t.parquet", integrity.recorded("t.parquet"))


@pytest.mark.workflow
def test_damaged_run_files_are_remade_and_a_stray_file_is_left_alone(reference, tmp_path):
    """Per run: a shard with random bytes, estimate.nc cut after its header, aggregate.nc deleted
    (with estimate.nc: the issue's case), random bytes in the Bayes attack table's footer, a run's
    metrics replaced by a valid Parquet of another schema, a deleted local-maxima table; an empty
    stray file beside good shards is not the workflow's."""
    damage = {
        "shard": "garble",
        "estimate": "cut",
        "aggregate": "delete",
        "attack_bayes": "garble",
        "metrics": "foreign",
        "attack_local_maxima": "delete",
    }
    wd = damaged_copy(reference, tmp_path, damage)
    stray = f"{C}/view/batch~0/stray.parquet"
    (wd / stray).touch()
    same_command_converges(reference, wd, damage, keep=(stray,))


@pytest.mark.workflow
def test_damaged_results_are_remade(reference, tmp_path):
    """Results made by different jobs, none feeding another: each must be found and remade."""
    damage = {
        "ingest_counts": "cut",
        "audit_table": "garble",
        "frontier_plot": "delete",
        "plot": "garble",
        "surfaces": "cut",
    }
    same_command_converges(reference, damaged_copy(reference, tmp_path, damage), damage)


@pytest.mark.workflow
def test_a_failed_update_output_is_not_taken_for_up_to_date(reference, tmp_path):
    """A valid Parquet of the wrong schema in place of a run's metrics, with no digest recorded for it
    (e.g. results of an older release, so it cannot be told from the real one): the summary fails
    naming that file and keeps the last summary; the same command fails again (not "Nothing to be
    done") until the file is deleted, then remakes everything byte-identical."""
    wd = damaged_copy(reference, tmp_path, {})
    pd.DataFrame({"foo": [1.0]}).to_parquet(wd / KINDS["metrics"])
    os.remove(wd / integrity.digest_path(KINDS["metrics"]))
    summary = (wd / KINDS["summary"]).read_bytes()
    for _ in range(2):
        proc = run_snakemake(wd, "--cores", "2", check=False)
        console = proc.stdout + proc.stderr
        assert proc.returncode != 0 and "Nothing to be done" not in console, console[-3000:]
        assert [
            line
            for line in console.splitlines()
            if line.startswith("Error in summary: ") and KINDS["metrics"] in line and "Fix: delete" in line
        ], console[-3000:]
        assert (wd / KINDS["summary"]).read_bytes() == summary
    (wd / KINDS["metrics"]).unlink()
    same_command_converges(reference, wd, {})


@pytest.mark.workflow
@pytest.mark.heavy
def test_damaged_dataset_files_are_remade(reference, tmp_path):
    """Every per-dataset kind at once (each is found: its own console line), then every run again."""
    damage = {
        "points": "garble",
        "meta": "cut",
        "bandwidth": "garble",
        "truth": "cut",
        "pooled_kde": "garble",
        "range_workload": "cut",
        "grid": "delete",
        "audit": "cut",
    }
    same_command_converges(reference, damaged_copy(reference, tmp_path, damage), damage)


@pytest.mark.workflow
@pytest.mark.heavy
@pytest.mark.parametrize(
    "kind,how",
    [
        (kind, how)
        for kind in sorted(KINDS)
        for how in sorted(DAMAGE)
        if how != "foreign" or KINDS[kind].endswith(".parquet")
    ],
)
def test_every_kind_every_damage(reference, tmp_path, kind, how):
    same_command_converges(reference, damaged_copy(reference, tmp_path, {kind: how}), {kind: how})
