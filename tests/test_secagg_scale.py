"""The secure-aggregation scale sub-query (locpriv.heatmaps.secagg_scale): shard jobs, their measurements, and
the released histogram's independence from how shards are batched into jobs."""

import copy

import numpy as np
import pandas as pd
import pytest

from conftest import TINY, run_snakemake
from locpriv.heatmaps import secagg_scale, study
from locpriv.secagg import graph

SCALE = {"users": 1000, "shard_size": 400, "level": 2, "dropout": 0.1, "shards_per_job": 1}
POPULATION = {"source": "synthetic", "depth": 5, "users": 20_000, "hotspots": 3, "path": None}


def run_stages(tmp_path, scale, seed=3):
    population = tmp_path / "population.nc"
    if not population.exists():
        study.ingest_stage(cfg={"population": POPULATION}, seed=seed, out=str(population))
    folder = tmp_path / f"per{scale['shards_per_job']}"
    deal = folder / "deal.parquet"
    secagg_scale.deal_stage(population_path=str(population), scale=scale, seed=seed, out=str(deal))
    batches = []
    for i, shards in enumerate(secagg_scale.shard_batches(scale)):
        batches.append(str(folder / f"batch~{i}.parquet"))
        secagg_scale.shard_stage(
            deal_path=str(deal),
            shards=shards,
            scale=scale,
            epsilon=1.0,
            secagg={},  # the degree rule's k: a fixed small k fails one shard in a few hundred at 10 % dropout
            seed=seed,
            out=batches[-1],
        )
        (folder / f"batch~{i}.tsv").write_text("s\th:m:s\n1.5\t0:00:01\n")  # what Snakemake's benchmark holds
    secagg_scale.gather_stage(
        paths=batches,
        benchmarks=[b.replace(".parquet", ".tsv") for b in batches],
        out_histogram=str(folder / "histogram.parquet"),
        out_table=str(folder / "shards.csv"),
    )
    return pd.read_parquet(folder / "histogram.parquet"), pd.read_csv(folder / "shards.csv"), deal


def test_scale_shards_sum_securely_and_do_not_depend_on_batching(tmp_path):
    histogram, table, deal = run_stages(tmp_path, SCALE)
    assert list(table.columns) == secagg_scale.TABLE_COLUMNS
    assert table["shard"].tolist() == [0, 1, 2] and table["clients"].tolist() == [400, 400, 200]
    dealt = pd.read_parquet(deal)
    assert table["survivors"].sum() == len(dealt) < SCALE["users"]  # 10 % dropped before step 2
    plan = study.planned_dropout(SCALE["dropout"], SCALE["shard_size"])
    assert table["k"].tolist() == [graph.auto_degree(n, plan, 0.5) for n in (400, 400, 200)]
    assert (table["job_peak_rss_mb"] > 0).all() and (table["benchmark_wall_s"] == 1.5).all()
    assert len(histogram) == 4 ** SCALE["level"]
    # the noisy histogram is the survivors' counts plus noise of sd ~ sqrt(2)/epsilon per entry: far from zero
    exact = np.bincount(dealt["cell"], minlength=16)
    assert np.abs(histogram["noisy"].to_numpy() - exact).max() < 40
    again, table3, _ = run_stages(tmp_path, {**SCALE, "shards_per_job": 3})
    assert again.equals(histogram) and (table3["job_shards"] == 3).all()


@pytest.mark.workflow
def test_scale_sub_query_runs_as_shard_jobs(make_workdir):
    cfg = copy.deepcopy(TINY)
    cfg["studies"] = {
        "heatmaps": {
            "population": POPULATION,
            "methods": ["dp_heatmap"],
            "reps": 1,
            "aggregation": "secure",
            "secagg_scale": {**SCALE, "dropout": 0.0},
        }
    }
    wd = make_workdir(cfg)
    target = "results/studies/heatmaps/secagg_scale/shards.csv"
    run_snakemake(wd, "--cores", "2", target)
    table = pd.read_csv(wd / target)
    assert len(table) == 3 and (table["benchmark_wall_s"] > 0).all()
    assert (wd / "benchmarks/results/studies/heatmaps/secagg_scale/batch~2.tsv").exists()
