"""The heatmaps study: config validation, population files, transcript round trip, and the rules."""

import copy

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, TINY, run_snakemake
from locpriv.config import ConfigError
from locpriv.errors import InputError
from locpriv.heatmaps import study
from locpriv.heatmaps.prefix_tree import PrefixTree

GEOLIFE = ROOT.parent / "shared/data/geolife_beijing/geolife_beijing_1min.csv.gz"


@pytest.mark.parametrize("section, key", [
    ({"methods": ["dp_heatmap", "oracle"]}, "studies.heatmaps.methods"),
    ({"base": {"dropout": 1.5}}, "studies.heatmaps.base.dropout"),
    ({"sweep": {"calibration": 0.1}}, "studies.heatmaps.sweep.calibration"),
    ({"population": {"source": "npy"}}, "studies.heatmaps.population.path"),
    ({"multi_location": {"path": "x.csv"}}, "studies.heatmaps.multi_location.path"),
    ({"base": {"users": 5}}, "studies.heatmaps.base.users"),
])
def test_config_errors_name_the_key(section, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        study.validate_config(section)


def test_runs_are_base_for_every_method_plus_one_at_a_time_sweeps():
    cfg = study.validate_config({"sweep": {"users_per_round": [5000], "dropout": [0.1]}, "reps": 1})
    runs = study.runs(cfg)
    assert len(runs) == len(study.METHODS) + 3        # dp_heatmap x 2 sweeps + nonprivate at n = 5000
    assert len({study.run_dir(r) for r in runs}) == len(runs)
    swept = [r for r in runs if r["dropout"] == 0.1]
    assert [r["method"] for r in swept] == ["dp_heatmap"] and swept[0]["users_per_round"] == 100_000


def test_bad_population_files_are_named(tmp_path):
    path = tmp_path / "pop.npy"
    np.save(path, np.ones((6, 6)))
    with pytest.raises(InputError, match=r"pop.npy: field 'shape'"):
        study.load_population(str(path))
    np.save(path, np.full((4, 4), 0.5))
    with pytest.raises(InputError, match=r"pop.npy: field 'values'"):
        study.load_population(str(path))
    np.save(path, np.arange(16).reshape(4, 4))
    assert study.load_population(str(path)).sum() == 120


def test_dropout_plan_has_a_binomial_margin():
    assert study.planned_dropout(0.0, 10_000) == 0.0
    assert study.planned_dropout(0.2, 10_000) == pytest.approx(0.2 + 4 * (0.2 * 0.8 / 10_000) ** 0.5)


def test_tree_is_recovered_from_its_reporting_nodes():
    tree = PrefixTree.from_nodes(4, [0, 1, 1, 1, 2, 2, 2, 3], [0, 0, 1, 3, 4, 5, 6, 17])
    levels, codes = tree.reporting_nodes()
    back = study.tree_from_reporting(4, levels, codes)
    assert (back.levels == tree.levels).all() and (back.codes == tree.codes).all()


@pytest.mark.workflow
def test_heatmaps_study_runs_every_method(make_workdir):
    cfg = copy.deepcopy(TINY)
    section = {"population": {"source": "synthetic", "depth": 6, "users": 300_000},
               "base": {"users_per_round": 20_000, "shard_size": 2000},
               "sweep": {"dropout": [0.2]}, "reps": 1}
    if GEOLIFE.exists():
        section["multi_location"] = {"path": str(GEOLIFE), "lonlat_bbox": [116.15, 116.60, 39.75, 40.10],
                                     "depth": 4, "scale": [10, 1000], "bits": [6, 20]}
    cfg["studies"] = {"heatmaps": section}
    wd = make_workdir(cfg)
    targets = ["summary.csv", "table1.csv", "plots/sweeps.png", "plots/rounds.png"]
    targets += ["plots/multi_location.png"] if GEOLIFE.exists() else []
    run_snakemake(wd, "--cores", "2", *[f"results/studies/heatmaps/{t}" for t in targets])
    table = pd.read_csv(wd / "results/studies/heatmaps/table1.csv", index_col=0)
    assert set(table.index) == set(study.METHODS)
    assert (table.loc[table.index != "nonprivate", "epsilon_spent_mean"] <= 1.0 + 1e-12).all()
    # the non-private sample is the floor every private method sits above
    assert (table["mse_mean"].drop("nonprivate") > table.loc["nonprivate", "mse_mean"]).all()
    assert table.loc["dp_heatmap", "communication_mean"] < table.loc["flat", "communication_mean"]
    # 20 % dropout with noise planned for 20 % + 4 sd: no shard falls short, the guarantee holds in full
    summary = pd.read_csv(wd / "results/studies/heatmaps/summary.csv")
    achieved = summary[(summary["dropout"] == 0.2) & (summary["metric"] == "epsilon_achieved")]["value"]
    assert len(achieved) == 1 and achieved.iloc[0] == pytest.approx(1.0)
    if GEOLIFE.exists():
        multi = pd.read_parquet(wd / "results/studies/heatmaps/multi_location.parquet").set_index(["scale", "bits"])
        assert multi.loc[(1000.0, 6), "overflow_entries"] > 0 and multi.loc[(10.0, 20), "overflow_entries"] == 0
        # without DP noise, wrap-around is the only error source beyond rounding: it must cost accuracy
        assert multi.loc[(1000.0, 6), "mse_without_noise"] > multi.loc[(1000.0, 20), "mse_without_noise"]
