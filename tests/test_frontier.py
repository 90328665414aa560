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
    "zero": "local",
    "fedkde": "none",
    "dp_heatmap": "distributed",
    "privtree": "central",
    "laplace_ldp": "local",
}
NO_INFO = 4.0  # the no-information adversary's error in every hand-made summary


def _summary(rows, typed=True, n=100, dataset="d"):
    """A tidy summary from (mech, eps, rep, util, informed_err[, extra]): ``util`` a spearman or a dict of
    utilities; ``extra`` a population error or a dict of metrics (``informed_exposed``, ``guarantee_epsilon``
    ...).  epsilon typed (float, NaN where the mechanism has none) as the summary writes it, or as the
    strings of older summaries; the guarantee is epsilon itself (no proof where there is none)."""
    out = []
    for mech, eps, rep, util, err, *extra in rows:
        extra = extra[0] if extra else {}
        extra = extra if isinstance(extra, dict) else {"bayes_expected_error": extra}
        utilities = util if isinstance(util, dict) else {"spearman": util}
        values = {
            **utilities,
            "informed_expected_error": err,
            "informed_guess_error": err,
            "informed_hit_r": 0.2,
            "informed_p10_error": err,
            "informed_exposed": 0.1,
            "bayes_expected_error": err,
            "bayes_guess_error": err,
            "bayes_hit_r": 0.1,
            "bayes_p10_error": err,
            "bayes_exposed": 0.1,
            "prior_expected_error": NO_INFO,
            "prior_p10_error": NO_INFO,
            "guarantee_epsilon": float(eps) if eps != "" else np.nan,
            **extra,
        }
        if "bayes_expected_error" in extra:
            values["bayes_p10_error"] = extra["bayes_expected_error"]
        for metric, value in values.items():
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
                    "guarantee_words": f"ε = {eps} (x)" if eps != "" else "no proof: none",
                    "metric": metric,
                    "value": value,
                }
            )
    return pd.DataFrame(out)


def _reps(mech, eps, utils, errs, extra=None):
    """Rows of one setting's releases: utils and errs one per rep (utils: spearman or dicts)."""
    return [(mech, eps, rep, u, e, extra or {}) for rep, (u, e) in enumerate(zip(utils, errs, strict=True))]


# three releases per setting; geoind eps=1 and eps=5 on the local front, privtree central, rff and fedkde
# without proof, zero the floor
ROWS = [
    *_reps("geoind", "1.0", [0.45, 0.5, 0.55], [0.95, 1.0, 1.05]),  # mean 0.5 / 1.0
    *_reps("geoind", "5.0", [0.78, 0.8, 0.82], [0.28, 0.3, 0.32]),
    *_reps("zero", "0", [0.0, 0.0, 0.0], [NO_INFO] * 3),
    *_reps("rff", "", [0.3, 0.32, float("nan")], [0.5, 0.52, float("nan")]),  # refused rep 2
    *_reps("privtree", "2.0", [0.68, 0.7, 0.72], [1.58, 1.6, 1.62]),
]
CFG = {"privacy": "p10", "levels": frontier.DEFAULTS["levels"]}


def _table(rows, utility="spearman", levels=None, privacy="p10", adversary="informed", **kw):
    rel = frontier.releases(_summary(rows, **kw), adversary)
    pts = frontier.points(rel)
    levels = levels or frontier.levels_of(pts, {**CFG, "privacy": privacy}, {})
    return frontier.table(pts, rel, utility, levels, privacy, adversary, {"d": "1"}), pts, levels


@pytest.mark.parametrize("typed", [True, False])
def test_points_name_the_setting_only_and_keep_the_trust_model_apart(typed):
    pts = frontier.points(frontier.releases(_summary(ROWS, typed)))
    assert set(pts["setting"]) == {"epsilon=1", "epsilon=5", "epsilon=2", "epsilon=0", ""}  # h: the same everywhere
    assert set(pts["label"]) == {"ε=1", "ε=5", "ε=2", "ε=0", ""}
    assert dict(zip(pts["mechanism"], pts["trust_model"], strict=True))["privtree"] == "central"
    row = pts[(pts["mechanism"] == "geoind") & (pts["setting"] == "epsilon=1")].iloc[0]
    assert row["spearman"] == pytest.approx(0.5) and row["expected_error"] == pytest.approx(1.0)
    assert row["reps"] == 3 and row["n"] == 100
    # the 95 % t-interval over the three releases: mean +- t(0.975, 2) s / sqrt(3)
    half = 4.302652729911275 * 0.05 / np.sqrt(3)
    assert (row["spearman_ci_low"], row["spearman_ci_high"]) == pytest.approx((0.5 - half, 0.5 + half))
    rff = pts[pts["mechanism"] == "rff"].iloc[0]
    assert rff["reps"] == 2 and rff["spearman"] == pytest.approx(0.31)  # the refused release is left out


def test_a_nullable_integer_parameter_is_written_plainly_and_missing_where_a_mechanism_lacks_it():
    summary = _summary(ROWS)
    summary["B"] = pd.array([8 if m == "rff" else pd.NA for m in summary["mechanism"]], dtype="Int64")
    pts = frontier.points(frontier.releases(summary))
    assert set(pts.loc[pts["mechanism"] == "rff", "setting"]) == {"B=8"}
    assert set(pts.loc[pts["mechanism"] == "geoind", "setting"]) == {"epsilon=1", "epsilon=5"}
    assert set(pts.loc[pts["mechanism"] == "rff", "label"]) == {"B=8"}


def test_a_parameter_that_varies_is_part_of_the_setting_and_a_word_labels_itself():
    rows = []
    for est, util in (("naive", 0.5), ("deconv", 0.4)):
        part = _summary([("laplace_ldp", "4", 0, util, 1.0)])
        part["estimator"] = est
        rows.append(part)
    pts = frontier.points(frontier.releases(pd.concat(rows, ignore_index=True)))
    assert sorted(pts["setting"]) == ["epsilon=4, estimator=deconv", "epsilon=4, estimator=naive"]
    assert sorted(pts["label"]) == ["ε=4, deconv", "ε=4, naive"]


def test_levels_are_fractions_of_the_no_information_error_by_default_and_distances_as_an_option():
    pts = frontier.points(frontier.releases(_summary(ROWS)))
    assert frontier.levels_of(pts, CFG, {}) == {
        ("d", 100): {"50 % of no-information": 2.0, "75 % of no-information": 3.0, "90 % of no-information": 3.6}
    }
    absolute = {"d": {"10 % of side": 0.6}}
    levels = {**CFG["levels"], "of": "absolute"}
    assert frontier.levels_of(pts, {**CFG, "levels": levels}, absolute) == {("d", 100): {"10 % of side": 0.6}}
    exposed = frontier.levels_of(pts, {**CFG, "privacy": "exposed"}, absolute)
    assert exposed[("d", 100)] == {
        "at most 50 % exposed": 0.5,
        "at most 25 % exposed": 0.25,
        "at most 10 % exposed": 0.1,
    }
    old = _summary(ROWS)
    old = old[~old["metric"].str.startswith("prior_")]
    with pytest.raises(ValueError, match=r"no prior_p10_error metric .* frontier\.levels\.of: absolute"):
        frontier.levels_of(frontier.points(frontier.releases(old)), CFG, {})


def test_table_ranks_within_each_trust_model_and_says_when_none_reaches_a_level():
    levels = {("d", 100): {"a": 0.25, "b": 0.85, "c": 1.5, "d": 5.0}}
    table, _, _ = _table(ROWS, levels=levels)
    assert list(table.columns) == frontier.TABLE_COLUMNS
    front = table[table["row"] == "pareto"]
    by_trust = {t: list(zip(g["mechanism"], g["setting"], strict=True)) for t, g in front.groupby("trust_model")}
    assert by_trust == {
        "local": [("geoind", "epsilon=5"), ("geoind", "epsilon=1"), ("zero", "epsilon=0")],
        "none": [("rff", "")],
        "central": [("privtree", "epsilon=2")],
    }
    best = table[table["row"] == "best_at_level"].set_index(["trust_model", "level"])
    assert best.loc[("local", 0.25), "setting"] == "epsilon=5"
    assert best.loc[("local", 0.85), "setting"] == "epsilon=1"  # the lower end of its interval: 0.876
    assert best.loc[("central", 1.5), "setting"] == "epsilon=2"
    # zero reaches every level but is the floor itself: never recommended; nothing else local reaches 1.5
    empty = best.loc[("local", 1.5)]
    assert empty["mechanism"] == "" and empty["setting"] == "" and np.isnan(empty["utility"])
    assert np.isnan(empty["expected_error"]) and empty["note"] == frontier.BELOW_FLOOR
    assert best.loc[("none", 1.5), "note"] == frontier.NO_SETTING
    assert (table.loc[table["note"] == "", "mechanism"] != "").all()
    assert (table["adversary"] == "informed").all() and (table["distance_unit"] == "domain units").all()
    assert (table["utility_metric"] == "spearman").all() and (table["privacy_metric"] == "p10").all()
    # one row per dataset x N x trust model x level
    assert len(best) == 3 * 4 and best.index.is_unique
    assert (table["reps"] >= 2).all()  # every row, an empty answer too, says on how many releases it rests


def test_a_setting_that_qualifies_in_one_release_of_three_does_not_qualify():
    # dp_heatmap eps=2 as the issue measured it: 1.629 / 1.453 / 1.485 against a level of 1.5 -- a mean of
    # 1.522 reaches it, the lower end of the interval (1.29) does not; a steady setting does (power check)
    rows = [
        *_reps("dp_heatmap", "2", [0.9, 0.9, 0.9], [1.629, 1.453, 1.485]),
        *_reps("dp_heatmap", "1", [0.5, 0.52, 0.51], [1.62, 1.6, 1.61]),
        *_reps("zero", "0", [0.0] * 3, [NO_INFO] * 3),
    ]
    table, _, _ = _table(rows, levels={("d", 100): {"x": 1.5}})
    best = table[(table["row"] == "best_at_level") & (table["trust_model"] == "distributed")].iloc[0]
    assert best["setting"] == "epsilon=1"
    assert best["privacy_ci_low"] >= 1.5
    assert "epsilon=2" not in set(table.loc[table["row"] != "pareto", "setting"])
    high = table[(table["setting"] == "epsilon=2") & (table["row"] == "pareto")].iloc[0]
    assert high["privacy"] == pytest.approx(1.522333, abs=1e-6) and high["privacy_ci_low"] < 1.5


def test_a_spearman_winner_worse_than_the_constant_map_on_ise_is_not_recommended_for_ise():
    # laplace_ldp eps=4 as the issue measured it: best rank correlation, but an ISE above the constant map's
    rows = [
        *_reps(
            "laplace_ldp",
            "4",
            [{"spearman": s, "ise": i} for s, i in ((0.9, 0.056), (0.91, 0.0561), (0.89, 0.0562))],
            [3.0] * 3,
        ),
        *_reps(
            "laplace_ldp",
            "16",
            [{"spearman": s, "ise": i} for s, i in ((0.6, 0.03), (0.62, 0.031), (0.58, 0.029))],
            [3.0] * 3,
        ),
        *_reps("zero", "0", [{"spearman": 0.0, "ise": 0.0521}] * 3, [NO_INFO] * 3),
    ]
    levels = {("d", 100): {"x": 1.0}}
    by_task = {u: _table(rows, u, levels=levels)[0] for u in ("spearman", "ise")}
    pick = {u: t[(t["row"] == "best_at_level") & (t["trust_model"] == "local")].iloc[0] for u, t in by_task.items()}
    assert pick["spearman"]["setting"] == "epsilon=4" and pick["ise"]["setting"] == "epsilon=16"
    ise = by_task["ise"]
    assert "epsilon=4" not in set(ise.loc[ise["row"].str.endswith("at_level"), "setting"])
    floor = ise[ise["row"] == "pareto"].set_index("setting")["above_floor"]
    assert floor["epsilon=16"] == True and floor.get("epsilon=4", False) == False  # noqa: E712 (pd.NA-aware)
    # without a constant map there is no floor: the column is empty and eps=4... is worse than eps=16 on ISE anyway
    no_floor, _, _ = _table([r for r in rows if r[0] != "zero"], "ise", levels=levels)
    assert no_floor["above_floor"].isna().all()


def test_qualifying_settings_not_significantly_worse_are_listed_beside_the_best():
    rows = [
        *_reps("geoind", "1", [0.80, 0.70, 0.75], [3.0] * 3),  # mean 0.75: the best
        *_reps("geoind", "2", [0.74, 0.69, 0.72], [3.0] * 3),  # mean 0.717, its differences 0.06/0.01/0.03: p = 0.07
        *_reps("geoind", "4", [0.30, 0.31, 0.29], [3.0] * 3),  # clearly worse
        *_reps("zero", "0", [0.0] * 3, [NO_INFO] * 3),
    ]
    table, _, _ = _table(rows, levels={("d", 100): {"x": 1.0}})
    rows_at = table[table["row"].str.endswith("at_level")].set_index("row")
    assert rows_at.loc["best_at_level", "setting"] == "epsilon=1"
    also = table[table["row"] == "not_worse_at_level"]
    assert list(also["setting"]) == ["epsilon=2"]
    assert also["p_worse_than_best"].iloc[0] > frontier.ALPHA
    rec = frontier.recommendation(table)
    assert "also: geoind epsilon=2" in rec.iloc[0]["local"][1]


def test_a_good_mean_with_most_users_exposed_shows_it_and_fails_the_tail_default():
    # rff B=2 as the issue measured it: a mean error of 0.7 of the prior's, 64.5 % of the users exposed
    exposed = {"informed_exposed": 0.645, "informed_p10_error": 0.3}
    rows = [
        *_reps("rff", "", [0.9, 0.91, 0.92], [2.8, 2.8, 2.8], exposed),
        *_reps("zero", "0", [0.0] * 3, [NO_INFO] * 3),
    ]
    mean, _, _ = _table(rows, privacy="mean", levels={("d", 100): {"x": 2.0}})
    row = mean[(mean["row"] == "best_at_level") & (mean["trust_model"] == "none")].iloc[0]
    assert row["mechanism"] == "rff" and row["exposed"] == pytest.approx(0.645)
    assert "exposed\u00a064\u00a0%" in frontier.recommendation(mean).iloc[0]["none"][1]
    tail, _, _ = _table(rows, privacy="p10", levels={("d", 100): {"x": 2.0}})
    assert tail[(tail["row"] == "best_at_level") & (tail["trust_model"] == "none")].iloc[0]["mechanism"] == ""
    share, _, _ = _table(rows, privacy="exposed", levels={("d", 100): {"x": 0.5}})
    assert share[(share["row"] == "best_at_level") & (share["trust_model"] == "none")].iloc[0]["mechanism"] == ""


def test_a_setting_without_proof_never_appears_under_a_trust_model():
    # laplace_ldp with h: knn proves nothing: the best utility, but listed under none only, as "no proof"
    rows = [
        *_reps("laplace_ldp", "", [0.95, 0.96, 0.94], [3.0] * 3),
        *_reps("laplace_ldp", "4", [0.6, 0.61, 0.59], [3.0] * 3),
        *_reps("zero", "0", [0.0] * 3, [NO_INFO] * 3),
    ]
    table, pts, _ = _table(rows, levels={("d", 100): {"x": 1.0}})
    unproven = pts[pts["epsilon_guaranteed"].isna()]
    assert set(unproven["trust_model"]) == {"none"} and set(unproven["declared_trust_model"]) == {"local"}
    assert unproven["guarantee"].str.startswith("no proof").all()
    recommended = table[table["row"].str.endswith("at_level") & (table["mechanism"] != "")]
    assert recommended.loc[recommended["trust_model"] != "none", "epsilon_guaranteed"].notna().all()
    local = recommended[recommended["trust_model"] == "local"].iloc[0]
    assert local["setting"] == "epsilon=4" and local["guarantee"] == "ε = 4 (x)"
    assert recommended[recommended["trust_model"] == "none"].iloc[0]["guarantee"].startswith("no proof")
    # on person data the person-level epsilon decides: unbounded (inf) proves nothing either
    person = _summary(rows)
    unbounded = person[person["metric"] == "guarantee_epsilon"].assign(metric="guarantee_epsilon_person", value=np.inf)
    person = pd.concat([person, unbounded], ignore_index=True)
    assert set(frontier.points(frontier.releases(person))["trust_model"]) == {"none"}


def test_the_privacy_axis_is_the_configured_adversary():
    # against the population adversary privtree (aggregate-only) keeps the prior's error 4.0; the informed
    # adversary, which knows everyone else, gets it down to 0.2
    rows = [
        *_reps("geoind", "1.0", [0.5] * 3, [1.0, 1.1, 1.2], 1.2),
        *_reps("privtree", "2.0", [0.9, 0.91, 0.92], [0.2] * 3, 4.0),
    ]
    levels = {("d", 100): {"x": 3.0}}
    informed, _, _ = _table(rows, levels=levels)
    population, _, _ = _table(rows, levels=levels, adversary="population")
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
        frontier.releases(old)
    assert len(frontier.releases(old, "population"))  # the population adversary still works
    with pytest.raises(ValueError, match="no trust_model column"):
        frontier.releases(summary.drop(columns="trust_model"))
    with pytest.raises(ValueError, match=r"trust_model is not one of .* geoind"):
        frontier.releases(summary.assign(trust_model=summary["trust_model"].replace("local", "")))


def test_recommendation_is_one_row_per_level_and_one_column_per_trust_model():
    levels = {("d", 100): {"10 % of side": 0.25, "50 % of side": 1.5}}
    table, _, _ = _table(ROWS, levels=levels)
    rec = frontier.recommendation(table)
    assert list(rec.columns) == ["dataset", "N", "10th-percentile expected error at least", "local", "central", "none"]
    assert len(rec) == 2
    first = rec.iloc[0]
    assert first["10th-percentile expected error at least"] == ("0.25 domain units", "10 % of side")
    name, detail = first["local"]
    assert name == "geoind epsilon=5"
    assert detail.startswith("spearman\u00a00.8 [0.75,\u00a00.85] · p10\u00a00.3 domain units [0.25")
    assert "exposed\u00a010\u00a0%" in detail and detail.endswith("ε = 5.0 (x)")
    assert rec.iloc[1]["local"] == ("—", frontier.BELOW_FLOOR)


def test_levels_are_fractions_of_the_side_for_synthetic_and_distances_for_real_data():
    levels = frontier.dataset_levels(
        {"syn": {"source": "synthetic"}, "geo": {"source": "points", "lonlat_bbox": [116.1, 116.2, 39.9, 40.0]}},
        {"synthetic": [0.1, 0.25], "real": [250, 1000]},
        {"syn": Domain(-3, 3, -3, 3), "geo": Domain(0, 9000, 0, 9000)},
    )
    assert levels == {"syn": {"10 % of side": 0.6, "25 % of side": 1.5}, "geo": {"250 m": 250.0, "1000 m": 1000.0}}
    assert repr(levels["syn"]["10 % of side"]) == "0.6"  # 0.1 * 6 rounded, not 0.6000000000000001


def test_figure_marks_trust_models_numbers_settings_draws_intervals_and_a_one_point_front():
    from matplotlib.colors import to_hex

    summary = pd.concat(
        [_summary(ROWS), _summary(_reps("geoind", "1.0", [0.7, 0.7, 0.7], [0.8] * 3), n=1000)], ignore_index=True
    )
    pts = frontier.points(frontier.releases(summary))
    levels = frontier.levels_of(pts, CFG, {})
    fig = frontier.figure(pts, ["spearman", "ise"], levels, {"d": "1"}, dpi=60)
    assert figures.problems(fig) == []
    assert len(fig.axes) == 4  # two tasks x two N
    small, large = sorted(
        (ax for ax in fig.axes if ax.get_title().endswith("spearman")), key=lambda ax: len(ax.get_title())
    )
    assert small.get_title() == "d, N = 100: spearman" and large.get_title() == "d, N = 1000: spearman"
    # N = 1000 holds one point: its front is a line from the panel's left edge to that point
    (front,) = [line for line in large.lines if line.get_color() == "black"]
    xs, ys = front.get_data()
    assert xs[0] <= large.get_xlim()[0] + 1e-9 and xs[-1] == pytest.approx(0.8) and ys == pytest.approx([0.7, 0.7])
    # one marker shape per trust model (rff has no proof: none), one colour per mechanism
    shapes = {}
    for coll in small.collections:
        if coll.get_paths() and len(coll.get_offsets()) and hasattr(coll, "get_sizes") and len(coll.get_sizes()):
            shapes.setdefault(coll.get_paths()[0].vertices.round(3).tobytes(), set()).add(
                to_hex(coll.get_facecolor()[0])
            )
    assert len(shapes) == 3  # local, none, central
    # every point is numbered, once; each level line with its legend tag; the key names every number
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    numbers = sorted(t.get_text() for t in small.texts if not t.get_text().startswith("L"))
    assert len(numbers) == len(pts[pts["n"] == 100]) and len(set(numbers)) == len(numbers)
    assert sorted(t.get_text() for t in small.texts if t.get_text().startswith("L")) == ["L1", "L2", "L3"]
    assert all(any(entry.startswith(f"{k}: ") for entry in legend) for k in numbers)
    assert "geoind ε=1" in " ".join(legend) and "95 % interval over releases" in legend
    assert "[domain units]" in small.get_xlabel() and "informed adversary" in small.get_xlabel()
    assert {"L1: 50 % of no-information", "local", "central", "none", "geoind", "privtree"} <= set(legend)
    # intervals: one error bar per point, in the mechanism's colour
    assert any(type(c).__name__ == "LineCollection" for c in small.collections)
    figures.plt.close(fig)


def test_level_tags_do_not_overlap_when_levels_are_close():
    """Geolife's levels (437, 656, 787 m on a 7 km axis) printed L1, L2 and L3 on top of each other."""
    pts = frontier.points(frontier.releases(_summary(ROWS)))
    levels = {key: {"50 %": 0.5, "51 %": 0.51, "52 %": 0.52} for key in frontier.levels_of(pts, CFG, {})}
    fig = frontier.figure(pts, ["spearman"], levels, {"d": "1"}, dpi=60)
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts if t.get_text() in ("L1", "L2", "L3")]
    assert len(boxes) == 3
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    figures.plt.close(fig)


def test_error_tasks_are_drawn_on_a_log_axis_when_every_value_is_positive():
    """ISE differs by orders of magnitude between mechanisms: its panel is logarithmic, said in its label;
    rank correlation stays linear, and an ISE panel holding a zero (the constant map of an empty domain)
    stays linear rather than losing the point."""
    runs = [
        *_reps("laplace_ldp", "4", [{"spearman": 0.9, "ise": i} for i in (0.056, 0.0561, 0.0562)], [3.0] * 3),
        *_reps("privtree", "1", [{"spearman": 0.95, "ise": i} for i in (2e-4, 3e-4, 2.5e-4)], [2.0] * 3),
    ]
    for zero, scale in ((None, "log"), (0.0, "linear")):
        rows = (
            runs if zero is None else [*runs, *_reps("zero", "0", [{"spearman": 0.0, "ise": zero}] * 3, [NO_INFO] * 3)]
        )
        pts = frontier.points(frontier.releases(_summary(rows)))
        fig = frontier.figure(pts, ["spearman", "ise"], {}, {"d": "1"}, dpi=60)
        (rank, ise) = sorted(fig.axes, key=lambda ax: ax.get_title())[::-1]
        assert ise.get_title().endswith(": ise") and ise.get_yscale() == scale
        assert ("log scale" in ise.get_ylabel()) == (scale == "log")
        assert rank.get_yscale() == "linear" and "log scale" not in rank.get_ylabel()
        figures.plt.close(fig)


def test_frontier_writes_the_table_the_recommendation_and_the_figure(tmp_path):
    from locpriv import io

    summary = tmp_path / "metrics.parquet"
    io.write_parquet(_summary(ROWS), summary)
    out = {k: tmp_path / f"{k}" for k in ("csv", "png", "html", "rec")}
    frontier.frontier(
        summary_parquet=str(summary),
        cfg={"utility": ["spearman", "ise"], "adversary": "informed"},
        levels={},
        units={"d": "m"},
        dpi=50,
        out_csv=str(out["csv"]),
        out_png=str(out["png"]),
        out_html=str(out["html"]),
        out_recommendation=str(out["rec"]),
    )
    table = pd.read_csv(out["csv"], keep_default_na=False)
    assert list(table.columns) == frontier.TABLE_COLUMNS and set(table["distance_unit"]) == {"m"}
    assert set(table["utility_metric"]) == {"spearman", "ise"}
    rec = out["rec"].read_text()
    assert rec.startswith("<style>") and rec.count("<table") == 2 and "<html" not in rec
    assert "Task ise" in rec and "Task spearman" in rec and ">2 m<" in rec  # the level (50 % of 4 m) with its unit
    assert "privtree epsilon=2" not in rec and frontier.NO_SETTING in rec  # its error 1.6 m reaches no level
    page = out["html"].read_text()
    assert "<html" in page and ">2 m<" in page and ">1.6 m<" in page and ">10 %<" in page  # units, percentages
    summary_bad = tmp_path / "old.parquet"
    io.write_parquet(_summary(ROWS).drop(columns="trust_model"), summary_bad)
    with pytest.raises(ValueError, match=f"^{summary_bad}: no trust_model column"):
        bad = [str(tmp_path / f"bad{k}") for k in range(4)]
        frontier.frontier(
            summary_parquet=str(summary_bad),
            cfg={"utility": ["spearman"], "adversary": "informed"},
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
    config["experiments"]["density"]["reps"] = 3
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
    table = pd.read_csv(wd / "results/summary/frontier.csv", keep_default_na=False, na_values=[""])
    assert {"pareto", "best_at_level"} <= set(table["row"]) <= {"pareto", "best_at_level", "not_worse_at_level"}
    assert "fedkde" in set(table.loc[table["row"] == "pareto", "mechanism"])
    assert set(table["utility_metric"]) == set(frontier.UTILITIES) and (table["reps"].dropna() == 3).all()
    assert set(table.loc[table["mechanism"] == "fedkde", "guarantee"]) == {"no proof"}
    privtree = table[table["mechanism"] == "privtree"].iloc[0]
    assert privtree["epsilon_guaranteed"] == 4 and privtree["guarantee"].startswith("ε = 4 (replace one user")
    recommended = table[table["row"].str.endswith("at_level") & table["mechanism"].notna()]
    assert recommended.loc[recommended["trust_model"] != "none", "epsilon_guaranteed"].notna().all()
    # one row per run and attacked user, the tail statistics the summary holds summarise them
    users = pd.read_parquet(wd / "results/summary/attacked_users.parquet")
    assert len(users) == 3 * 3 * 30 and users.groupby(["mechanism", "rep"]).size().eq(30).all()
    exposed = users.groupby(["mechanism", "rep"])["informed_hit_r"].apply(lambda h: (h >= 0.5).mean())
    tidy = summary[summary["metric"] == "informed_exposed"].set_index(["mechanism", "rep"])["value"]
    pd.testing.assert_series_equal(exposed.sort_index(), tidy.sort_index(), check_names=False)
    runs = pd.read_csv(wd / "results/summary/runs.csv")
    assert runs.set_index("mechanism").loc["privtree", "guarantee"].startswith("ε = 4 (replace one user")


def test_distances_are_written_with_their_unit_and_three_digits():
    from locpriv import units

    assert units.distance(10_500.0, "m") == "10.5 km" and units.distance(254.4, "m") == "254 m"
    assert units.distance(0.25, "km") == "250 m" and units.distance(3.21, "km") == "3.21 km"
    assert units.distance(999.7, "m") == "1000 m" and units.distance(0.6123, "1") == "0.612 domain units"
    assert units.distance(float("nan"), "m") == "—"


def test_on_person_data_the_informed_levels_are_fractions_of_the_prior_scored_at_the_attacked_row():
    """Persons: the informed adversary's error is to the row it attacks, the population adversary's to the
    person's nearest point; each adversary's levels are fractions of the prior scored the same way (the
    old reference, the nearest point, made every setting reach every level on Geolife)."""
    base = _summary(ROWS)
    per_run = base[base["metric"] == "prior_expected_error"]
    added = {"guarantee_epsilon_person": 8.0, "prior_informed_expected_error": 9.0, "prior_informed_p10_error": 9.0}
    persons = pd.concat([base, *(per_run.assign(metric=m, value=v) for m, v in added.items())], ignore_index=True)
    informed = frontier.levels_of(frontier.points(frontier.releases(persons)), CFG, {})
    assert informed[("d", 100)]["50 % of no-information"] == 4.5  # 0.5 x 9.0, not 0.5 x NO_INFO
    population = frontier.points(frontier.releases(persons, adversary="population"))
    assert frontier.levels_of(population, CFG, {})[("d", 100)]["50 % of no-information"] == NO_INFO / 2
    # a person summary from before the row-scored reference is refused, not levelled against the wrong one
    old = persons[~persons["metric"].str.startswith("prior_informed")]
    with pytest.raises(ValueError, match=r"no prior_p10_error metric"):
        frontier.levels_of(frontier.points(frontier.releases(old)), CFG, {})
