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
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, TINY, run_snakemake, write_config

pytestmark = pytest.mark.workflow

BOX = [116.15, 116.60, 39.75, 40.10]
GOOD = "results/ingest/gauss9/meta.json"
BAD_OUT = "results/ingest/bad/meta.json"


def base(**dataset) -> dict:
    """TINY with a real-data dataset 'bad' (given keys) beside the synthetic one."""
    cfg = copy.deepcopy(TINY)
    cfg["datasets"]["bad"] = {"source": "points", "path": "data/p.csv", "lonlat_bbox": BOX, "knn_k": 5,
                              **dataset}
    cfg["experiments"]["density"]["datasets"] = ["gauss9", "bad"]
    return cfg


def csv(text: str, name: str = "p.csv"):
    return {name: text.encode()}


def rows(n: int) -> str:
    """n good rows inside BOX, three persons."""
    return "user,lat,lon\n" + "".join(f"{i % 3},{39.9 + i * 1e-4},{116.3 + i * 1e-4}\n" for i in range(n))


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
    ("parquet-without-lonlat", base(path="data/p.parquet"), "parquet-xy", "ingest",
     ["data/p.parquet", "'lon'", "column missing"]),
    ("corrupt-parquet", base(path="data/p.parquet"), {"p.parquet": b"PAR1 not really parquet"}, "ingest",
     ["data/p.parquet", "cannot be parsed"]),
    ("latin-1-bytes", base(), {"p.csv": "user,lat,lon\nJosé,39.9,116.3\n".encode("latin-1")}, "ingest",
     ["data/p.csv", "not UTF-8"]),
    ("lat-lon-swapped", base(), csv("user,lat,lon\n" + "".join(f"1,{116.3 + i * 1e-3},39.9\n" for i in range(20))),
     "ingest", ["data/p.csv", "swapped"]),
    ("all-outside-box", base(), csv("user,lat,lon\n1,10,10\n2,11,11\n"), "ingest",
     ["data/p.csv", "outside the box"]),
    ("truncated-csv-gz", base(path="data/p.csv.gz"), {"p.csv.gz": truncated_gz()}, "ingest",
     ["data/p.csv.gz", "truncated or corrupt"]),
    ("not-gzip-csv-gz", base(path="data/p.csv.gz"), csv(rows(20), "p.csv.gz"), "ingest",
     ["data/p.csv.gz", "truncated or corrupt"]),
    ("missing-user-column", base(user_column="person"), csv(rows(20)), "ingest",
     ["data/p.csv", "'person'", "user column missing"]),
    ("wrong-lon-column", base(lon_column="long"), csv(rows(20)), "ingest", ["data/p.csv", "'long'", "column missing"]),
    ("xy-data-without-x", base(lonlat_bbox=None, bbox=[0, 1, 0, 1]), csv("east,north\n0.5,0.5\n"), "ingest",
     ["data/p.csv", "'x'", "column missing"]),
    ("nan-text-inf-rows", base(), csv(rows(40) + "1,,116.3\n1,abc,116.3\n1,inf,116.3\n1,95,116.3\n"), "ingest",
     ["data/p.csv", "max_dropped_fraction", "missing_coordinate 1", "non_numeric_coordinate 1",
      "infinite_coordinate 1", "invalid_lonlat 1"]),
    ("too-many-outside", base(), csv(rows(20) + "1,10,10\n"), "ingest",
     ["data/p.csv", "outside_bbox 1", "max_dropped_fraction"]),
    ("no-numeric-rows", base(), csv("user,lat,lon\n1,a,b\n2,c,d\n"), "ingest",
     ["data/p.csv", "none of the 2 rows"]),
    ("knn-k-above-points", base(knn_k=50), csv(rows(10)), "bandwidth", ["knn_k", "10 points"]),
    # --- configuration, checked before any job -------------------------------------------------
    ("missing-file", base(path="data/nope.csv"), {}, "dry", ["datasets.bad.path", "does not exist"]),
    ("directory-as-path", base(path="data"), csv(rows(5)), "dry", ["datasets.bad.path", "is a directory"]),
    ("known-file-other-bytes", base(path="data/housing.csv"), csv(rows(5), "housing.csv"), "dry",
     ["datasets.bad.path", "not the expected data", "get it from"]),
    ("real-file-missing-study", dict(copy.deepcopy(TINY), studies={"sldp": {"classify": {
        "path": "data/housing.csv", "lonlat_bbox": [-124.48, -114.13, 32.53, 42.01], "epsilon": [1.0]}}}), {}, "dry",
     ["studies.sldp.classify.path", "get it from"]),
    ("geoind-epsilon-inf", with_mech({"geoind": {"n": 300, "h": 0.55, "epsilon": float("inf")}}), {}, "dry",
     ["geoind.epsilon", "inf"]),
    ("geoind-epsilon-nan", with_mech({"geoind": {"n": 300, "h": 0.55, "epsilon": float("nan")}}), {}, "dry",
     ["geoind.epsilon"]),
    ("epsilon-negative", with_mech({"geoind": {"n": 300, "h": 0.55, "epsilon": -1}}), {}, "dry",
     ["geoind.epsilon"]),
    ("epsilon-text", with_mech({"geoind": {"n": 300, "h": 0.55, "epsilon": "high"}}), {}, "dry",
     ["geoind.epsilon"]),
    ("inverted-bbox", synthetic(bbox=[3, -3, -3, 3]), {}, "dry", ["datasets.gauss9.bbox", "inverted"]),
    ("inverted-lonlat-bbox", base(lonlat_bbox=[116.6, 116.15, 39.75, 40.1]), csv(rows(5)), "dry",
     ["datasets.bad.lonlat_bbox", "inverted"]),
    ("lonlat-bbox-not-degrees", base(lonlat_bbox=[116.15, 116.6, 39.75, 95]), csv(rows(5)), "dry",
     ["datasets.bad.lonlat_bbox", "not a lon/lat box"]),
    ("bbox-three-numbers", synthetic(bbox=[-3, 3, -3]), {}, "dry", ["datasets.gauss9.bbox"]),
    ("both-boxes", base(bbox=[0, 1, 0, 1]), csv(rows(5)), "dry", ["datasets.bad", "exactly one"]),
    ("no-box", base(lonlat_bbox=None), csv(rows(5)), "dry", ["datasets.bad", "exactly one"]),
    ("cap-without-user-column", base(max_points_per_person=5), csv(rows(5)), "dry",
     ["datasets.bad.max_points_per_person", "user_column"]),
    ("dropped-fraction-above-1", base(max_dropped_fraction=2), csv(rows(5)), "dry",
     ["datasets.bad.max_dropped_fraction"]),
    ("rff-B-above-max-features", with_mech({"rff": {"n": 300, "h": 0.55, "B": 60}}), {}, "dry",
     ["rff.B", "max_features"]),
    ("rff-B-million", with_mech({"rff": {"n": 300, "h": 0.55, "B": 1000000, "max_features": 1000000}}), {},
     "dry", ["memory_limit_mb", "rff features"]),
    ("huge-grid", top(grid={"P": 10000, "Q": 10000}), {}, "dry", ["memory_limit_mb", "grid 10000x10000"]),
    ("grid-P-1", top(grid={"P": 1, "Q": 20}), {}, "dry", ["grid.P"]),
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
    ("unknown-dataset-in-experiment", top(experiments={"density": {"datasets": ["nope"], "mechanisms": {
        "zero": {"n": 300}}}}), {}, "dry", ["experiments.density.datasets", "nope"]),
    ("yaml-syntax-error", None, "seed: 1\ngrid: {P: 24, Q: [20\nattack: {users: 3}\n", "dry",
     ["config.yaml", "line 3, column", "YAML"]),
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
    return {str(p.relative_to(wd)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in (wd / "results").rglob("*") if p.is_file()}


@pytest.mark.parametrize("name,cfg,files,mode,words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line_and_loses_nothing(shared, name, cfg, files, mode, words):
    wd = shared
    data = wd / "data"
    for p in (wd / "results/ingest/bad").glob("*"):
        p.unlink()  # a bandwidth case's ingest of 'bad' is not an earlier result of the next case
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
    target = {"dry": [], "ingest": [BAD_OUT], "bandwidth": ["results/ingest/bad/bandwidth.json"]}[mode]
    proc = run_snakemake(wd, "--cores", "1", *(["--dry-run"] if mode == "dry" else []), *target, check=False)
    console = proc.stdout + proc.stderr
    try:
        assert proc.returncode != 0
        assert "Traceback" not in console
        lines = [line for line in console.splitlines() if all(w in line for w in words)]
        assert lines, f"no console line holds all of {words}"
        if os.environ.get("LOCPRIV_CORPUS_TABLE"):  # the closing note's table: case -> line shown
            with open(os.environ["LOCPRIV_CORPUS_TABLE"], "a") as fh:
                fh.write(f"| {name} | {mode} | `{lines[-1].strip()}` |\n")
        # no partial output: no temporary file left, nothing of the failing dataset written
        assert not [p for p in (wd / "results").rglob("*.tmp")]
        assert not (wd / BAD_OUT).exists() or mode == "bandwidth"
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
    return subprocess.run([sys.executable, "-m", "locpriv.check_config", *map(str, paths)],
                          capture_output=True, text=True)


def test_configfile_yaml_error_gets_line_and_column(tmp_path):
    """Snakemake reads --configfile before the workflow starts and names no position;
    python -m locpriv.check_config (the README's advice) gives file, line and column."""
    bad = tmp_path / "mine.yaml"
    bad.write_text("seed: 1\ngrid:\n  P: 24\n\tQ: 20\n")
    wd = tmp_path / "wd"
    wd.mkdir()
    write_config(wd, TINY)
    proc = run_snakemake(wd, "--dry-run", "--configfile", str(bad), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stdout + proc.stderr
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
