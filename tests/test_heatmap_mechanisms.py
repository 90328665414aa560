"""Bagdasaryan et al. 2022's distributed-DP heatmaps as location-DAG mechanisms."""

import numpy as np
import pandas as pd
import pytest

from locpriv import io, mechanisms
from locpriv.domain import Domain, Grid
from locpriv.dp import ADD_REMOVE, REPLACE_ONE
from locpriv.heatmaps.adaptive import AdaptiveParams, run_adaptive
from locpriv.heatmaps.aggregation import SecAgg
from locpriv.mechanisms.heatmap import image, pixels
from locpriv.quadtree import deinterleave
from locpriv.stages.run import shard_count, shard_size

GRID = Grid.regular(Domain(-3, 3, -3, 3), 40, 40)
NAMES = ["dp_heatmap", "heatmap_flat", "heatmap_hierarchical"]


def _points(n, seed=0):
    xy = np.random.default_rng(seed).normal(0, 0.8, size=(n, 2)).clip(-2.99, 2.99)
    return pd.DataFrame({"user": np.arange(n), "x": xy[:, 0], "y": xy[:, 1]})


def _run(name, n=5000, seed=1, **given):
    mech = mechanisms.get(name)(**{"epsilon": 2.0, **given})
    pts = _points(n)
    view = mech.randomize(pts, rng=seed, domain=GRID)
    est = mech.density(mech.partial(view, GRID), n, GRID)
    return mech, mech.settings, pts, view, est


def _published_map(view, depth):
    """The released finest-level cells as the 2^depth x 2^depth pixel map."""
    release = view.attrs["release"]
    image = np.zeros((1 << depth, 1 << depth))
    x, y = deinterleave(np.asarray(release["code"]), depth)
    image[x, y] = release["count"]
    return image


@pytest.mark.parametrize("name", NAMES)
def test_estimate_is_a_pdf_peaked_at_the_data(name):
    _, _, _, view, est = _run(name)
    assert est.min() >= 0 and est.sum() * GRID.cell_area == pytest.approx(1.0)
    # N(0, 0.8^2) data: the centre carries far more mass than a corner
    assert est[15:25, 15:25].mean() > 5 * est[:6, :6].mean()
    assert {"x", "y"}.isdisjoint(view.columns)


def test_they_run_as_one_interactive_shard():
    for name in NAMES:
        assert shard_count(20000, shard_size(name, 5000)) == 1


def test_pixel_adapter_puts_each_user_in_its_quadtree_cell():
    pts = pd.DataFrame({"user": [0, 1, 2], "x": [-3.0, 2.99, 0.1], "y": [-3.0, 2.99, -0.1]})
    x, y, moved = pixels(pts, GRID, depth=2)  # 4 x 4 cells of side 1.5
    assert (x.tolist(), y.tolist(), moved) == ([0, 3, 2], [0, 3, 1], 0)
    counts = image(x, y, 2)
    assert counts.sum() == 3 and counts[2, 1] == 1


def test_dp_heatmap_is_the_librarys_adaptive_algorithm():
    """Same rng, same users: the DAG mechanism's map is the population-image study's map, bit for bit."""
    mech, params, pts, view, _ = _run("dp_heatmap", seed=7)
    x, y, _ = pixels(pts, GRID, params["depth"])
    config = AdaptiveParams(
        epsilon=2.0, users_per_round=len(pts), sampling="fixed", secagg=SecAgg(shard_size=params["shard_size"])
    )
    expected = run_adaptive(image(x, y, params["depth"]), config, np.random.default_rng(7)).heatmap()
    np.testing.assert_array_equal(_published_map(view, params["depth"]), expected)
    # no dropout in the DAG: the realised level is the planned one
    assert view.attrs["epsilon_spent"] == pytest.approx(2.0) == view.attrs["epsilon_achieved"]
    assert view.attrs["communication"] <= mech.communication(GRID)


def test_dp_heatmap_options_left_out_at_their_default_as_run_paths_leave_them():
    """A run's path leaves omit-default options out (explicit settings): the object and map are the full ones."""
    cls = mechanisms.get("dp_heatmap")
    full = dict(cls(epsilon=2.0).settings)
    short = cls(epsilon=2.0).explicit_settings()
    assert {"threshold", "start", "collapse_floor", "combine"}.isdisjoint(short)
    assert cls(**short) == cls(**full)
    pts = _points(3000)
    maps = [cls(**p).randomize(pts, rng=3, domain=GRID) for p in (full, short)]
    pd.testing.assert_frame_equal(maps[0], maps[1])


def test_flat_at_huge_epsilon_publishes_the_true_histogram():
    """ε = 60: each of the 4^4 entries is off by 0 except with probability < 256 · 2 e^-60 (negligible)."""
    _mech, _params, pts, view, _ = _run("heatmap_flat", epsilon=60.0, depth=4)
    x, y, _ = pixels(pts, GRID, 4)
    truth = image(x, y, 4) / len(pts)
    np.testing.assert_allclose(_published_map(view, 4), truth)
    # power check: at ε = 0.05 the noise (std ≈ 28 per pixel) moves the map visibly
    _, _, _, noisy, _ = _run("heatmap_flat", epsilon=0.05, depth=4)
    assert noisy.attrs["release"]["count"] != view.attrs["release"]["count"]


@pytest.mark.parametrize("name", NAMES)
def test_guarantee_states_model_relation_and_epsilon(name):
    mech = mechanisms.get(name)(epsilon=1.5)
    g = mech.guarantee()
    assert "distributed" in g.model and "ideal secure aggregation" in g.model and mech.aggregate_only
    assert g.trust_model == "distributed"
    if name == "heatmap_hierarchical":  # its level is picked against the true map: no promise
        assert g.epsilon is None and "true map" in g.non_private_inputs and mech.audit_pairs(GRID) == []
    else:
        # n is public in the DAG: the recorded epsilon is for replacing one user, add/remove beside it
        assert (g.epsilon, g.delta, g.relation) == (3.0, 0.0, REPLACE_ONE)
        assert g.other_relations == {ADD_REMOVE: 1.5}


@pytest.mark.parametrize("name", NAMES)
def test_attack_surface_is_the_published_map_for_everyone(name, tmp_path):
    mech, _params, _, view, est = _run(name)
    io.write_parquet(view, tmp_path / "v.parquet")
    back = pd.read_parquet(tmp_path / "v.parquet", filters=[("user", "in", [3, 7])])
    surf = mech.surfaces(back, GRID)
    assert surf.shape == (2, *GRID.shape)
    np.testing.assert_allclose(surf[0], est)
    np.testing.assert_allclose(surf[1], est)


def test_bad_parameter_names_the_key():
    with pytest.raises(ValueError, match=r"'DPHeatmap\.depth'"):
        mechanisms.get("dp_heatmap")(epsilon=1.0, depth=12)


@pytest.mark.parametrize("name", NAMES)
def test_per_client_aggregation_runs_the_same_pipeline(name):
    """Each user's own vector + Pólya share, summed mod 2^bits: still a pdf peaked at the data, same ε."""
    mech, _params, _, view, est = _run(name, n=1500, depth=4, shard_size=500, aggregation="per_client")
    assert est.sum() * GRID.cell_area == pytest.approx(1.0)
    assert est[15:25, 15:25].mean() > 5 * est[:6, :6].mean()
    assert view.attrs["epsilon_achieved"] == pytest.approx(2.0)
    assert "per-client" in mech.guarantee().model


def test_secure_aggregation_against_an_active_server_in_the_dag():
    """variant: active runs the masking protocol with signed keys and a consistency round; the same map as the
    ideal per-client sum (the masks cancel), and the record names the server model."""
    _, _, _, ideal, _ = _run("heatmap_flat", n=600, depth=3, shard_size=300, aggregation="per_client")
    mech, _, _, view, _ = _run("heatmap_flat", n=600, depth=3, shard_size=300, aggregation="secure", variant="active")
    assert view.attrs["release"]["count"] == ideal.attrs["release"]["count"]
    assert "active server" in mech.guarantee().model
    with pytest.raises(ValueError, match=r"variant.*aggregation secure only"):
        mechanisms.get("heatmap_flat")(epsilon=1.0, variant="active")
