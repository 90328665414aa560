"""The whole DAG on a tiny config, run by Snakemake in a temporary directory."""

import copy
import json
import re

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import yaml

from conftest import ROOT, TINY, run_snakemake, write_config

pytestmark = pytest.mark.workflow


def planned_jobs(workdir, snakefile=None) -> dict[str, int]:
    """Rule -> job count that a dry run would execute ({} when nothing is to be done)."""
    out = run_snakemake(workdir, "--dry-run", snakefile=snakefile).stdout
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:")[1]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M))
    counts.pop("total", None)
    return {k: int(v) for k, v in counts.items()}


def test_dry_run_lists_the_dag(make_workdir):
    wd = make_workdir()
    out = run_snakemake(wd, "--dry-run").stdout
    assert "ingest" in out and "encode_grid" in out
    assert not (wd / "results").exists()


def test_full_run_is_byte_identical_across_core_counts(make_workdir):
    one, two = make_workdir(name="one"), make_workdir(name="two")
    run_snakemake(one, "--cores", "1")
    run_snakemake(two, "--cores", "2")
    for f in ["results/summary/metrics.parquet", "results/summary/metrics.csv"]:
        assert (one / f).read_bytes() == (two / f).read_bytes(), f

    table = pd.read_parquet(one / "results/summary/metrics.parquet")
    assert list(table.columns[:3]) == ["dataset", "mechanism", "rep"]
    assert {"h", "n", "metric", "value"} <= set(table.columns)
    wide = table.pivot_table(index=["mechanism", "h", "n"], columns="metric", values="value")
    # 600 users in 200-user shards: every user counted exactly once
    assert wide.loc[("fedkde", "0.55", "600"), "n_users"] == 600
    assert wide.loc[("fedkde", "0.55", "600"), "spearman"] > 0.9
    assert wide.loc[("zero", "", "600"), "spearman"] == 0.0
    # the knn bandwidth was resolved from the data and recorded
    assert 0 < wide.loc[("fedkde", "knn", "600"), "bandwidth"] < 3
    assert (one / "results/plots/metrics_vs_n.png").stat().st_size > 0
    assert (one / "results/plots/surfaces-gauss9.png").stat().st_size > 0

    # incremental re-runs, on the finished directory
    assert planned_jobs(one) == {}

    unrelated = copy.deepcopy(TINY)
    unrelated["datasets"]["unused"] = dict(TINY["datasets"]["gauss9"], n_users=50)
    write_config(one, unrelated)
    assert planned_jobs(one) == {}

    new_value = copy.deepcopy(TINY)
    new_value["experiments"]["density"]["mechanisms"]["fedkde"]["h"] = [0.55, "knn", 0.8]
    write_config(one, new_value)
    jobs = planned_jobs(one)
    # only the new branch (2 values of n x 2 shards... ) and the gathers below it
    assert jobs["estimate"] == 2 and jobs["metrics"] == 2 and jobs["attack"] == 2
    assert jobs["randomize"] == 2 + 3  # n=300: 2 shards, n=600: 3 shards
    assert "ingest" not in jobs and "truth" not in jobs and "bandwidth" not in jobs
    assert jobs["summary"] == 1

    attack_change = copy.deepcopy(TINY)
    attack_change["attack"]["users"] = 20
    write_config(one, attack_change)
    jobs = planned_jobs(one)
    assert "randomize" not in jobs and "estimate" not in jobs
    assert jobs["attack"] == 6 and jobs["metrics"] == 6

    report = run_snakemake(one, "--report", "report.html")
    assert report.returncode == 0 and (one / "report.html").stat().st_size > 10_000


def test_negative_bandwidth_stops_before_any_job(make_workdir):
    bad = copy.deepcopy(TINY)
    bad["experiments"]["density"]["mechanisms"]["fedkde"]["h"] = -0.5
    wd = make_workdir(bad)
    proc = run_snakemake(wd, "--cores", "1", check=False)
    assert proc.returncode != 0
    err = proc.stdout + proc.stderr
    assert "experiments.density.mechanisms.fedkde.h" in err and "allowed: float > 0" in err
    assert not (wd / "results").exists()


def test_unknown_mechanism_lists_the_allowed_ones(make_workdir):
    bad = copy.deepcopy(TINY)
    bad["experiments"]["density"]["mechanisms"]["fedkdee"] = {}
    proc = run_snakemake(make_workdir(bad), "--cores", "1", check=False)
    err = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "unknown mechanism 'fedkdee'" in err and "'fedkde'" in err


def test_missing_dataset_path_names_the_key(make_workdir):
    bad = copy.deepcopy(TINY)
    bad["datasets"]["real"] = {"source": "points", "path": "nowhere.csv", "lonlat_bbox": [0, 1, 0, 1],
                               "knn_k": 5}
    proc = run_snakemake(make_workdir(bad), "--cores", "1", check=False)
    err = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "datasets.real.path" in err and "does not exist" in err


def test_schema_violation_names_the_key(make_workdir):
    bad = copy.deepcopy(TINY)
    bad["grid"]["P"] = 1
    proc = run_snakemake(make_workdir(bad), "--cores", "1", check=False)
    err = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "config key 'grid.P'" in err and "minimum" in err


def test_bad_input_file_fails_cleanly_and_leaves_no_output(make_workdir):
    cfg = copy.deepcopy(TINY)
    cfg["datasets"] = {"real": {"source": "points", "path": "points.csv",
                                "lonlat_bbox": [116.15, 116.60, 39.75, 40.10], "knn_k": 5}}
    cfg["experiments"]["density"]["datasets"] = ["real"]
    wd = make_workdir(cfg)
    (wd / "points.csv").write_text("user,latitude,longitude\n1,39.9,116.3\n")
    proc = run_snakemake(wd, "--cores", "1", check=False)
    err = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "points.csv: field 'lon': column missing" in err and "Fix:" in err
    assert not (wd / "results/ingest/real/points.parquet").exists()
    # nothing of the failing dataset (the audit of a data-free mechanism such as zero may have run)
    assert not list(wd.glob("results/ingest/**/*.parquet")) and not list(wd.glob("results/runs/**/*"))


GEOLIFE = ROOT.parent / "shared/data/geolife_beijing/geolife_beijing_1min.csv.gz"


@pytest.mark.skipif(not GEOLIFE.exists(), reason=f"real data not found at {GEOLIFE}")
def test_geolife_real_data_end_to_end(make_workdir):
    cfg = yaml.safe_load((ROOT / "workflow/configs/geolife.yaml").read_text())
    cfg["datasets"]["geolife"]["path"] = str(GEOLIFE)
    cfg["grid"] = {"P": 40, "Q": 40}
    cfg["attack"]["users"] = 30
    cfg["experiments"]["geolife_density"]["mechanisms"] = {"fedkde": {"n": [5000], "h": "knn"},
                                                          "zero": {"n": [5000]}}
    wd = make_workdir(cfg)
    run_snakemake(wd, "--cores", "2")
    meta = json.loads((wd / "results/ingest/geolife/meta.json").read_text())
    # the shipped file is already cut to the box: every row kept, and the count recorded
    assert meta["rows_read"] == 968_969 and meta["rows_kept"] == 968_969
    assert meta["rows_dropped"] == {} and meta["persons"] == 179 and meta["person_cap"] is None
    assert meta["units"] == "m" and "equirectangular" in meta["projection"]
    bw = json.loads((wd / "results/ingest/geolife/bandwidth.json").read_text())
    assert 50 < bw["h"] < 2000  # metres: a city-scale kNN bandwidth
    table = pd.read_parquet(wd / "results/summary/metrics.parquet")
    wide = table.pivot_table(index="mechanism", columns="metric", values="value")
    # 5000 of ~1e6 points against the complete-data KDE at the same bandwidth
    assert wide.loc["fedkde", "spearman"] > 0.8
    assert wide.loc["fedkde", "privacy_Z"] < wide.loc["zero", "privacy_Z"] / 10


def test_rff_and_geoind_branches_with_a_refused_query(make_workdir):
    cfg = copy.deepcopy(TINY)
    cfg["plots"]["illustrations"] = True   # the RFF paper's Fig. 3/4, drawn only when asked for
    cfg["experiments"]["density"]["mechanisms"] = {
        # h = 0.55 is not (4n+1) h0 for h0 = 0.2: every user refuses (Lemma 4); B > max_features
        # would be refused too, but is a config error (tests/test_bad_inputs.py)
        "rff": {"n": 600, "h": 0.55, "B": [1, 2], "h0": ["h", 0.2]},
        "geoind": {"n": 600, "h": 0.55, "epsilon": 5},
        "laplace_ldp": {"n": 600, "h": 0.55, "epsilon": 8, "estimator": ["naive", "deconv"]},
        "zero": {"n": 600},
    }
    wd = make_workdir(cfg)
    run_snakemake(wd, "--cores", "2")
    table = pd.read_parquet(wd / "results/summary/metrics.parquet")
    wide = table.pivot_table(index=["mechanism", "B", "h0"], columns="metric", values="value", dropna=False)
    answered = wide.loc[("rff", "1", "h")]
    assert answered["answered"] == 1 and answered["spearman_pooled"] > 0.5
    refused = wide.loc[("rff", "2", "0.2")]
    assert refused["answered"] == 0 and np.isnan(refused["spearman"]) and np.isnan(refused["privacy_Z"])
    est = list((wd / "results/runs/gauss9/rff").glob("*B~2*h0~0.2*/rep~0/estimate.nc"))[0]
    with xr.open_dataset(est) as ds:
        assert "Lemma 4" in ds["density"].attrs["refusal"]
    assert wide.loc[("geoind", "", ""), "guarantee_epsilon"] == 5
    ldp = table[(table["mechanism"] == "laplace_ldp") & (table["metric"] == "guarantee_epsilon")]
    assert set(ldp["estimator"]) == {"naive", "deconv"} and (ldp["value"] == 8).all()
    for plot in ("tradeoff", "gain_per_cost", "rff-fig3-convergence", "rff-fig4-user-surfaces"):
        assert (wd / f"results/plots/{plot}.png").stat().st_size > 0


def test_person_level_epsilon_is_reported_beside_the_row_level_one(make_workdir):
    """With a user column and max_points_per_person k, the summary has k x epsilon per person."""
    cfg = copy.deepcopy(TINY)
    cfg["datasets"] = {"real": {"source": "points", "path": "points.csv", "user_column": "person",
                                "max_points_per_person": 3, "lonlat_bbox": [116.15, 116.60, 39.75, 40.10],
                                "knn_k": 5}}
    cfg["experiments"]["density"] = {"datasets": ["real"], "reps": 1, "mechanisms": {
        "geoind": {"n": "all", "h": 500.0, "epsilon": 0.01}, "fedkde": {"n": "all", "h": 500.0}}}
    wd = make_workdir(cfg)
    r = np.random.default_rng(0)
    pd.DataFrame({"person": r.integers(0, 500, 4000), "lat": r.normal(39.9, 0.03, 4000),
                  "lon": r.normal(116.35, 0.04, 4000)}).to_csv(wd / "points.csv", index=False)
    run_snakemake(wd, "--cores", "2", "results/summary/metrics.csv")
    table = pd.read_parquet(wd / "results/summary/metrics.parquet")
    value = table.set_index(["mechanism", "metric"])["value"]
    assert value[("geoind", "guarantee_epsilon")] == pytest.approx(0.01)
    assert value[("geoind", "guarantee_epsilon_person")] == pytest.approx(0.03)   # 3 rows per person at most
    assert np.isnan(value[("fedkde", "guarantee_epsilon_person")])                 # no row-level promise
