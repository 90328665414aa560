"""Data handling a user can see and control, and the workflow's robustness helpers (no Snakemake run)."""

import copy
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import ROOT, TINY
from locpriv import config as lpconfig
from locpriv import integrity, io, smk
from locpriv.datasets import ingest, persons
from locpriv.datasets.points import projection_error
from locpriv.errors import InputError
from locpriv.stages.prepare import ingest_report

BOX = [116.15, 116.60, 39.75, 40.10]


def spec(path, **extra):
    return {"source": "points", "path": str(path), "lonlat_bbox": BOX, **extra}


def write_rows(path, n_good, bad_lines=(), header="user,lat,lon"):
    lines = [header] + [f"{i % 4},{39.9 + i * 1e-5},{116.3 + i * 1e-5}" for i in range(n_good)]
    path.write_text("\n".join(lines + list(bad_lines)) + "\n")
    return path


def test_dropped_rows_are_counted_by_reason_and_reported(tmp_path):
    f = write_rows(tmp_path / "p.csv", 200, ["1,,116.3", "1,abc,116.3", "1,-inf,116.3", "1,95,116.3", "1,10,10"])
    pts, meta = ingest.real_points("d", spec(f, max_dropped_fraction=0.05), np.random.default_rng(0))
    assert len(pts) == 200 and meta["rows_read"] == 205
    assert meta["rows_dropped"] == {
        "missing_coordinate": 1,
        "non_numeric_coordinate": 1,
        "infinite_coordinate": 1,
        "invalid_lonlat": 1,
        "outside_bbox": 1,
    }
    line = ingest_report("d", meta)[0]
    assert "205 rows read, 200 kept" in line and "invalid_lonlat 1" in line and "outside_bbox 1" in line


def test_too_many_dropped_rows_stop_the_ingest_with_the_counts(tmp_path):
    f = write_rows(tmp_path / "p.csv", 98, ["1,,116.3", "1,10,10"])  # 2 % dropped, default limit 1 %
    with pytest.raises(InputError) as err:
        ingest.real_points("d", spec(f), np.random.default_rng(0))
    msg = str(err.value)
    assert str(f) in msg and "2 of 100 rows" in msg and "missing_coordinate 1" in msg and "max_dropped_fraction" in msg


def test_column_keys_and_a_missing_user_column(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("person,latitude,long\na,39.9,116.3\nb,39.95,116.35\n")
    pts, meta = ingest.real_points(
        "d", spec(f, lon_column="long", lat_column="latitude", user_column="person"), np.random.default_rng(0)
    )
    assert sorted(pts["source_user"]) == ["a", "b"] and meta["persons"] == 2
    with pytest.raises(InputError, match=r"'user'.*user column missing"):
        ingest.real_points(
            "d", spec(f, lon_column="long", lat_column="latitude", user_column="user"), np.random.default_rng(0)
        )
    # without user_column no person is kept (no silent default)
    pts, meta = ingest.real_points("d", spec(f, lon_column="long", lat_column="latitude"), np.random.default_rng(0))
    assert "source_user" not in pts and meta["person_cap"] is None


def test_person_cap_is_recorded_and_applied(tmp_path):
    f = write_rows(tmp_path / "p.csv", 100)  # persons 0..3 with 25 rows each
    pts, meta = ingest.real_points("d", spec(f, user_column="user", max_points_per_person=10), np.random.default_rng(0))
    assert len(pts) == 40 and pts["source_user"].value_counts().max() == 10
    assert meta["persons"] == 4 and meta["person_cap"] == 10 and meta["rows_over_person_cap"] == 60
    assert meta["n_users"] == 40 and "person_cap x the record-level epsilon" in meta["users"]
    again, _ = ingest.real_points("d", spec(f, user_column="user", max_points_per_person=10), np.random.default_rng(0))
    pd.testing.assert_frame_equal(pts, again)  # same seed, same rows


def test_person_budget_split_keeps_one_row_per_person_so_person_epsilon_is_epsilon(tmp_path):
    # issue 28.8: person_budget split -> one seeded row per person per release (person-level eps = eps)
    f = write_rows(tmp_path / "p.csv", 100)  # persons 0..3 with 25 rows each
    pts, meta = ingest.real_points("d", spec(f, user_column="user", person_budget="split"), np.random.default_rng(0))
    assert len(pts) == 4 and (pts["source_user"].value_counts() == 1).all()
    assert meta["person_cap"] == 1 and meta["rows_over_person_cap"] == 96
    assert persons.person_level_epsilon(2.0, meta["person_cap"]) == 2.0
    # group (the default) keeps today's cap x eps
    _, grouped = ingest.real_points(
        "d", spec(f, user_column="user", person_budget="group", max_points_per_person=10), np.random.default_rng(0)
    )
    assert persons.person_level_epsilon(2.0, grouped["person_cap"]) == 20.0


def test_cap_rows_keeps_a_uniform_subset_of_each_person():
    people = np.array(["a"] * 5 + ["b"] * 2 + ["c"])
    kept_a = np.zeros(5)
    trials = 4000
    for seed in range(trials):
        keep = persons.cap_rows(people, 2, np.random.default_rng(seed))
        assert keep[:5].sum() == 2 and keep[5:7].all() and keep[7]
        kept_a += keep[:5]
    # each of a's rows is kept with probability 2/5; binomial sd = sqrt(n p (1-p)) = 31 for n = 4000;
    # 5 sd (alpha ~ 6e-7 per row) still rejects a first-rows-first rule (rate 1 or 0)
    assert np.all(np.abs(kept_a - trials * 0.4) < 5 * np.sqrt(trials * 0.4 * 0.6))


def test_person_level_epsilon_is_cap_times_record_epsilon():
    assert persons.person_level_epsilon(0.5, 20) == 10.0
    assert persons.person_level_epsilon(0.5, None) == float("inf")  # no cap: a person's rows are unbounded
    assert persons.person_level_epsilon(0.0, None) == 0.0  # ... but zero times anything is zero
    assert persons.person_level_epsilon(None, 20) is None
    with pytest.raises(ValueError):
        persons.person_level_epsilon(1.0, 0)


def test_projection_warning_above_one_percent():
    assert projection_error(BOX) < 0.003  # Beijing box: 0.26 %
    california = [-124.35, -114.31, 32.54, 41.95]
    assert projection_error(california) > 0.06
    meta = {
        "rows_read": 1,
        "n_users": 1,
        "rows_dropped": {},
        "projection_max_distance_error": projection_error(california),
        "lonlat_bbox": california,
    }
    lines = ingest_report("ca", meta)
    assert len(lines) == 2 and lines[1].startswith("warning: ingest ca") and "6.6%" in lines[1]
    meta["projection_max_distance_error"] = projection_error(BOX)
    assert len(ingest_report("ca", meta)) == 1


def test_outputs_respect_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        io.write_json({"a": 1}, tmp_path / "x.json")
    finally:
        os.umask(old)
    assert (tmp_path / "x.json").stat().st_mode & 0o777 == 0o640


def test_damaged_outputs_are_found(tmp_path):
    io.write_parquet(pd.DataFrame({"a": [1, 2]}), tmp_path / "t.parquet")
    io.write_netcdf(xr.Dataset({"v": ("x", [1.0, 2.0])}), tmp_path / "g.nc")
    io.write_json({"a": 1}, tmp_path / "m.json")
    for name in ("t.parquet", "g.nc", "m.json"):
        assert integrity.damage(tmp_path / name) is None
    data = (tmp_path / "t.parquet").read_bytes()
    (tmp_path / "t.parquet").write_bytes(data[: len(data) // 2])
    (tmp_path / "g.nc").write_bytes(b"garbage")
    (tmp_path / "m.json").write_text('{"a": ')
    for name in ("t.parquet", "g.nc", "m.json"):
        assert integrity.damage(tmp_path / name), name
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        os.mkdir("results")
        os.replace("t.parquet", "results/t.parquet")
        (tmp_path / "results/other.parquet").write_bytes(b"not ours")  # no output of this config
        lines = smk.remove_damaged(["results/t.parquet"], dict)
    finally:
        os.chdir(cwd)
    assert len(lines) == 1 and "results/t.parquet" in lines[0] and not (tmp_path / "results/t.parquet").exists()
    assert (tmp_path / "results/other.parquet").exists()


def test_failed_script_prints_one_line_and_keeps_the_traceback_in_the_log(tmp_path):
    log = tmp_path / "job.log"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / "lib")!r})
        from types import SimpleNamespace
        from locpriv.errors import InputError
        from locpriv.smk import logged
        snakemake = SimpleNamespace(log=[{str(log)!r}], rule="ingest")
        with logged(snakemake):
            print("working")
            raise InputError("data/p.csv", "lat", "column missing", "rename it")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"Error in ingest: data/p.csv: field 'lat': column missing. Fix: rename it (traceback: {log})"
    ]
    assert "Traceback" in log.read_text() and "working" in log.read_text()
    assert "Error in ingest" in (tmp_path / smk.ERROR_DIGEST).read_text()


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    f = tmp_path / "config.yaml"
    f.write_text("seed: 1\ngrid: {P: 3, Q: [4\nattack: 2\n")
    with pytest.raises(lpconfig.ConfigError, match=r"line 3, column \d+: YAML syntax error"):
        smk.check_yaml(str(f))


def test_stale_locks_of_a_dead_run_are_removed_but_a_live_runs_kept(tmp_path):
    root = tmp_path / ".snakemake"
    (root / "locks").mkdir(parents=True)
    (root / "locpriv-pids").mkdir()
    (root / "locks" / "0.input.lock").write_text("x")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    (root / "locpriv-pids" / dead).touch()
    line, live = smk.claim_workdir(str(root))
    assert "removed 1 lock" in line and not live and not list((root / "locks").iterdir())
    # a live Snakemake process (here: a sleeping python whose command line says snakemake) keeps its locks
    (root / "locks" / "0.input.lock").write_text("x")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "snakemake"])
    try:
        (root / "locpriv-pids" / str(proc.pid)).touch()
        line, live = smk.claim_workdir(str(root))
        assert line is None and live and (root / "locks" / "0.input.lock").exists()
    finally:
        proc.kill()
        proc.wait()


def test_config_time_checks():
    cfg = copy.deepcopy(TINY)
    lpconfig.check_values(cfg)
    assert lpconfig.memory_estimate_mb(cfg)["attack batch x grid"] == pytest.approx(30 * 24 * 20 * 8 * 3 / 1e6)
    big = dict(cfg, grid={"P": 4000, "Q": 4000})  # 30 surfaces x 1.6e7 cells x 24 B = 11.5 GB
    with pytest.raises(lpconfig.ConfigError, match="memory_limit_mb"):
        lpconfig.check_values(big)
    lpconfig.check_values(dict(big, memory_limit_mb=10**6))  # the limit is the user's to raise
    with pytest.raises(lpconfig.ConfigError, match="inverted"):
        lpconfig.check_box([1, 0, 0, 1], "datasets.x.bbox")
    inf = copy.deepcopy(cfg)  # the schema refuses it first; the mechanism's own check says the same
    inf["experiments"]["density"]["mechanisms"] = {"geoind": {"n": 300, "h": 0.5, "epsilon": float("inf")}}
    with pytest.raises(
        lpconfig.ConfigError,
        match=r"mechanisms\.geoind\.epsilon': inf is not allowed; allowed: "
        r"a finite number",
    ):
        lpconfig.expand_runs(inf)
