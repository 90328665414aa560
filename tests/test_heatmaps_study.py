"""The heatmaps study: config validation, population files, transcript round trip, and the rules."""

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, TINY, assert_figure, run_snakemake
from locpriv.config import ConfigError
from locpriv.errors import InputError
from locpriv.heatmaps import study
from locpriv.heatmaps.prefix_tree import PrefixTree

GEOLIFE = ROOT.parent / "shared/data/geolife_beijing/geolife_beijing_1min.csv.gz"


@pytest.mark.parametrize(
    "section, key",
    [
        ({"methods": ["dp_heatmap", "oracle"]}, "studies.heatmaps.methods"),
        ({"base": {"dropout": 1.5}}, "studies.heatmaps.base.dropout"),
        ({"sweep": {"calibration": 0.1}}, "studies.heatmaps.sweep.calibration"),
        ({"population": {"source": "npy"}}, "studies.heatmaps.population.path"),
        ({"multi_location": {"path": "x.csv"}}, "studies.heatmaps.multi_location.path"),
        ({"base": {"users": 5}}, "studies.heatmaps.base.users"),
        ({"aggregation": "mpc"}, "studies.heatmaps.aggregation"),
        ({"secagg": {"graph": "star"}}, "studies.heatmaps.secagg.graph"),
        ({"secagg": {"degree": 7}}, "studies.heatmaps.secagg.degree"),
        ({"secagg": {"bits": 64}}, "studies.heatmaps.secagg.bits"),
        ({"secagg": {"threshold": 1.0}}, "studies.heatmaps.secagg.threshold"),
    ],
)
def test_config_errors_name_the_key(section, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        study.validate_config(section)


def test_runs_are_base_for_every_method_plus_one_at_a_time_sweeps():
    cfg = study.validate_config({"sweep": {"users_per_round": [5000], "dropout": [0.1]}, "reps": 1})
    runs = study.runs(cfg)
    assert len(runs) == len(study.METHODS) + 3  # dp_heatmap x 2 sweeps + nonprivate at n = 5000
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
    section = {
        "population": {"source": "synthetic", "depth": 6, "users": 300_000},
        "base": {"users_per_round": 20_000, "shard_size": 2000},
        "sweep": {"dropout": [0.2]},
        "reps": 1,
    }
    if GEOLIFE.exists():
        section["multi_location"] = {
            "path": str(GEOLIFE),
            "lonlat_bbox": [116.15, 116.60, 39.75, 40.10],
            "depth": 4,
            "scale": [10, 1000],
            "bits": [6, 20],
        }
    cfg["studies"] = {"heatmaps": section}
    wd = make_workdir(cfg)
    targets = ["summary.csv", "table1.csv", "plots/sweeps.png", "plots/rounds.png"]
    targets += ["plots/multi_location.png"] if GEOLIFE.exists() else []
    run_snakemake(wd, "--cores", "2", *[f"results/studies/heatmaps/{t}" for t in targets])
    for figure in targets[2:]:
        assert_figure(wd / f"results/studies/heatmaps/{figure}")
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
    # baselines that pick their tree level against the true population promise no epsilon
    assert summary[summary["method"] == "nonprivate"]["epsilon"].isna().all()  # no epsilon: NaN, not the base's
    promised = summary[(summary["metric"] == "guarantee_epsilon") & (summary["dropout"] != 0.2)]
    promised = promised.groupby("method")["value"].first()
    assert promised[["hierarchical", "psd", "count_min"]].isna().all()
    # replace-one (n public), as the DAG records it: 2 eps at eps = 1 where no dropout exceeds the plan
    assert promised["dp_heatmap"] == pytest.approx(2.0) and promised["flat"] == pytest.approx(2.0)
    if GEOLIFE.exists():
        multi = pd.read_parquet(wd / "results/studies/heatmaps/multi_location.parquet").set_index(["scale", "bits"])
        assert multi.loc[(1000.0, 6), "overflow_entries"] > 0 and multi.loc[(10.0, 20), "overflow_entries"] == 0
        # without DP noise, wrap-around is the only error source beyond rounding: it must cost accuracy
        assert multi.loc[(1000.0, 6), "mse_without_noise"] > multi.loc[(1000.0, 20), "mse_without_noise"]


def test_guarantee_names_the_neighbouring_relation():
    g = study.heatmap_guarantee(1.0, 1.25, "secure")
    assert g["epsilon"] == 1.0 and g["achieved_epsilon"] == 1.25 and "Bonawitz" in g["model"]
    assert g["non_private_inputs"] == ""


def test_study_guarantee_is_the_worst_of_planned_and_achieved_under_the_dags_relation():
    # issue 28.7: dropouts beyond the plan (achieved 1.25 > planned 1) used to be recorded as 1, and
    # under add/remove while the DAG's dp_heatmap records replace-one 2 eps for the same mechanism
    from locpriv import mechanisms
    from locpriv.dp import ADD_REMOVE

    g = study.heatmap_guarantee(1.0, 1.25, "population")
    dag = mechanisms.get("dp_heatmap")(epsilon=1.0).guarantee()
    assert g["neighbouring"] == dag.relation and g["other_relation"] == ADD_REMOVE
    assert g["guaranteed_epsilon"] == 2.5 and g["guaranteed_epsilon_add_remove"] == 1.25
    planned = study.heatmap_guarantee(1.0, 1.0, "population")
    assert (
        planned["guaranteed_epsilon"] == dag.epsilon
        and planned["guaranteed_epsilon_add_remove"] == dag.other_relations[ADD_REMOVE]
    )
    leaked = study.heatmap_guarantee(1.0, 1.0, "population", "tree level chosen against the truth")
    assert leaked["guaranteed_epsilon"] is None and leaked["epsilon"] == 1.0  # budget spent, nothing promised


def secure_study(make_workdir, tmp_path, users, shard, secagg=None):
    """The study in secure mode through Snakemake, and the same run summed ideally client by client."""
    base = {"users_per_round": users, "shard_size": shard, "dropout": 0.05}
    cfg = copy.deepcopy(TINY)
    cfg["studies"] = {
        "heatmaps": {
            "population": {"source": "synthetic", "depth": 5, "users": 40_000},
            "base": base,
            "methods": ["dp_heatmap"],
            "reps": 1,
            "aggregation": "secure",
            "secagg": secagg or {},
        }
    }
    wd = make_workdir(cfg)
    run_snakemake(
        wd, "--cores", "2", "results/studies/heatmaps/summary.csv", "results/studies/heatmaps/plots/secagg_cost.png"
    )
    assert_figure(wd / "results/studies/heatmaps/plots/secagg_cost.png")
    run = {**study.validate_config(cfg["studies"]["heatmaps"])["base"], "method": "dp_heatmap", "rep": 0}
    secure = wd / "results/studies/heatmaps/runs" / study.run_dir(run)
    ideal = tmp_path / "ideal"
    ideal.mkdir()
    study.run_stage(
        run=run,
        seed=cfg["seed"],
        population_path=str(wd / "results/studies/heatmaps/population.nc"),
        out_map=str(ideal / "heatmap.nc"),
        out_transcript=str(ideal / "transcript.parquet"),
        out_releases=str(ideal / "releases.parquet"),
        out_protocol=str(ideal / "secagg_transcript.parquet"),
        aggregation="per_client",
        secagg=secagg,
    )
    return secure, ideal


def assert_same_map_and_epsilon(secure, ideal):
    from locpriv import io

    a = io.read_netcdf(str(secure / "heatmap.nc"))["heatmap"].to_numpy()
    b = io.read_netcdf(str(ideal / "heatmap.nc"))["heatmap"].to_numpy()
    assert np.array_equal(a, b)
    assert pd.read_parquet(secure / "releases.parquet").equals(pd.read_parquet(ideal / "releases.parquet"))
    ga = io.read_parquet_metadata(str(secure / "transcript.parquet"))["guarantee"]
    gb = io.read_parquet_metadata(str(ideal / "transcript.parquet"))["guarantee"]
    assert ga["epsilon"] == gb["epsilon"] and ga["achieved_epsilon"] == gb["achieved_epsilon"]
    log = pd.read_parquet(secure / "secagg_transcript.parquet")
    assert len(log) and pd.read_parquet(ideal / "secagg_transcript.parquet").empty
    # in every round and shard the server got shares of one secret per client, never of both
    held = log[log["step"] == "unmasking"].groupby(["round", "shard", "owner"])["kind"].nunique()
    assert (held == 1).all()


@pytest.mark.workflow
@pytest.mark.parametrize("variant", ["honest_but_curious", "active"])
def test_secure_study_matches_per_client_summation_small(make_workdir, tmp_path, variant):
    """Fast version: shards of 150 clients on an 8-regular graph, either server model."""
    assert_same_map_and_epsilon(*secure_study(make_workdir, tmp_path, 300, 150, {"degree": 8, "variant": variant}))


@pytest.mark.heavy
@pytest.mark.workflow
def test_secure_study_matches_per_client_summation_on_1000_client_shards(make_workdir, tmp_path):
    assert_same_map_and_epsilon(*secure_study(make_workdir, tmp_path, 3000, 1000))


def test_one_job_per_setting_writes_the_bytes_of_the_separate_stages(tmp_path):
    """setting_stage (the heatmaps_run rule: every rep, run then metrics) = the stages one rep at a time."""
    cfg = study.validate_config(
        {
            "population": {"source": "synthetic", "depth": 4, "users": 20_000},
            "base": {"users_per_round": 2000, "shard_size": 500},
            "reps": 2,
        }
    )
    pop = str(tmp_path / "population.nc")
    study.ingest_stage(cfg=cfg, seed=3, out=pop)
    files = ("heatmap", "transcript", "releases", "protocol", "metrics")
    ext = {"heatmap": "nc"}
    for method in ("dp_heatmap", "flat"):
        setting = {"method": method, **cfg["base"]}
        out = {k: [str(tmp_path / f"{method}-{k}-{rep}.{ext.get(k, 'parquet')}") for rep in range(2)] for k in files}
        study.setting_stage(setting=setting, reps=2, seed=3, population_path=pop, out=out)
        for rep in range(2):
            run = {**setting, "rep": rep}
            alone = {k: str(tmp_path / f"alone-{k}.{ext.get(k, 'parquet')}") for k in files}
            study.run_stage(
                run=run,
                seed=3,
                population_path=pop,
                out_map=alone["heatmap"],
                out_transcript=alone["transcript"],
                out_releases=alone["releases"],
                out_protocol=alone["protocol"],
            )
            study.metrics_stage(
                run=run,
                population_path=pop,
                map_path=alone["heatmap"],
                transcript_path=alone["transcript"],
                out=alone["metrics"],
            )
            for k in files:
                assert Path(out[k][rep]).read_bytes() == Path(alone[k]).read_bytes(), (method, rep, k)
    metrics = pd.read_parquet(out["metrics"][1])  # flat, rep 1: the summary's tidy rows, typed identity
    assert list(metrics.columns) == list(study.STUDY.columns)
    assert metrics[["epsilon", "n", "rep", "shard_size"]].drop_duplicates().values.tolist() == [[1.0, 2000, 1, 500]]
