"""PrivTree, the LDP grid and range-query answering ([SLDP] §5.2)."""

import math

import numpy as np
import pandas as pd
import pytest

from locpriv.quadtree import cell_codes
from locpriv.sldp import ldp_grid, privtree, range_queries

BOX = (0.0, 1.0, 0.0, 1.0)


def test_privtree_constants_and_hand_worked_biased_counts():
    lam, delta = privtree.constants(1.0)
    assert lam == pytest.approx(7 / 3) and delta == pytest.approx(7 / 3 * math.log(4))
    # on the grid 2^-8: lambda' = 7/3 * 256 rounded up by < 2^-15 steps, delta' = ceil(lambda' ln 4) + 1
    lam_steps, delta_steps = privtree.grid_constants(1.0)
    assert 0 < lam_steps - 7 / 3 * 256 <= 2**-15
    assert delta_steps == math.ceil(lam_steps * math.log(4)) + 1 == 830  # 597.33 * 1.3863 = 828.1
    assert delta_steps * privtree.STEP >= lam_steps * privtree.STEP * math.log(4) >= delta
    # theta = 0: a depth-2 node with 10 points has b = 2560 - 2 * 830 = 900 steps; an empty
    # depth-1 node has b = max(0 - 830, 0 - 830) = -830 steps
    np.testing.assert_array_equal(privtree.biased_steps([10, 0], [2, 1], 0, 830), [900, -830])


def test_privtree_splits_dense_regions_deeper():
    rng = np.random.default_rng(0)
    pts = np.vstack([rng.uniform(0, 0.25, size=(20000, 2)), rng.uniform(0, 1, size=(2000, 2))])
    leaves = privtree.privtree(pts, BOX, 0.5, 0.5, np.random.default_rng(1))
    # the leaves tile the box exactly once
    area = (0.25 ** leaves["level"]).sum()
    assert area == pytest.approx(1.0)
    level, code = leaves["level"].to_numpy(), leaves["code"].to_numpy()
    in_dense = (level >= 2) & ((code >> np.maximum(2 * (level - 2), 0)) == 0)  # inside [0, 1/4]^2
    assert level.max() >= 4 and in_dense.sum() > len(leaves) / 2


def test_area_weighted_answers_are_exact_for_aligned_queries_and_uniform_inside():
    part = pd.DataFrame({"level": [1, 1, 1, 1], "code": [0, 1, 2, 3], "count": [40.0, 8.0, 4.0, 0.0]})
    q = np.array([[0, 0.5, 0, 0.5], [0, 0.25, 0, 0.5], [0, 1, 0, 1], [0.25, 0.75, 0.25, 0.75]])
    # code 0 = lower x, lower y; 1 = lower x, upper y; 2 = upper x, lower y
    np.testing.assert_allclose(range_queries.answer(q, part, BOX), [40, 20, 52, (40 + 8 + 4 + 0) / 4])


def test_oue_grid_counts_are_unbiased():
    """Mean over 300 runs within 5 standard errors per cell (Var = N q(1-q)/(p-q)^2 + n_v terms)."""
    rng = np.random.default_rng(2)
    pts = rng.uniform(0, 1, size=(3000, 2)) ** 2
    true = np.bincount(cell_codes(pts, BOX, 2), minlength=16)
    est = np.array([ldp_grid.oue_grid(pts, BOX, 1.0, 2, rng)["count"] for _ in range(300)])
    p, q = 0.5, 1 / (math.e + 1)
    var = (true * p * (1 - p) + (3000 - true) * q * (1 - q)) / (p - q) ** 2
    assert (np.abs(est.mean(0) - true) < 5 * np.sqrt(var / 300)).all()


def test_anchored_workload_respects_the_count_filter():
    rng = np.random.default_rng(3)
    pts = rng.normal(0.5, 0.1, size=(20000, 2)).clip(0, 1)
    q = range_queries.anchored_workload(pts, BOX, 200, rng)
    c = range_queries.true_counts(q, pts)
    assert len(q) == 200 and c.min() >= 20 and c.max() <= 1000
    assert range_queries.mean_relative_error(c.astype(float), c, 20000) == 0


def test_anchored_queries_contain_their_anchor_and_uniform_ones_stay_inside():
    rng = np.random.default_rng(4)
    pts = rng.uniform(0, 1, size=(30000, 2))
    q = range_queries.anchored_workload(pts, BOX, 100, rng)
    w, h = q[:, 1] - q[:, 0], q[:, 3] - q[:, 2]
    assert not np.allclose(w, h)  # width and height drawn independently
    assert (w >= 1 / 256 - 1e-12).all() and (w <= 1 / 8 + 1e-12).all()
    u = range_queries.uniform_workload(BOX, 500, rng)
    assert (u[:, 0] >= 0).all() and (u[:, 1] <= 1).all() and (u[:, 2] >= 0).all() and (u[:, 3] <= 1).all()


def test_study_defaults_are_the_papers_thresholds_and_merged_leaves():
    from locpriv.config import ConfigError
    from locpriv.sldp import study

    cfg = study.validate_config({"classify": {"path": "housing.csv", "lonlat_bbox": [-124.48, -114.13, 32.53, 42.01]}})
    assert (cfg["mean"]["threshold"], cfg["range"]["threshold"], cfg["classify"]["threshold"]) == (100, 20, 20)
    assert cfg["leaves"] == "merge" and cfg["counts"] == "regions" and cfg["child_share"] == 0
    assert cfg["range"]["kdtree_height"] == 4
    # classification's box is public and configured, never the data's own min/max
    with pytest.raises(ConfigError, match="classify': missing required key 'lonlat_bbox'"):
        study.validate_config({"classify": {"path": "housing.csv"}})
    # Alg. 2 line 14's constant went with its margin (issue 28.2): one clear line, no silent ignore
    with pytest.raises(ConfigError, match=r"studies\.sldp\.delta_constant': removed"):
        study.validate_config({"delta_constant": 6.0})
    with pytest.raises(ConfigError, match=r"studies\.sldp\.child_share'.*leaves: merge"):
        study.validate_config({"child_share": 0.3})
    assert study.validate_config({"child_share": 0.3, "leaves": "children"})["child_share"] == 0.3
    with pytest.raises(ConfigError, match=r"studies\.sldp\.threshold': moved into each task"):
        study.validate_config({"threshold": 20})
    with pytest.raises(ConfigError, match=r"studies\.sldp\.leaves"):
        study.validate_config({"leaves": "parent"})


def test_paired_summary_of_the_authors_table():
    """Paired per repetition: a method at 0.9x the reference in every rep is -10 % with a zero-width
    interval and lower in 3 of 3; ties count half; the t interval widens with the spread."""
    from locpriv.sldp.compare import paired_summary

    ref = np.array([0.2, 0.4, 0.3])
    rows = [
        {"dataset": "d", "n": 10, "epsilon": 1.0, "rep": r, "method": m, "mre": v}
        for r in range(3)
        for m, v in (("authors", ref[r]), ("per_child", 0.9 * ref[r]), ("pooled", ref[r] * (1, 1.2, 1.5)[r]))
    ]
    out = paired_summary(pd.DataFrame(rows), "authors").set_index("method")
    assert out.loc["per_child", "diff"] == pytest.approx(-10) and out.loc["per_child", "lower"] == 3
    assert out.loc["per_child", "high"] - out.loc["per_child", "low"] == pytest.approx(0, abs=1e-9)
    pooled = out.loc["pooled"]
    assert pooled["diff"] == pytest.approx(70 / 3) and pooled["lower"] == 0.5 and pooled["reps"] == 3
    # t(0.975, 2) = 4.303 times the standard error of (0, 20, 50)
    assert pooled["high"] - pooled["diff"] == pytest.approx(4.3027 * np.std([0, 20, 50], ddof=1) / np.sqrt(3), rel=1e-4)
