"""The privacy-utility frontier: Pareto set and level recommendations on hand-made tables."""

import numpy as np
import pandas as pd
import pytest

from locpriv import figures, frontier
from locpriv.domain import Domain


def test_pareto_mask_on_a_hand_made_table():
    # (privacy, utility): b dominates a; c and d are incomparable with b; e ties d exactly
    privacy = np.array([1.0, 2.0, 3.0, 1.5, 3.0, 0.5])
    utility = np.array([0.5, 0.6, 0.2, 0.9, 0.2, 0.95])
    mask = frontier.pareto_mask(privacy, utility)
    #                       a      b     c     d     e     f
    np.testing.assert_array_equal(mask, [False, True, True, True, True, True])
    # lower-is-better utility flips the comparison: f (0.95) and d (0.9) now lose to a (0.5)
    np.testing.assert_array_equal(
        frontier.pareto_mask(privacy, utility, higher_is_better=False), [False, False, True, False, True, False]
    )


TRUST = {
    "geoind": "local",
    "rff": "none",
    "zero": "none",
    "fedkde": "none",
    "dp_heatmap": "distributed",
    "privtree": "central",
    "laplace_ldp": "local",
}


def _summary(rows, typed=True, n=100, dataset="d"):
    """A tidy summary from (mech, eps, rep, util, informed_err[, population_err]); epsilon typed (float, NaN
    where the mechanism has none) as the summary writes it, or as the strings of older summaries."""
    out = []
    for mech, eps, rep, util, err, *population in rows:
        population = population[0] if population else err
        for metric, value in (
            ("spearman", util),
            ("informed_expected_error", err),
            ("informed_guess_error", err),
            ("informed_hit_r", 0.2),
            ("bayes_expected_error", population),
            ("bayes_guess_error", population),
            ("bayes_hit_r", 0.1),
        ):
            epsilon = (float(eps) if eps != "" else np.nan) if typed else eps
            out.append(
                {
                    "dataset": dataset,
                    "mechanism": mech,
                    "rep": rep,
                    "n": n if typed else str(n),
                    "epsilon": epsilon,
                    "h": 0.55 if typed else "0.55",
                    "trust_model": TRUST[mech],
                    "guarantee_relation": "x",
                    "metric": metric,
                    "value": value,
                }
            )
    return pd.DataFrame(out)


ROWS = [
    ("geoind", "1.0", 0, 0.4, 0.9),
    ("geoind", "1.0", 1, 0.6, 1.1),  # mean 0.5 / 1.0
    ("geoind", "5.0", 0, 0.8, 0.3),
    ("zero", "", 0, 0.0, 2.0),
    ("rff", "", 0, 0.3, 0.5),
    ("rff", "", 1, float("nan"), float("nan")),  # refused rep
    ("privtree", "2.0", 0, 0.7, 1.6),
]


@pytest.mark.parametrize("typed", [True, False])
def test_points_name_the_setting_only_and_keep_the_trust_model_apart(typed):
    pts = frontier.points(_summary(ROWS, typed), "spearman")
    assert set(pts["setting"]) == {"epsilon=1", "epsilon=5", "epsilon=2", ""}  # h is the same everywhere: left out
    assert set(pts["label"]) == {"ε=1", "ε=5", "ε=2", ""}
    assert dict(zip(pts["mechanism"], pts["trust_model"], strict=True))["privtree"] == "central"
    row = pts[(pts["mechanism"] == "geoind") & (pts["setting"] == "epsilon=1")].iloc[0]
    assert row["spearman"] == pytest.approx(0.5) and row["expected_error"] == pytest.approx(1.0)
    assert row["reps"] == 2 and row["n"] == 100


def test_a_nullable_integer_parameter_is_written_plainly_and_missing_where_a_mechanism_lacks_it():
    summary = _summary(ROWS)
    summary["B"] = pd.array([8 if m == "rff" else pd.NA for m in summary["mechanism"]], dtype="Int64")
    pts = frontier.points(summary, "spearman")
    assert set(pts.loc[pts["mechanism"] == "rff", "setting"]) == {"B=8"}
    assert set(pts.loc[pts["mechanism"] == "geoind", "setting"]) == {"epsilon=1", "epsilon=5"}
    assert set(pts.loc[pts["mechanism"] == "rff", "label"]) == {"B=8"}


def test_a_parameter_that_varies_is_part_of_the_setting_and_a_word_labels_itself():
    rows = []
    for est, util in (("naive", 0.5), ("deconv", 0.4)):
        part = _summary([("laplace_ldp", "4", 0, util, 1.0)])
        part["estimator"] = est
        rows.append(part)
    pts = frontier.points(pd.concat(rows, ignore_index=True), "spearman")
    assert sorted(pts["setting"]) == ["epsilon=4, estimator=deconv", "epsilon=4, estimator=naive"]
    assert sorted(pts["label"]) == ["ε=4, deconv", "ε=4, naive"]


def test_table_ranks_within_each_trust_model_and_says_when_none_reaches_a_level():
    pts = frontier.points(_summary(ROWS), "spearman")
    levels = {"d": {"a": 0.25, "b": 1.0, "c": 1.5, "d": 5.0}}
    table = frontier.table(pts, "spearman", levels, "informed", {"d": "1"})
    assert list(table.columns) == frontier.TABLE_COLUMNS
    front = table[table["row"] == "pareto"]
    by_trust = {t: list(zip(g["mechanism"], g["setting"], strict=True)) for t, g in front.groupby("trust_model")}
    assert by_trust == {
        "local": [("geoind", "epsilon=5"), ("geoind", "epsilon=1")],
        "none": [("rff", ""), ("zero", "")],
        "central": [("privtree", "epsilon=2")],
    }
    best = table[table["row"] == "best_at_level"].set_index(["trust_model", "level"])
    assert best.loc[("local", 0.25), "setting"] == "epsilon=5"
    assert best.loc[("local", 1.0), "setting"] == "epsilon=1"  # 1.0 >= 1.0 counts
    assert best.loc[("none", 1.0), "mechanism"] == "zero"
    assert best.loc[("central", 1.5), "setting"] == "epsilon=2"
    # nothing local reaches 1.5: an explicit empty row, the reason in its note, no sentence in a data column
    empty = best.loc[("local", 1.5)]
    assert empty["mechanism"] == "" and empty["setting"] == "" and np.isnan(empty["utility"])
    assert np.isnan(empty["expected_error"]) and empty["note"] == frontier.NO_SETTING
    assert (table.loc[table["note"] == "", "mechanism"] != "").all()
    assert (table["adversary"] == "informed").all() and (table["distance_unit"] == "domain units").all()
    assert (table["utility_metric"] == "spearman").all()
    # one row per dataset x N x trust model x level
    assert len(best) == 3 * 4 and best.index.is_unique


def test_the_privacy_axis_is_the_configured_adversary():
    # against the population adversary privtree (aggregate-only) keeps the prior's error 4.0; the informed
    # adversary, which knows everyone else, gets it down to 0.2
    rows = [("geoind", "1.0", 0, 0.5, 1.0, 1.2), ("privtree", "2.0", 0, 0.9, 0.2, 4.0)]
    levels = {"d": {"x": 3.0}}
    informed = frontier.table(frontier.points(_summary(rows), "spearman", "informed"), "spearman", levels)
    population = frontier.table(
        frontier.points(_summary(rows), "spearman", "population"), "spearman", levels, "population"
    )
    central = {
        name: t[(t["trust_model"] == "central") & (t["row"] == "best_at_level")].iloc[0]
        for name, t in (("informed", informed), ("population", population))
    }
    assert central["informed"]["mechanism"] == "" and central["population"]["mechanism"] == "privtree"
    assert central["population"]["expected_error"] == pytest.approx(4.0)


def test_a_summary_without_what_the_frontier_needs_is_refused_with_the_fix():
    summary = _summary(ROWS)
    old = summary[~summary["metric"].str.startswith("informed_")]
    with pytest.raises(ValueError, match=r"no informed_expected_error metric.*frontier\.adversary: population"):
        frontier.points(old, "spearman")
    assert len(frontier.points(old, "spearman", "population"))  # the population adversary still works
    with pytest.raises(ValueError, match="no trust_model column"):
        frontier.points(summary.drop(columns="trust_model"), "spearman")
    with pytest.raises(ValueError, match=r"trust_model is not one of .* geoind"):
        frontier.points(summary.assign(trust_model=summary["trust_model"].replace("local", "")), "spearman")


def test_recommendation_is_one_row_per_level_and_one_column_per_trust_model():
    pts = frontier.points(_summary(ROWS), "spearman")
    levels = {"d": {"10 % of side": 0.25, "50 % of side": 1.5}}
    rec = frontier.recommendation(frontier.table(pts, "spearman", levels, "informed", {"d": "1"}), levels)
    assert list(rec.columns) == ["dataset", "N", "adversary's expected error at least", "local", "central", "none"]
    assert len(rec) == 2
    first = rec.iloc[0]
    assert first["adversary's expected error at least"] == ("0.25 domain units", "10 % of side")
    assert first["local"] == ("geoind epsilon=5", "spearman\u00a00.800 · error\u00a00.3")
    assert rec.iloc[1]["local"] == ("—", "none reaches this level")


def test_levels_are_fractions_of_the_side_for_synthetic_and_distances_for_real_data():
    levels = frontier.dataset_levels(
        {"syn": {"source": "synthetic"}, "geo": {"source": "points", "lonlat_bbox": [116.1, 116.2, 39.9, 40.0]}},
        {"synthetic": [0.1, 0.25], "real": [250, 1000]},
        {"syn": Domain(-3, 3, -3, 3), "geo": Domain(0, 9000, 0, 9000)},
    )
    assert levels == {"syn": {"10 % of side": 0.6, "25 % of side": 1.5}, "geo": {"250 m": 250.0, "1000 m": 1000.0}}
    assert repr(levels["syn"]["10 % of side"]) == "0.6"  # 0.1 * 6 rounded, not 0.6000000000000001


def test_figure_marks_trust_models_labels_settings_and_draws_a_one_point_front():
    from matplotlib.colors import to_hex

    summary = pd.concat([_summary(ROWS), _summary([("geoind", "1.0", 0, 0.7, 0.8)], n=1000)], ignore_index=True)
    pts = frontier.points(summary, "spearman")
    levels = {"d": {"10 % of side": 0.25, "50 % of side": 1.5}}
    fig = frontier.figure(pts, "spearman", levels, {"d": "1"}, dpi=60)
    assert figures.problems(fig) == []
    small, large = sorted((ax for ax in fig.axes), key=lambda ax: ax.get_title())
    assert small.get_title() == "d, N = 100" and large.get_title() == "d, N = 1000"
    # N = 1000 holds one point: its front is a line from the panel's left edge to that point
    (front,) = [line for line in large.lines if line.get_color() == "black"]
    xs, ys = front.get_data()
    assert xs[0] <= large.get_xlim()[0] + 1e-9 and xs[-1] == pytest.approx(0.8) and set(ys) == {0.7}
    # one marker shape per trust model, one colour per mechanism; front points are edged in black
    shapes = {}
    for coll in small.collections:
        shapes.setdefault(coll.get_paths()[0].vertices.round(3).tobytes(), set()).add(to_hex(coll.get_facecolor()[0]))
    assert len(shapes) == 3  # local, none, central
    # every point is labelled with its setting, once; each level line with its legend tag
    labels = sorted(t.get_text() for t in small.texts)
    assert labels == sorted(["L1", "L2", *(lab for lab in pts.loc[pts["n"] == 100, "label"] if lab)])
    assert "[domain units]" in small.get_xlabel() and "informed adversary" in small.get_xlabel()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"L1: 10 % of side", "L2: 50 % of side", "local", "central", "none", "geoind", "privtree"} <= set(legend)
    figures.plt.close(fig)


def test_frontier_writes_the_table_the_recommendation_and_the_figure(tmp_path):
    from locpriv import io

    summary = tmp_path / "metrics.parquet"
    io.write_parquet(_summary(ROWS), summary)
    out = {k: tmp_path / f"{k}" for k in ("csv", "png", "html", "rec")}
    frontier.frontier(
        summary_parquet=str(summary),
        cfg={"utility": "spearman", "adversary": "informed"},
        levels={"d": {"10 % of side": 0.25}},
        units={"d": "m"},
        dpi=50,
        out_csv=str(out["csv"]),
        out_png=str(out["png"]),
        out_html=str(out["html"]),
        out_recommendation=str(out["rec"]),
    )
    table = pd.read_csv(out["csv"], keep_default_na=False)
    assert list(table.columns) == frontier.TABLE_COLUMNS and set(table["distance_unit"]) == {"m"}
    rec = out["rec"].read_text()
    assert rec.startswith("<style>") and "<table" in rec and "geoind epsilon=5" in rec and "<html" not in rec
    assert "<html" in out["html"].read_text()
    summary_bad = tmp_path / "old.parquet"
    io.write_parquet(_summary(ROWS).drop(columns="trust_model"), summary_bad)
    with pytest.raises(ValueError, match=f"^{summary_bad}: no trust_model column"):
        bad = [str(tmp_path / f"bad{k}") for k in range(4)]
        frontier.frontier(
            summary_parquet=str(summary_bad),
            cfg={"utility": "spearman", "adversary": "informed"},
            levels={},
            units={},
            dpi=50,
            out_csv=bad[0],
            out_png=bad[1],
            out_html=bad[2],
            out_recommendation=bad[3],
        )
    assert not any((tmp_path / f"bad{k}").exists() for k in range(4))  # no partial output


@pytest.mark.workflow
@pytest.mark.heavy
def test_workflow_scores_every_mechanism_on_one_workload_and_writes_the_frontier(make_workdir):
    import copy
    import glob

    from conftest import TINY, run_snakemake
    from locpriv import io

    config = copy.deepcopy(TINY)
    config["experiments"]["density"]["mechanisms"] = {
        "fedkde": {"n": [300], "h": 0.55},
        "zero": {"n": [300]},
        "privtree": {"n": [300], "epsilon": [2]},
    }
    config["utility"] = {"range_queries": 20, "hotspot_k": 10}
    wd = make_workdir(config)
    run_snakemake(wd, "-c1", "results/summary/frontier.csv", "results/plots/frontier.png")
    hashes = {
        io.read_parquet_metadata(p)["range_workload_sha256"]
        for p in glob.glob(str(wd / "results/runs/*/*/*/*/metrics.parquet"))
    }
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
