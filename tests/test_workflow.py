"""The whole DAG on a tiny config, run by Snakemake in a temporary directory."""

import copy
import json
import re

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
import xarray as xr
import yaml

from conftest import ROOT, TINY, assert_figure, copy_results, run_snakemake, write_config

pytestmark = pytest.mark.workflow


def planned_jobs(workdir, snakefile=None) -> dict[str, int]:
    """Rule -> job count that a dry run would execute ({} when nothing is to be done)."""
    out = run_snakemake(workdir, "--dry-run", snakefile=snakefile).stdout
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:")[1]
    counts = {}
    for rule, n in re.findall(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M):
        # a run group's rules are one per rep set (estimate_reps0to2, estimate_rep1): counted by stage
        stage = re.sub(r"^(estimate|attack_metrics)_reps?\d+(to\d+)?$", r"\1", rule)
        counts[stage] = counts.get(stage, 0) + int(n)
    counts.pop("total", None)
    return counts


def test_dry_run_lists_the_dag(make_workdir):
    wd = make_workdir()
    out = run_snakemake(wd, "--dry-run").stdout
    assert "ingest" in out and "encode_grid" in out
    assert not (wd / "results").exists()


def test_a_studies_only_config_needs_no_main_dag_keys(make_workdir):
    """seed and a study section: no grid, attack, users_per_shard or plots, and no main-DAG job."""
    config = {
        "seed": 1,
        "studies": {
            "deconv": {
                "datasets": {"m": {"source": "synthetic", "x": "mixture", "curve": "g1", "n": [100]}},
                "epsilon": [1],
            }
        },
    }
    planned = planned_jobs(make_workdir(config))
    assert (
        {"deconv_run", "deconv_summary", "all"}
        <= set(planned)
        <= {"deconv_run", "deconv_summary", "deconv_plot", "all"}
    )


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The tiny config run to the end twice, on 1 and on 2 cores (shared by the tests below)."""
    one, two = (tmp_path_factory.mktemp(name) for name in ("one", "two"))
    for wd, cores in ((one, "1"), (two, "2")):
        write_config(wd, TINY)
        run_snakemake(wd, "--cores", cores)
    return one, two


@pytest.fixture
def changed_config(finished):
    """Write a changed config into the finished directory; the tiny config is put back after."""
    one = finished[0]
    yield lambda cfg: write_config(one, cfg)
    write_config(one, TINY)


def not_blank(png) -> bool:
    """More than one colour in the image (a failed plot can leave an empty white canvas)."""
    pixels = mpimg.imread(str(png))[..., :3]
    return float(pixels.std()) > 0.01


def test_summary_is_byte_identical_across_core_counts(finished):
    one, two = finished
    for f in ["results/summary/metrics.parquet", "results/summary/metrics.csv"]:
        assert (one / f).read_bytes() == (two / f).read_bytes(), f


def test_summary_holds_every_run_with_its_values(finished):
    table = pd.read_parquet(finished[0] / "results/summary/metrics.parquet")
    assert list(table.columns[:4]) == ["dataset", "mechanism", "trust_model", "rep"]
    assert {"h", "n", "metric", "value"} <= set(table.columns)
    # typed: n is the users' number; h holds the word knn beside numbers, so it is text
    assert (str(table["n"].dtype), str(table["rep"].dtype)) == ("int64", "int64")
    assert dict(zip(table["mechanism"], table["trust_model"], strict=True)) == {"fedkde": "none", "zero": "local"}
    value = table.assign(h=table["h"].fillna("-")).set_index(["mechanism", "h", "n", "metric"])["value"]
    # 600 users in 200-user shards: every user counted exactly once
    assert value[("fedkde", "0.55", 600, "n_users")] == 600
    assert value[("fedkde", "0.55", 600, "spearman")] > 0.9
    assert value[("zero", "-", 600, "spearman")] == 0.0
    # the knn bandwidth was resolved from the data and recorded
    assert 0 < value[("fedkde", "knn", 600, "bandwidth")] < 3


def test_figures_are_drawn(finished):
    for name in ("metrics_vs_n", "tradeoff", "surfaces-gauss9", "frontier"):
        assert not_blank(finished[0] / f"results/plots/{name}.png"), name


def test_ingest_counts_table(finished):
    counts = pd.read_csv(finished[0] / "results/summary/ingest.csv")
    assert counts.to_dict("records") == [
        {"dataset": "gauss9", "source": "synthetic:gauss9", "count": "read", "rows": 600},
        {"dataset": "gauss9", "source": "synthetic:gauss9", "count": "kept (users)", "rows": 600},
    ]


def test_every_rule_records_a_benchmark(finished):
    """Snakemake's own wall time and memory per job, under benchmarks/<results_dir>/."""
    tsv = sorted((finished[0] / "benchmarks/results").rglob("*.tsv"))
    assert {"summary.tsv", "frontier.tsv", "estimate.tsv", "attack_metrics.tsv"} <= {p.name for p in tsv}
    bench = pd.read_csv(tsv[0], sep="\t")
    assert {"s", "max_rss"} <= set(bench.columns) and (bench["s"] > 0).all()


def test_grid_size_is_in_the_paths_of_the_surfaces_on_it(finished):
    """The grid, the truth and the pooled KDEs on it: a config with another grid never overwrites them."""
    wd = finished[0]
    assert (wd / "results/encode/gauss9/grid~24x20/grid.nc").is_file()
    assert (wd / "results/ingest/gauss9/grid~24x20/truth.nc").is_file()
    assert list((wd / "results/ingest/gauss9/grid~24x20/pooled-kde").glob("n~*_h~*.nc"))
    assert not list((wd / "results/ingest/gauss9").glob("*.nc"))


def test_finished_run_has_nothing_to_do(finished):
    assert planned_jobs(finished[0]) == {}


def test_unused_dataset_reruns_nothing(finished, changed_config):
    unrelated = copy.deepcopy(TINY)
    unrelated["datasets"]["unused"] = dict(TINY["datasets"]["gauss9"], n_users=50)
    changed_config(unrelated)
    assert planned_jobs(finished[0]) == {}


def test_new_parameter_value_runs_only_its_branch(finished, changed_config):
    new_value = copy.deepcopy(TINY)
    new_value["experiments"]["density"]["mechanisms"]["fedkde"]["h"] = [0.55, "knn", 0.8]
    changed_config(new_value)
    jobs = planned_jobs(finished[0])
    assert jobs["estimate"] == 2 and jobs["attack_metrics"] == 2
    assert "ingest" not in jobs and "truth" not in jobs and "bandwidth" not in jobs
    assert jobs["summary"] == 1


def test_attack_change_reruns_the_attacks_only(finished, changed_config):
    attack_change = copy.deepcopy(TINY)
    attack_change["attack"]["users"] = 20
    changed_config(attack_change)
    jobs = planned_jobs(finished[0])
    assert "randomize" not in jobs and "estimate" not in jobs
    assert jobs["attack_metrics"] == 6


def test_run_groups_give_the_bytes_of_one_job_per_run(make_workdir):
    """Every rep of a setting in one estimate and one attack_metrics job, or (shards_per_job 1, so each
    run needs two randomize batches) one job per run plus a randomize job for its second batch: the
    same per-run files, byte for byte, and the same summary."""
    cfg = copy.deepcopy(TINY)
    cfg["experiments"]["density"].update(reps=2, mechanisms={"fedkde": {"n": 300, "h": 0.55}, "zero": {"n": 300}})
    grouped, separate = make_workdir(cfg, "grouped"), make_workdir({**cfg, "shards_per_job": 1}, "separate")
    planned = planned_jobs(grouped), planned_jobs(separate)
    # before the ingest checkpoint the randomize jobs of the second batches are not yet known
    assert (planned[0]["estimate"], planned[0]["attack_metrics"], planned[1]["estimate"]) == (2, 2, 4)
    for wd in (grouped, separate):
        run_snakemake(wd, "--cores", "2")
    assert len(list((separate / "benchmarks").rglob("randomize-1.tsv"))) == 4
    names = ["aggregate.nc", "estimate.nc", "attack-local_maxima.parquet", "attack-bayes.parquet", "metrics.parquet"]
    runs = sorted((grouped / "results/runs").glob("*/*/*/rep~*"))
    assert len(runs) == 4
    for run in runs:
        other = separate / run.relative_to(grouped)
        for name in names:
            assert (run / name).read_bytes() == (other / name).read_bytes(), run / name
        for shard in (0, 1):  # the second shard: batch 0 in a group, batch 1 in its own randomize job
            assert (run / f"view/batch~0/shard~{shard}.parquet").read_bytes() == (
                other / f"view/batch~{shard}/shard~{shard}.parquet"
            ).read_bytes()
    summary = "results/summary/metrics.parquet"
    assert (grouped / summary).read_bytes() == (separate / summary).read_bytes()


def test_report_of_a_finished_run(finished):
    report = run_snakemake(finished[0], "--report", "report.html")
    assert report.returncode == 0 and (finished[0] / "report.html").stat().st_size > 10_000


def test_report_before_any_run_and_after_another_config(finished, tmp_path, make_workdir):
    """The README's report command works whatever the directory holds (the outputs that exist)."""
    fresh = make_workdir()
    assert run_snakemake(fresh, "--report", "report.html").returncode == 0
    other = copy.deepcopy(TINY)
    other["datasets"] = {
        "octagon8": {"source": "synthetic", "pattern": "octagon8", "n_users": 600, "bbox": [-6, 6, -6, 6], "knn_k": 50}
    }
    other["experiments"]["density"]["datasets"] = ["octagon8"]
    wd = tmp_path / "other"
    copy_results(finished[0], wd)
    write_config(wd, other)
    proc = run_snakemake(wd, "--report", "report.html", check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


def forget_digest(wd, path: str) -> None:
    """Drop the size and SHA-256 the job recorded for ``path`` (as for a file of an older release):
    a wrong file there is then read, not found changed (locpriv.integrity)."""
    from locpriv import integrity

    (wd / integrity.digest_path(path)).unlink()


def test_failed_replot_keeps_the_previous_figures(finished, tmp_path):
    """A plot job that raises (here: a readable summary without the metric columns) restores
    the figures of the last good run and prints one line naming the failed rule."""
    wd = tmp_path / "wd"
    copy_results(finished[0], wd)
    figures = {p: p.read_bytes() for p in (wd / "results/plots").glob("*.png")}
    pd.DataFrame({"dataset": ["gauss9"]}).to_parquet(wd / "results/summary/metrics.parquet")
    forget_digest(wd, "results/summary/metrics.parquet")  # else it is found changed, and simply remade
    proc = run_snakemake(wd, "--cores", "1", "--keep-going", check=False)
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(r"^Error in (plot_summary|frontier): .*\(traceback: logs/results/", console, re.M), console[-3000:]
    assert "Traceback" not in console
    assert {p: p.read_bytes() for p in figures} == figures  # every figure back, byte for byte


def test_failed_summary_keeps_the_previous_summary(finished, tmp_path):
    """The summary job fails on a readable but wrong per-run table: the last summary stays."""
    wd = tmp_path / "wd"
    copy_results(finished[0], wd)
    tables = {p: p.read_bytes() for p in (wd / "results/summary").iterdir()}
    run = next((wd / "results/runs").rglob("metrics.parquet"))
    pd.DataFrame({"unexpected": [1.0]}).to_parquet(run)
    forget_digest(wd, str(run.relative_to(wd)))
    proc = run_snakemake(wd, "--cores", "1", "--keep-going", check=False)
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(r"^Error in summary: ", console, re.M), console[-3000:]
    assert {p: p.read_bytes() for p in tables} == tables


def test_figures_of_another_config_are_removed(finished, tmp_path):
    """Two configs in one results_dir: the second run's figures are its own only."""
    wd = tmp_path / "wd"
    copy_results(finished[0], wd)
    stale = wd / "results/plots/surfaces-octagon8.png"
    stale.write_bytes((wd / "results/plots/tradeoff.png").read_bytes())
    (wd / "results/plots/tradeoff.png").unlink()  # one job to run, so the run ends in success
    proc = run_snakemake(wd, "--cores", "1")
    assert not stale.exists() and "surfaces-octagon8.png" in proc.stderr
    assert (wd / "results/plots/tradeoff.png").exists()


def test_results_dir_moves_outputs_logs_and_benchmarks(make_workdir):
    cfg = dict(copy.deepcopy(TINY), results_dir="out/small")
    out = run_snakemake(make_workdir(cfg), "--dry-run").stdout
    paths = set(re.findall(r"(?:output|log|benchmark): (.*)", out))
    files = {f.strip() for line in paths for f in line.split(",")}
    assert files and all(f.startswith(("out/small/", "logs/out/small/", "benchmarks/out/small/")) for f in files), (
        sorted(files)[:5]
    )
    assert "out/small/encode/gauss9/grid~24x20/grid.nc" in files


@pytest.mark.parametrize("value", ["/tmp/x", "../x", "a/../../b", "."])
def test_results_dir_outside_the_working_directory_is_refused(make_workdir, value):
    proc = run_snakemake(make_workdir(dict(copy.deepcopy(TINY), results_dir=value)), "--dry-run", check=False)
    assert proc.returncode != 0 and "config key 'results_dir'" in proc.stdout + proc.stderr


def test_negative_bandwidth_stops_before_any_job(make_workdir):
    bad = copy.deepcopy(TINY)
    bad["experiments"]["density"]["mechanisms"]["fedkde"]["h"] = -0.5
    wd = make_workdir(bad)
    proc = run_snakemake(wd, "--cores", "1", check=False)
    assert proc.returncode != 0
    err = proc.stdout + proc.stderr
    assert "experiments.density.mechanisms.fedkde.h" in err and "allowed: (number > 0.0)" in err
    assert not (wd / "results").exists()


def test_unknown_mechanism_lists_the_allowed_ones(make_workdir):
    bad = copy.deepcopy(TINY)
    bad["experiments"]["density"]["mechanisms"]["fedkdee"] = {}
    proc = run_snakemake(make_workdir(bad), "--cores", "1", check=False)
    err = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "unknown mechanism 'fedkdee'" in err and "'fedkde'" in err


def test_missing_dataset_path_names_the_key(make_workdir):
    bad = copy.deepcopy(TINY)
    bad["datasets"]["real"] = {"source": "points", "path": "nowhere.csv", "lonlat_bbox": [0, 1, 0, 1], "knn_k": 5}
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
    cfg["datasets"] = {
        "real": {"source": "points", "path": "points.csv", "lonlat_bbox": [116.15, 116.60, 39.75, 40.10], "knn_k": 5}
    }
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
    cfg["experiments"]["geolife_density"]["mechanisms"] = {"fedkde": {"n": [5000], "h": "knn"}, "zero": {"n": [5000]}}
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
    cfg["plots"]["illustrations"] = True  # the RFF paper's Fig. 3/4, drawn only when asked for
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
    rff = table[table["mechanism"] == "rff"].set_index(["B", "h0", "metric"])["value"]
    answered = rff.loc[(1, "h")]
    assert answered["answered"] == 1 and answered["spearman_pooled"] > 0.5
    refused = rff.loc[(2, "0.2")]  # h0 holds the word 'h' beside numbers: a text column
    assert refused["answered"] == 0 and np.isnan(refused["spearman"]) and np.isnan(refused["privacy_Z"])
    est = next(iter((wd / "results/runs/gauss9/rff").glob("*B~2*h0~0.2*/rep~0/estimate.nc")))
    with xr.open_dataset(est) as ds:
        assert "Lemma 4" in ds["density"].attrs["refusal"]
    geoind = table[table["mechanism"] == "geoind"].set_index("metric")["value"]
    assert geoind["guarantee_epsilon"] == 5 and str(table["epsilon"].dtype) == "float64"
    ldp = table[(table["mechanism"] == "laplace_ldp") & (table["metric"] == "guarantee_epsilon")]
    assert set(ldp["estimator"]) == {"naive", "deconv"} and (ldp["value"] == 8).all()
    for plot in ("tradeoff", "gain_per_cost", "rff-fig3-convergence", "rff-fig4-user-surfaces"):
        assert_figure(wd / f"results/plots/{plot}.png")


def test_person_level_epsilon_is_reported_beside_the_row_level_one(make_workdir):
    """With a user column and max_points_per_person k, the summary has k x epsilon per person."""
    cfg = copy.deepcopy(TINY)
    cfg["datasets"] = {
        "real": {
            "source": "points",
            "path": "points.csv",
            "user_column": "person",
            "max_points_per_person": 3,
            "lonlat_bbox": [116.15, 116.60, 39.75, 40.10],
            "knn_k": 5,
        }
    }
    cfg["experiments"]["density"] = {
        "datasets": ["real"],
        "reps": 1,
        "mechanisms": {"geoind": {"n": "all", "h": 500.0, "epsilon": 0.01}, "fedkde": {"n": "all", "h": 500.0}},
    }
    wd = make_workdir(cfg)
    r = np.random.default_rng(0)
    pd.DataFrame(
        {"person": r.integers(0, 500, 4000), "lat": r.normal(39.9, 0.03, 4000), "lon": r.normal(116.35, 0.04, 4000)}
    ).to_csv(wd / "points.csv", index=False)
    run_snakemake(wd, "--cores", "2", "results/summary/metrics.csv")
    table = pd.read_parquet(wd / "results/summary/metrics.parquet")
    value = table.set_index(["mechanism", "metric"])["value"]
    assert value[("geoind", "guarantee_epsilon")] == pytest.approx(0.01)
    assert value[("geoind", "guarantee_epsilon_person")] == pytest.approx(0.03)  # 3 rows per person at most
    assert np.isnan(value[("fedkde", "guarantee_epsilon_person")])  # no row-level promise
