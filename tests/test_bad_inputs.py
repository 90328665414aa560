"""The bad-input corpus: every case stops with one console line naming the problem and the file/key.

One shared working directory holds an earlier good result (the synthetic dataset's
ingest); each case writes its own config.yaml (and data files), runs snakemake and
checks: exit status non-zero, a console line naming the problem and the file or config
key, no Python traceback on the console, no partial output, the earlier result intact.
Config-time cases use --dry-run (the check runs before any job); data cases run the
failing dataset's ingest (or bandwidth) job for real.
"""

import copy
import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, TINY, run_snakemake, write_config

pytestmark = pytest.mark.workflow

BOX = [116.15, 116.60, 39.75, 40.10]
GOOD = "results/ingest/gauss9/meta.json"
BAD_OUT = "results/ingest/bad/meta.json"


def base(mechanisms: dict | None = None, **dataset) -> dict:
    """TINY with a real-data dataset 'bad' (given keys) beside the synthetic one, in its own
    experiment 'real' (every user: n: all, unless ``mechanisms`` says otherwise)."""
    cfg = copy.deepcopy(TINY)
    cfg["datasets"]["bad"] = {"source": "points", "path": "data/p.csv", "lonlat_bbox": BOX, "knn_k": 5, **dataset}
    cfg["experiments"]["real"] = {
        "datasets": ["bad"],
        "reps": 1,
        "mechanisms": mechanisms or {"fedkde": {"n": "all", "h": "knn"}, "zero": {"n": "all"}},
    }
    return cfg


def csv(text: str, name: str = "p.csv"):
    return {name: text.encode()}


def rows(n: int, persons: int = 3, same: bool = False) -> str:
    """n good rows inside BOX (all at one place if ``same``), ``persons`` persons."""
    return "user,lat,lon\n" + "".join(
        f"{i % persons},{39.9 + (not same) * i * 1e-4},{116.3 + (not same) * i * 1e-4}\n" for i in range(n)
    )


def spread(n: int, persons: int = 3) -> str:
    """n rows spread over BOX in four clusters (enough for the range workload), ``persons`` persons."""
    r = np.random.default_rng(n)
    c = r.integers(0, 4, n)
    lat = np.clip(39.8 + 0.07 * c + r.normal(0, 0.02, n), 39.76, 40.09)
    lon = np.clip(116.2 + 0.09 * (c % 2) + 0.1 * (c // 2) + r.normal(0, 0.025, n), 116.16, 116.59)
    return "user,lat,lon\n" + "".join(
        f"{i % persons},{a:.6f},{b:.6f}\n" for i, (a, b) in enumerate(zip(lat, lon, strict=True))
    )


def renamed(name: str) -> dict:
    cfg = copy.deepcopy(TINY)
    cfg["datasets"] = {name: cfg["datasets"]["gauss9"]}
    cfg["experiments"]["density"]["datasets"] = [name]
    return cfg


def parquet_bytes(frame: pd.DataFrame, tmp: Path) -> bytes:
    frame.to_parquet(tmp)
    return tmp.read_bytes()


def truncated_gz() -> bytes:
    return gzip.compress(rows(2000).encode())[:300]


def with_mech(mechs: dict, **top) -> dict:
    cfg = copy.deepcopy(TINY)
    cfg["experiments"]["density"]["mechanisms"] = mechs
    cfg.update(top)
    return cfg


def synthetic(**changes) -> dict:
    cfg = copy.deepcopy(TINY)
    cfg["datasets"]["gauss9"].update(changes)
    return cfg


def top(**changes) -> dict:
    cfg = copy.deepcopy(TINY)
    for key, value in changes.items():
        if value is None:
            cfg.pop(key)
        else:
            cfg[key] = value
    return cfg


# (id, config or None for raw YAML text, data files, mode, words the error line must hold)
# mode: "dry" = config-time (--dry-run); "ingest"/"bandwidth" = that job of dataset 'bad' runs.
CASES = [
    # --- data read at run time -------------------------------------------------------------
    ("empty-file", base(), {"p.csv": b""}, "ingest", ["data/p.csv", "empty (0 bytes)"]),
    ("header-only", base(), csv("user,lat,lon\n"), "ingest", ["data/p.csv", "no data rows"]),
    ("no-header-no-data", base(), csv("\n\n"), "ingest", ["data/p.csv", "no header row"]),
    (
        "parquet-without-lonlat",
        base(path="data/p.parquet"),
        "parquet-xy",
        "ingest",
        ["data/p.parquet", "'lon'", "column missing"],
    ),
    (
        "corrupt-parquet",
        base(path="data/p.parquet"),
        {"p.parquet": b"PAR1 not really parquet"},
        "ingest",
        ["data/p.parquet", "cannot be parsed"],
    ),
    (
        "latin-1-bytes",
        base(),
        {"p.csv": "user,lat,lon\nJosé,39.9,116.3\n".encode("latin-1")},
        "ingest",
        ["data/p.csv", "not UTF-8"],
    ),
    (
        "lat-lon-swapped",
        base(),
        csv("user,lat,lon\n" + "".join(f"1,{116.3 + i * 1e-3},39.9\n" for i in range(20))),
        "ingest",
        ["data/p.csv", "swapped"],
    ),
    ("all-outside-box", base(), csv("user,lat,lon\n1,10,10\n2,11,11\n"), "ingest", ["data/p.csv", "outside the box"]),
    (
        "truncated-csv-gz",
        base(path="data/p.csv.gz"),
        {"p.csv.gz": truncated_gz()},
        "ingest",
        ["data/p.csv.gz", "truncated or corrupt"],
    ),
    (
        "not-gzip-csv-gz",
        base(path="data/p.csv.gz"),
        csv(rows(20), "p.csv.gz"),
        "ingest",
        ["data/p.csv.gz", "truncated or corrupt"],
    ),
    (
        "missing-user-column",
        base(user_column="person"),
        csv(rows(20)),
        "ingest",
        ["data/p.csv", "'person'", "user column missing"],
    ),
    ("wrong-lon-column", base(lon_column="long"), csv(rows(20)), "ingest", ["data/p.csv", "'long'", "column missing"]),
    (
        "xy-data-without-x",
        base(lonlat_bbox=None, bbox=[0, 1, 0, 1]),
        csv("east,north\n0.5,0.5\n"),
        "ingest",
        ["data/p.csv", "'x'", "column missing"],
    ),
    (
        "nan-text-inf-rows",
        base(),
        csv(rows(40) + "1,,116.3\n1,abc,116.3\n1,inf,116.3\n1,95,116.3\n"),
        "ingest",
        [
            "data/p.csv",
            "max_dropped_fraction",
            "missing_coordinate 1",
            "non_numeric_coordinate 1",
            "infinite_coordinate 1",
            "invalid_lonlat 1",
        ],
    ),
    (
        "too-many-outside",
        base(),
        csv(rows(20) + "1,10,10\n"),
        "ingest",
        ["data/p.csv", "outside_bbox 1", "max_dropped_fraction"],
    ),
    ("no-numeric-rows", base(), csv("user,lat,lon\n1,a,b\n2,c,d\n"), "ingest", ["data/p.csv", "none of the 2 rows"]),
    (
        "knn-k-above-points",
        base(knn_k=50),
        csv(rows(10)),
        "bandwidth",
        ["datasets.bad.knn_k", "has 10 points", "at most 9", "Fix"],
    ),
    # --- issue 29: data too small for the config, ids, bandwidth, files ---------------------------
    (
        "n-above-users",
        base({"zero": {"n": [10, 5000]}}),
        csv(rows(20)),
        "ingest",
        ["experiments.real.mechanisms.zero.n", "5000", "has 20", "data/p.csv", "allowed"],
    ),
    (
        "n-all-and-5000",
        base({"zero": {"n": ["all", 5000]}}),
        csv(rows(20)),
        "ingest",
        ["experiments.real.mechanisms.zero.n", "5000", "data/p.csv"],
    ),
    ("one-point-file", base(), csv(rows(1)), "ingest", ["data/p.csv", "only 1 usable row", "Fix"]),
    (
        "person-cap-leaves-too-few",
        base({"zero": {"n": 10}}, user_column="user", max_points_per_person=1),
        csv(rows(30)),
        "ingest",
        ["experiments.real.mechanisms.zero.n", "has 3", "max_points_per_person"],
    ),
    (
        "empty-user-ids",
        base(user_column="user"),
        csv(rows(30).replace("\n0,", "\n,")),
        "ingest",
        ["data/p.csv", "missing_user_id 10", "max_dropped_fraction"],
    ),
    (
        "identical-points-zero-bandwidth",
        base(),
        csv(rows(30, same=True)),
        "bandwidth",
        ["results/ingest/bad/points.parquet", "knn_k", "identical", "Fix"],
    ),
    (
        "binary-file",
        base(),
        {"p.csv": b"PK\x03\x04" + bytes(range(256)) * 8},
        "ingest",
        ["data/p.csv", "not a text CSV", "ZIP", "Fix"],
    ),
    (
        "nul-bytes",
        base(),
        {"p.csv": b"user,lat,lon\n1,39.9,116.3\n\x00\x01\x02"},
        "ingest",
        ["data/p.csv", "not a text CSV", "binary"],
    ),
    (
        "duplicated-column",
        base(),
        csv(
            rows(20)
            .replace("user,lat,lon\n", "user,lat,lon,lat\n")
            .replace("\n1,", ",39.95\n1,")
            .replace("\n2,", ",39.95\n2,")
            .replace("\n0,", ",39.95\n0,")
        ),
        "ingest",
        ["data/p.csv", "'lat'", "appears 2 times", "Fix"],
    ),
    (
        "too-few-points-for-the-workload",
        base(),
        csv(rows(30)),
        "workload",
        ["points.parquet", "utility.range_queries", "Fix"],
    ),
    # --- configuration, checked before any job -------------------------------------------------
    ("missing-file", base(path="data/nope.csv"), {}, "dry", ["datasets.bad.path", "does not exist"]),
    ("directory-as-path", base(path="data"), csv(rows(5)), "dry", ["datasets.bad.path", "is a directory"]),
    (
        "known-file-other-bytes",
        base(path="data/housing.csv"),
        csv(rows(5), "housing.csv"),
        "dry",
        ["datasets.bad.path", "not the expected data", "get it from"],
    ),
    (
        "real-file-missing-study",
        dict(
            copy.deepcopy(TINY),
            studies={
                "sldp": {
                    "classify": {
                        "path": "data/housing.csv",
                        "lonlat_bbox": [-124.48, -114.13, 32.53, 42.01],
                        "epsilon": [1.0],
                    }
                }
            },
        ),
        {},
        "dry",
        ["studies.sldp.classify.path", "get it from"],
    ),
    (
        "geoind-epsilon-inf",
        with_mech({"geoind": {"n": 300, "h": 0.55, "epsilon": float("inf")}}),
        {},
        "dry",
        ["geoind.epsilon", "inf"],
    ),
    (
        "geoind-epsilon-nan",
        with_mech({"geoind": {"n": 300, "h": 0.55, "epsilon": float("nan")}}),
        {},
        "dry",
        ["geoind.epsilon"],
    ),
    ("epsilon-negative", with_mech({"geoind": {"n": 300, "h": 0.55, "epsilon": -1}}), {}, "dry", ["geoind.epsilon"]),
    ("epsilon-text", with_mech({"geoind": {"n": 300, "h": 0.55, "epsilon": "high"}}), {}, "dry", ["geoind.epsilon"]),
    ("inverted-bbox", synthetic(bbox=[3, -3, -3, 3]), {}, "dry", ["datasets.gauss9.bbox", "inverted"]),
    (
        "inverted-lonlat-bbox",
        base(lonlat_bbox=[116.6, 116.15, 39.75, 40.1]),
        csv(rows(5)),
        "dry",
        ["datasets.bad.lonlat_bbox", "inverted"],
    ),
    (
        "lonlat-bbox-not-degrees",
        base(lonlat_bbox=[116.15, 116.6, 39.75, 95]),
        csv(rows(5)),
        "dry",
        ["datasets.bad.lonlat_bbox", "not a lon/lat box"],
    ),
    ("bbox-three-numbers", synthetic(bbox=[-3, 3, -3]), {}, "dry", ["datasets.gauss9.bbox"]),
    ("both-boxes", base(bbox=[0, 1, 0, 1]), csv(rows(5)), "dry", ["datasets.bad", "exactly one"]),
    ("no-box", base(lonlat_bbox=None), csv(rows(5)), "dry", ["datasets.bad", "exactly one"]),
    (
        "cap-without-user-column",
        base(max_points_per_person=5),
        csv(rows(5)),
        "dry",
        ["datasets.bad.max_points_per_person", "user_column"],
    ),
    (
        "dropped-fraction-above-1",
        base(max_dropped_fraction=2),
        csv(rows(5)),
        "dry",
        ["datasets.bad.max_dropped_fraction"],
    ),
    (
        "rff-B-above-max-features",
        with_mech({"rff": {"n": 300, "h": 0.55, "B": 60}}),
        {},
        "dry",
        ["rff.B", "max_features"],
    ),
    (
        "rff-B-million",
        with_mech({"rff": {"n": 300, "h": 0.55, "B": 1000000, "max_features": 1000000}}),
        {},
        "dry",
        ["memory_limit_mb", "rff features"],
    ),
    ("huge-grid", top(grid={"P": 10000, "Q": 10000}), {}, "dry", ["memory_limit_mb", "grid 10000x10000"]),
    ("grid-P-1", top(grid={"P": 1, "Q": 20}), {}, "dry", ["grid.P"]),
    (
        "grid-2-by-200000",
        top(grid={"P": 2, "Q": 200000}),
        {},
        "dry",
        ["config key 'grid'", "2 x 200000", "100,000 times longer than wide", "grid: {P: 632, Q: 633}"],
    ),
    ("seed-negative", top(seed=-1), {}, "dry", ["'seed'"]),
    ("users-per-shard-0", top(users_per_shard=0), {}, "dry", ["users_per_shard"]),
    ("attack-ratio-below-1", top(attack={"users": 30, "ratio": 0.5}), {}, "dry", ["attack.ratio"]),
    ("missing-grid", top(grid=None), {}, "dry", ["'grid'", "required"]),
    ("unknown-top-key", top(gird={"P": 3}), {}, "dry", ["gird"]),
    ("unknown-mechanism", with_mech({"fedkd": {"n": 300}}), {}, "dry", ["mechanisms.fedkd"]),
    ("n-zero", with_mech({"zero": {"n": 0}}), {}, "dry", ["zero.n"]),
    ("n-text", with_mech({"zero": {"n": "many"}}), {}, "dry", ["zero.n"]),
    ("unknown-source", synthetic(source="csv"), {}, "dry", ["datasets.gauss9.source"]),
    ("unknown-pattern", synthetic(pattern="spiral"), {}, "dry", ["datasets.gauss9.pattern"]),
    ("knn-k-zero", synthetic(knn_k=0), {}, "dry", ["datasets.gauss9.knn_k"]),
    (
        "unknown-dataset-in-experiment",
        top(experiments={"density": {"datasets": ["nope"], "mechanisms": {"zero": {"n": 300}}}}),
        {},
        "dry",
        ["experiments.density.datasets", "nope"],
    ),
    # --- issue 29: names, numbers and boxes checked before any job -----------------------------------
    ("dataset-name-unicode", renamed("données"), {}, "dry", ["datasets.données", "file paths"]),
    ("dataset-name-slash", renamed("a/b"), {}, "dry", ["datasets.a/b", "file paths"]),
    (
        "epsilon-1e300",
        with_mech({"geoind": {"n": 300, "h": 0.55, "epsilon": 1e300}}),
        {},
        "dry",
        ["geoind.epsilon", "at most 700"],
    ),
    (
        "laplace-epsilon-1e-300",
        with_mech({"laplace_ldp": {"n": 300, "h": 0.55, "epsilon": 1e-300}}),
        {},
        "dry",
        ["experiments.density.mechanisms.laplace_ldp.epsilon", "1e-300", "at least 1e-06"],
    ),
    (
        "laplace-epsilon-1e300",
        with_mech({"laplace_ldp": {"n": 300, "h": 0.55, "epsilon": 1e300}}),
        {},
        "dry",
        ["laplace_ldp.epsilon", "at most 700"],
    ),
    ("seed-2-to-the-70", top(seed=2**70), {}, "dry", ["'seed'", "9223372036854775807"]),
    (
        "n-above-synthetic-users",
        with_mech({"zero": {"n": 5000}}),
        {},
        "dry",
        ["experiments.density.mechanisms.zero.n", "gauss9", "has 600"],
    ),
    (
        "whole-world-box",
        base(lonlat_bbox=[-180, 180, -85, 85]),
        csv(rows(5)),
        "dry",
        ["datasets.bad.lonlat_bbox", "distorts distances", "max_projection_distortion"],
    ),
    (
        "yaml-syntax-error",
        None,
        "seed: 1\ngrid: {P: 24, Q: [20\nattack: {users: 3}\n",
        "dry",
        ["config.yaml", "line 3, column", "YAML"],
    ),
    ("yaml-tab-indent", None, "seed: 1\ngrid:\n\tP: 24\n", "dry", ["config.yaml", "line 3, column 1", "YAML"]),
]


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One working directory with an earlier good result: the synthetic dataset's ingest."""
    wd = tmp_path_factory.mktemp("bad-inputs")
    write_config(wd, TINY)
    run_snakemake(wd, "--cores", "2", GOOD)
    return wd


def snapshot(wd: Path) -> dict:
    # the privacy ledger is charged before any job, so a failing case's releases stay in it (locpriv.ledger)
    return {
        str(p.relative_to(wd)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in (wd / "results").rglob("*")
        if p.is_file() and "ledger" not in p.relative_to(wd).parts
    }


@pytest.mark.parametrize("name,cfg,files,mode,words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line_and_loses_nothing(shared, name, cfg, files, mode, words):
    wd = shared
    data = wd / "data"
    shutil.rmtree(wd / "results/ingest/bad", ignore_errors=True)  # a later stage's case ingested 'bad'
    if data.exists():
        for p in data.iterdir():
            p.unlink()
    data.mkdir(exist_ok=True)
    if files == "parquet-xy":
        files = {"p.parquet": parquet_bytes(pd.DataFrame({"x": [0.5], "y": [0.5]}), wd / "tmp.parquet")}
    if cfg is None:
        (wd / "config.yaml").write_text(files)
    else:
        cfg = copy.deepcopy(cfg)
        for spec in cfg.get("datasets", {}).values():
            for key in [k for k, v in spec.items() if v is None]:
                del spec[key]
        write_config(wd, cfg)
        for fname, content in files.items():
            (data / fname).write_bytes(content)
    before = snapshot(wd)
    target = {
        "dry": [],
        "ingest": [BAD_OUT],
        "bandwidth": ["results/ingest/bad/bandwidth.json"],
        "workload": ["results/ingest/bad/range-workload.parquet"],
    }[mode]
    proc = run_snakemake(wd, "--cores", "1", *(["--dry-run"] if mode == "dry" else []), *target, check=False)
    console = proc.stdout + proc.stderr
    try:
        assert proc.returncode != 0
        assert "Traceback" not in console
        # nor the lines locating the error in the Snakefile (a --dry-run printed them: issue 40)
        assert not re.search(r'^\s*File ".*", line \d+|Error in file ".*", line \d+', console, re.M)
        lines = [line for line in console.splitlines() if all(w in line for w in words)]
        assert len(lines) == 1, f"{len(lines)} console lines hold all of {words} (issue 40: once, not twice)"
        if os.environ.get("LOCPRIV_CORPUS_TABLE"):  # the closing note's table: case -> line shown
            with open(os.environ["LOCPRIV_CORPUS_TABLE"], "a") as fh:
                fh.write(f"| {name} | {mode} | `{lines[-1].strip()}` |\n")
        # no partial output: no temporary file left, nothing of the failing dataset written
        assert not [p for p in (wd / "results").rglob("*.tmp")]
        assert not (wd / BAD_OUT).exists() or mode in ("bandwidth", "workload")
        assert not (wd / "results/ingest/bad/bandwidth.json").exists()
        # no earlier result lost or rewritten (the ingest of 'bad' may be new in bandwidth cases)
        after = snapshot(wd)
        assert {k: v for k, v in after.items() if k in before} == before
        assert (wd / GOOD).exists()
    except AssertionError:
        print(console[-4000:])
        raise
    finally:
        write_config(wd, TINY)


def test_optional_keys_are_optional(shared):
    """knn_k, the column keys and the drop limit may be left out of a points dataset."""
    cfg = base()
    del cfg["datasets"]["bad"]["knn_k"]
    cfg["experiments"]["density"]["mechanisms"] = {"fedkde": {"n": 10, "h": "knn"}}
    write_config(shared, cfg)
    (shared / "data").mkdir(exist_ok=True)
    (shared / "data/p.csv").write_text(rows(20))
    try:
        proc = run_snakemake(shared, "--cores", "1", "--dry-run", check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "results/ingest/bad/bandwidth.json" in proc.stdout + proc.stderr  # k defaults (500)
    finally:
        write_config(shared, TINY)


def check_config(*paths) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "locpriv.check_config", *map(str, paths)], capture_output=True, text=True
    )


def test_configfile_yaml_error_gets_line_and_column(tmp_path):
    """Snakemake reads --configfile before the workflow starts; the console logger (profiles/default)
    names file, line and column in one line on the first run, as python -m locpriv.check_config does."""
    bad = tmp_path / "mine.yaml"
    bad.write_text("seed: 1\ngrid:\n  P: 24\n\tQ: 20\n")
    wd = tmp_path / "wd"
    wd.mkdir()
    write_config(wd, TINY)
    proc = run_snakemake(wd, "--cores", "1", "--configfile", str(bad), check=False)
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in console
    assert [line for line in console.splitlines() if f"{bad}, line 4, column 1" in line and "YAML" in line]
    checked = check_config(ROOT / "config.yaml", bad)
    assert checked.returncode == 1
    [line] = checked.stderr.splitlines()
    assert f"{bad}, line 4, column 1" in line and "YAML syntax error" in line


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "workflow/configs").glob("*.yaml")))
def test_check_config_accepts_the_shipped_configs(name):
    proc = check_config(ROOT / "workflow/configs" / name)
    assert proc.returncode == 0, proc.stderr


def test_check_config_names_the_key_of_a_merged_bad_value(tmp_path):
    override = tmp_path / "override.yaml"
    override.write_text("grid: {P: 1}\n")
    proc = check_config(ROOT / "config.yaml", override)
    assert proc.returncode == 1 and "config key 'grid.P'" in proc.stderr


def run_case(wd: Path, cfg: dict, files: dict, *targets: str, dry: bool = False) -> tuple[int, str]:
    write_config(wd, cfg)
    (wd / "data").mkdir(exist_ok=True)
    for name, content in files.items():
        (wd / "data" / name).write_text(content)
    proc = run_snakemake(wd, "--cores", "2", *(["--dry-run"] if dry else []), *targets, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_n_above_the_users_of_an_ingested_dataset_stops_before_the_dag(tmp_path):
    """Once the data are ingested the users kept are known: n is checked before any job (no
    InputFunctionException block), and the ingest stays."""
    wd = tmp_path / "wd"
    wd.mkdir()
    code, console = run_case(wd, base(), {"p.csv": rows(20)}, BAD_OUT)
    assert code == 0, console[-2000:]
    meta = (wd / BAD_OUT).read_bytes()
    code, console = run_case(wd, base({"zero": {"n": 50}}), {}, dry=True)
    assert code != 0 and "Traceback" not in console and "InputFunctionException" not in console
    assert [
        line
        for line in console.splitlines()
        if "config key 'experiments.real.mechanisms.zero.n'" in line and "has 20" in line and "data/p.csv" in line
    ]
    assert (wd / BAD_OUT).read_bytes() == meta


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: permissions cannot be tested")
def test_unreadable_file_names_the_permission(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    (wd / "data").mkdir()
    (wd / "data/p.csv").write_text(rows(20))
    (wd / "data/p.csv").chmod(0)
    code, console = run_case(wd, base(), {}, BAD_OUT)
    assert code != 0 and [line for line in console.splitlines() if "data/p.csv" in line and "permission" in line]


def test_unreadable_file_message_names_the_permission(tmp_path, monkeypatch):
    """The same refusal without file permissions (they do not stop root): a PermissionError on
    reading becomes one line naming the file and chmod, not a fix about the encoding."""
    from locpriv.datasets import points
    from locpriv.errors import InputError

    path = tmp_path / "p.csv"
    path.write_text(rows(20))

    def denied(p):
        raise PermissionError(13, "Permission denied", str(p))

    monkeypatch.setattr(points, "_text_file", denied)
    with pytest.raises(InputError) as err:
        points.read_table(path)
    assert str(path) in str(err.value) and "permission denied" in str(err.value) and "chmod" in str(err.value)
    assert "UTF-8" not in str(err.value)


def test_wide_knn_bandwidth_warns_with_the_thresholds(tmp_path):
    """cycle_hire (742 points, knn_k 500 -> a 6.8 km bandwidth, Spearman ~ 1 for every mechanism):
    a clean run, with warnings naming knn_k, the fraction and the config thresholds."""
    wd = tmp_path / "wd"
    wd.mkdir()
    code, console = run_case(wd, base(knn_k=500), {"p.csv": spread(742)}, "results/ingest/bad/bandwidth.json")
    assert code == 0, console[-2000:]
    warnings = [line for line in console.splitlines() if line.startswith("warning: dataset bad")]
    assert any("knn_k 500 is 67% of its 742 points" in w and "max_knn_fraction" in w for w in warnings), warnings
    assert any("of the box's shorter side" in w and "max_bandwidth_fraction" in w for w in warnings), warnings
    # the user who means it raises the thresholds: no warning
    cfg = dict(base(knn_k=500), sanity={"max_knn_fraction": 0.9, "max_bandwidth_fraction": 1.0})
    (wd / "results/ingest/bad/bandwidth.json").unlink()
    code, console = run_case(wd, cfg, {}, "results/ingest/bad/bandwidth.json")
    assert code == 0 and "warning:" not in console


def test_config_time_warnings_wide_h_and_unitless_real_data(tmp_path):
    """A numeric h above a fifth of the box, and a real x/y dataset without a length unit (its
    frontier levels, in metres, cannot apply): the dry run says so and goes on."""
    wd = tmp_path / "wd"
    wd.mkdir()
    cfg = base(
        {"fedkde": {"n": "all", "h": 20000.0}}, lonlat_bbox=None, bbox=[0, 50, 0, 40], x_column="lon", y_column="lat"
    )
    del cfg["datasets"]["bad"]["lonlat_bbox"]
    code, console = run_case(wd, cfg, {"p.csv": rows(20)}, dry=True)
    assert code == 0, console[-2000:]
    assert [
        line
        for line in console.splitlines()
        if line.startswith("warning: dataset bad: bandwidth")
        and "experiments.real.mechanisms.fedkde.h" in line
        and "max_bandwidth_fraction" in line
    ]
    assert [line for line in console.splitlines() if "units to m or km" in line]


@pytest.mark.heavy
def test_persons_are_counted_and_their_epsilon_is_inf_or_zero(tmp_path):
    """Foursquare-like data (few persons, many rows each) and a single person: the ingest says how
    many persons and rows each and that the person-level epsilon is unbounded; the tables say inf
    (laplace_ldp) and 0 (zero) instead of an empty cell."""
    wd = tmp_path / "wd"
    wd.mkdir()
    cfg = base({"zero": {"n": "all"}, "laplace_ldp": {"n": "all", "h": 1000.0, "epsilon": 2.0}}, user_column="user")
    cfg["experiments"] = {"real": cfg["experiments"]["real"]}
    cfg["datasets"] = {"bad": cfg["datasets"]["bad"]}
    code, console = run_case(wd, cfg, {"p.csv": spread(900, persons=4)})
    assert code == 0, console[-3000:]
    assert [
        line
        for line in console.splitlines()
        if "ingest bad: 4 persons, up to 225 rows each" in line
        and "person-level epsilon unbounded: set max_points_per_person" in line
    ]
    runs = pd.read_csv(wd / "results/summary/runs.csv").set_index("mechanism")
    assert runs.loc["zero", "guarantee_epsilon_person"] == 0.0
    assert runs.loc["laplace_ldp", "guarantee_epsilon_person"] == float("inf")
    assert "inf" in (wd / "results/summary/runs.csv").read_text()


def test_single_person_is_counted_on_the_console(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    code, console = run_case(wd, base(user_column="user"), {"p.csv": rows(20, persons=1)}, BAD_OUT)
    assert code == 0, console[-2000:]
    assert [
        line
        for line in console.splitlines()
        if "ingest bad: 1 person, up to 20 rows each" in line and "unbounded" in line
    ]


def test_frontier_levels_are_in_the_dataset_unit():
    """clmfires-like data in km: levels.real (metres) become km, so 250 m is 0.25 and stays reachable;
    data whose unit is not a length get the box fractions (and a warning, above)."""
    from locpriv import frontier
    from locpriv.domain import Domain

    levels = {"synthetic": [0.1, 0.5], "real": [250, 500, 1000]}
    specs = {
        "km": {"source": "points", "bbox": [0, 50, 0, 40], "units": "km"},
        "metres": {"source": "points", "bbox": [0, 5000, 0, 4000], "units": "m"},
        "lonlat": {"source": "points", "lonlat_bbox": BOX},
        "unitless": {"source": "points", "bbox": [0, 50, 0, 40]},
    }
    domains = {
        "km": Domain(0, 50, 0, 40),
        "metres": Domain(0, 5000, 0, 4000),
        "lonlat": Domain(0, 1, 0, 1),
        "unitless": Domain(0, 50, 0, 40),
    }
    got = {name: list(v.values()) for name, v in frontier.dataset_levels(specs, levels, domains).items()}
    assert got["km"] == pytest.approx([0.25, 0.5, 1.0])
    assert got["metres"] == got["lonlat"] == [250.0, 500.0, 1000.0]
    assert got["unitless"] == pytest.approx([4.0, 20.0])  # fractions of the 40-unit shorter side


def test_rows_outside_the_box_get_a_box_to_paste_that_works(tmp_path):
    """Issue 40: a box guessed too small stops the ingest with the data's extent and the boxes keeping
    99 % and 99.9 % of the rows, in the config's key; pasting the first one, the same command ingests."""
    import yaml

    wd = tmp_path / "wd"
    wd.mkdir()
    cfg = base(lonlat_bbox=[116.2, 116.4, 39.8, 40.0])
    code, console = run_case(wd, cfg, {"p.csv": spread(2000)}, BAD_OUT)
    [line] = [line for line in console.splitlines() if "outside_bbox" in line]
    assert code != 0 and "Traceback" not in console
    assert "the rows span lon [" in line and "set datasets.bad.lonlat_bbox to one of these" in line, line
    boxes = re.findall(r"lonlat_bbox: (\[[^\]]*\]) keeps (\d+\.\d+)% of them", line)
    assert [float(share) for _, share in boxes] >= [99.0, 99.9] and len(boxes) == 2, line
    assert "max_dropped_fraction: " in line
    cfg["datasets"]["bad"]["lonlat_bbox"] = yaml.safe_load(boxes[0][0])
    code, console = run_case(wd, cfg, {}, BAD_OUT)
    assert code == 0, console[-2000:]
    assert [line for line in console.splitlines() if line.startswith("ingest bad: 2000 rows read")]


def test_bandwidth_below_a_grid_cell_warns_with_a_value(tmp_path):
    """Issue 40: h = 0.001 (1 mm on data in metres, 24 x 20 cells of ~1.6 km) runs and scores Spearman 0;
    the dry run says so in one line naming the key, the threshold and a value to use, and goes on."""
    wd = tmp_path / "wd"
    wd.mkdir()
    code, console = run_case(wd, base({"fedkde": {"n": "all", "h": 0.001}}), {"p.csv": rows(20)}, dry=True)
    assert code == 0, console[-2000:]
    [line] = [line for line in console.splitlines() if "grid cell" in line and line.startswith("warning:")]
    assert "experiments.real.mechanisms.fedkde.h = 0.001 m" in line and "sanity.min_bandwidth_cells" in line
    assert "set it to at least 1.6e+03 (one cell)" in line, line


def test_temporaries_a_killed_run_left_are_removed_by_the_next(tmp_path):
    """Issue 40: kill -9 mid-write left 0-byte results/plots/.*.png.*.tmp files that survived every later
    run.  Planted as a killed writer leaves them (a file and a folder, names as locpriv.io makes them), the
    next run removes them with one line and touches nothing else."""
    wd = tmp_path / "wd"
    wd.mkdir()
    write_config(wd, TINY)
    run_snakemake(wd, "--cores", "1", GOOD)
    (wd / "results/plots").mkdir(parents=True)
    left = [wd / "results/plots/.frontier.png.k2j9x1.tmp", wd / "results/ingest/gauss9/.points.parquet.a8f3.tmp"]
    for path in left:
        path.write_bytes(b"")
    (wd / "results/runs/.batch~0.q1w2.tmp").mkdir(parents=True)
    (wd / "results/runs/.batch~0.q1w2.tmp/view.parquet").write_bytes(b"PAR1")
    keep = wd / "results/plots/.hidden-by-the-user"  # a dotfile that is not a temporary stays
    keep.write_text("mine")
    before = snapshot(wd)
    console = run_snakemake(wd, "--cores", "1", GOOD).stderr
    assert [line for line in console.splitlines() if "removed 3 temporary file(s) a killed run left" in line]
    assert not [p for p in (wd / "results").rglob("*.tmp")] and keep.read_text() == "mine"
    assert snapshot(wd) == {k: v for k, v in before.items() if ".tmp" not in k}


def test_a_large_grid_starts_with_its_cells_memory_and_time(tmp_path):
    """Issue 40: a large grid ran minutes without a word.  The grid the refusal of 2 x 200,000 suggests
    (as many cells, square) runs, announced with its cells, the largest job's memory and the attacks' time."""
    wd = tmp_path / "wd"
    wd.mkdir()
    code, console = run_case(wd, top(grid={"P": 632, "Q": 633}), {}, dry=True)
    assert code == 0, console[-2000:]
    [line] = [line for line in console.splitlines() if line.startswith("warning: grid 632 x 633 = 400,056 cells")]
    assert "about 288 MB (memory_limit_mb 4000)" in line and "CPU-minutes (6 runs x attack.users 30" in line, line
