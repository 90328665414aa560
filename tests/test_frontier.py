"""The privacy-utility frontier: Pareto set and level recommendations on hand-made tables."""

import numpy as np
import pandas as pd
import pytest

from locpriv import frontier
from locpriv.domain import Domain


def test_pareto_mask_on_a_hand_made_table():
    # (privacy, utility): b dominates a; c and d are incomparable with b; e ties d exactly
    privacy = np.array([1.0, 2.0, 3.0, 1.5, 3.0, 0.5])
    utility = np.array([0.5, 0.6, 0.2, 0.9, 0.2, 0.95])
    mask = frontier.pareto_mask(privacy, utility)
    #                       a      b     c     d     e     f
    np.testing.assert_array_equal(mask, [False, True, True, True, True, True])
    # lower-is-better utility flips the comparison: f (0.95) and d (0.9) now lose to a (0.5)
    np.testing.assert_array_equal(frontier.pareto_mask(privacy, utility, higher_is_better=False),
                                  [False, False, True, False, True, False])


def _summary(rows):
    """Typed tidy summary rows (dataset, mechanism, trust_model, rep, n, epsilon, metric, value) from
    (mech, eps, rep, util, err); eps None: the mechanism has no epsilon (missing)."""
    out = []
    for mech, eps, rep, util, err in rows:
        for metric, value in (("spearman", util), ("bayes_expected_error", err),
                              ("bayes_guess_error", err), ("bayes_hit_r", 0.1)):
            out.append({"dataset": "d", "mechanism": mech, "trust_model": "local", "rep": rep, "n": 100,
                        "epsilon": np.nan if eps is None else eps, "metric": metric, "value": value})
    return pd.DataFrame(out)


def test_table_lists_the_front_and_the_best_mechanism_per_level():
    summary = _summary([("geoind", 1.0, 0, 0.4, 0.9), ("geoind", 1.0, 1, 0.6, 1.1),       # mean 0.5 / 1.0
                        ("geoind", 5.0, 0, 0.8, 0.3),
                        ("zero", None, 0, 0.0, 2.0),
                        ("rff", None, 0, 0.3, 0.5),                                        # dominated by geoind 1.0
                        ("rff", None, 1, float("nan"), float("nan"))])                     # refused rep
    pts = frontier.points(summary, "spearman")
    assert set(pts["setting"]) == {"epsilon=1.0", "epsilon=5.0", ""}
    row = pts[(pts["mechanism"] == "geoind") & (pts["setting"] == "epsilon=1.0")].iloc[0]
    assert row["spearman"] == pytest.approx(0.5) and row["bayes_expected_error"] == pytest.approx(1.0)
    table = frontier.table(pts, "spearman", {"d": [0.25, 1.0, 1.5, 5.0]})
    front = table[table["row"] == "pareto"]
    assert list(zip(front["mechanism"], front["setting"])) == [("geoind", "epsilon=5.0"),
                                                               ("geoind", "epsilon=1.0"), ("zero", "")]
    best = table[table["row"] == "best_at_level"].set_index("level")
    assert best.loc[0.25, "setting"] == "epsilon=5.0"
    assert best.loc[1.0, "setting"] == "epsilon=1.0"          # 1.0 >= 1.0 counts
    assert best.loc[1.5, "mechanism"] == "zero"
    assert best.loc[5.0, "mechanism"] == "" and (table["utility_metric"] == "spearman").all()


def test_levels_are_fractions_of_the_side_for_synthetic_and_distances_for_real_data():
    levels = frontier.dataset_levels(
        {"syn": {"source": "synthetic"}, "geo": {"source": "points"}},
        {"synthetic": [0.1, 0.5], "real": [250, 1000]},
        {"syn": Domain(-3, 3, -2, 2), "geo": Domain(0, 9000, 0, 9000)})
    assert levels == {"syn": [pytest.approx(0.4), pytest.approx(2.0)], "geo": [250.0, 1000.0]}


def test_plot_draws_one_panel_per_dataset_and_n(tmp_path):
    summary = pd.concat([_summary([("geoind", 1.0, 0, 0.5, 1.0), ("zero", None, 0, 0.0, 2.0)]),
                         _summary([("geoind", 1.0, 0, 0.7, 0.8)]).assign(n=1000)])
    pts = frontier.points(summary, "spearman")
    out = tmp_path / "frontier.png"
    frontier.plot(pts, "spearman", {"d": [0.5]}, {"d": "m"}, str(out), dpi=40)
    import matplotlib.image
    img = matplotlib.image.imread(str(out))
    assert img.shape[1] > img.shape[0] and img[..., :3].std() > 0.05   # two panels side by side, not blank


@pytest.mark.workflow
@pytest.mark.heavy
def test_workflow_scores_every_mechanism_on_one_workload_and_writes_the_frontier(make_workdir):
    import copy
    import glob

    from conftest import TINY, run_snakemake
    from locpriv import io

    config = copy.deepcopy(TINY)
    config["experiments"]["density"]["mechanisms"] = {
        "fedkde": {"n": [300], "h": 0.55}, "zero": {"n": [300]}, "privtree": {"n": [300], "epsilon": [2]}}
    config["utility"] = {"range_queries": 20, "hotspot_k": 10}
    wd = make_workdir(config)
    run_snakemake(wd, "-c1", "results/summary/frontier.csv", "results/plots/frontier.png")
    hashes = {io.read_parquet_metadata(p)["range_workload_sha256"]
              for p in glob.glob(str(wd / "results/runs/*/*/*/*/metrics.parquet"))}
    workload = io.read_parquet_metadata(wd / "results/ingest/gauss9/range-workload.parquet")["workload_sha256"]
    assert hashes == {workload}
    summary = pd.read_parquet(wd / "results/summary/metrics.parquet")
    wide = summary.pivot_table(index="mechanism", columns="metric", values="value")
    for metric in ("range_mre", "hotspot_recall", "bayes_expected_error", "bayes_guess_error", "bayes_hit_r"):
        assert wide[metric].notna().all(), metric
    # privtree is aggregate-only: the adversary keeps its prior, exactly as against the 0-feature answer
    assert wide.loc["privtree", "bayes_expected_error"] == pytest.approx(wide.loc["zero", "bayes_expected_error"])
    assert wide.loc["fedkde", "bayes_expected_error"] < 0.1 * wide.loc["zero", "bayes_expected_error"]
    table = pd.read_csv(wd / "results/summary/frontier.csv")
    assert set(table["row"]) == {"pareto", "best_at_level"}
    assert "fedkde" in set(table.loc[table["row"] == "pareto", "mechanism"])
