"""[SLDP]'s mechanisms as location-DAG mechanisms: sldp, privtree, ldp_oue_grid."""

import math

import numpy as np
import pandas as pd
import pytest

from locpriv import io, mechanisms
from locpriv.domain import Domain, Grid
from locpriv.stages.run import shard_count, shard_size

GRID = Grid.regular(Domain(-3, 3, -3, 3), 32, 32)


def _points(n, seed=0):
    xy = np.random.default_rng(seed).normal(0, 0.8, size=(n, 2)).clip(-2.99, 2.99)
    return pd.DataFrame({"user": np.arange(n), "x": xy[:, 0], "y": xy[:, 1]})


def _run(name, n=4000, seed=1, **given):
    mech = mechanisms.get(name)(**given)
    pts = _points(n)
    view = mech.randomize(pts, rng=seed, domain=GRID)
    est = mech.density(mech.partial(view, GRID), n, GRID)
    return mech, mech.settings, pts, view, est


@pytest.mark.parametrize(
    "name, given",
    [
        ("sldp", {"epsilon": 2.0}),
        ("privtree", {"epsilon": 2.0}),
        ("ldp_oue_grid", {"epsilon": 2.0}),
        ("ldp_kdtree", {"epsilon": 2.0}),
        ("sldp", {"epsilon": 2.0, "leaves": "children"}),
    ],
)
def test_estimate_is_a_pdf_peaked_at_the_data(name, given):
    _, _, _, view, est = _run(name, **given)
    assert est.min() >= 0 and est.sum() * GRID.cell_area == pytest.approx(1.0)
    # the data are N(0, 0.8^2): the centre carries more mass than a corner
    assert est[12:20, 12:20].mean() > 5 * est[:4, :4].mean()
    assert {"x", "y"}.isdisjoint(view.columns)


def test_interactive_mechanisms_run_as_one_shard():
    assert shard_count(20000, shard_size("sldp", 5000)) == 1
    assert shard_count(20000, shard_size("privtree", 5000)) == 1
    assert shard_count(20000, shard_size("ldp_kdtree", 5000)) == 1
    assert shard_count(20000, shard_size("ldp_oue_grid", 5000)) == 4


def test_sldp_surface_is_a_pdf_on_each_users_region():
    mech, _params, pts, view, _ = _run("sldp", epsilon=4.0)
    surf = mech.surfaces(view.iloc[:50], GRID)
    # exact overlaps: every surface integrates to 1 over the grid, however small the region
    assert np.allclose(surf.sum(axis=(1, 2)) * GRID.cell_area, 1.0)
    from locpriv.quadtree import cell_box

    boxes = cell_box(view["level"].to_numpy()[:50], view["code"].to_numpy()[:50], [-3, 3, -3, 3])
    half = (GRID.x[1] - GRID.x[0]) / 2
    gx, gy = np.meshgrid(GRID.x, GRID.y, indexing="ij")
    for i in range(50):
        sx, sy = gx[surf[i] > 0], gy[surf[i] > 0]
        # support: the grid cells touching the region, which contains the user
        assert (sx >= boxes[i, 0] - half).all() and (sx <= boxes[i, 1] + half).all()
        assert (sy >= boxes[i, 2] - half).all() and (sy <= boxes[i, 3] + half).all()
        assert boxes[i, 0] <= pts["x"][i] <= boxes[i, 1] and boxes[i, 2] <= pts["y"][i] <= boxes[i, 3]


def test_release_surface_keeps_the_mass_of_cells_smaller_than_a_grid_cell():
    from locpriv.mechanisms.partitions import release_surface

    release = {"level": [0, 8], "code": [0, 12345], "count": [0.0, 10.0]}  # one tiny leaf with all the mass
    surface = release_surface(release, GRID)
    assert surface.sum() * GRID.cell_area == pytest.approx(10.0)


def test_release_survives_the_parquet_round_trip(tmp_path):
    _, _, _, view, _ = _run("privtree", epsilon=1.0)
    io.write_parquet(view, tmp_path / "v.parquet")
    back = pd.read_parquet(tmp_path / "v.parquet", filters=[("user", "in", [3, 7])])
    assert back.attrs["release"] == view.attrs["release"] and len(back) == 2


def test_oue_bits_are_unbiased_per_cell():
    """OUE: E[ones_c] = n_c p + (n - n_c) q, so the debiased count is unbiased; 5-SE bound over 30 draws."""
    mech = mechanisms.get("ldp_oue_grid")(epsilon=1.0, level=2)
    pts = _points(3000)
    p, q = 0.5, 1 / (math.e + 1)
    from locpriv.quadtree import cell_codes

    true = np.bincount(cell_codes(pts[["x", "y"]].to_numpy(), [-3, 3, -3, 3], 2), minlength=16)
    draws = []
    for r in range(30):
        view = mech.randomize(pts, rng=r, domain=GRID)
        ones = np.bincount(np.concatenate(view["ones"].to_numpy()).astype(int), minlength=16)
        draws.append((ones - 3000 * q) / (p - q))
    draws = np.array(draws)
    var = (true * p * (1 - p) + (3000 - true) * q * (1 - q)) / (p - q) ** 2
    assert (np.abs(draws.mean(0) - true) < 5 * np.sqrt(var / 30)).all()


@pytest.mark.workflow
def test_partition_mechanisms_are_branches_of_the_location_dag(make_workdir):
    import copy

    from conftest import TINY, run_snakemake

    cfg = copy.deepcopy(TINY)
    cfg["experiments"]["density"]["mechanisms"] = {
        "sldp": {"n": [600], "epsilon": [2.0], "max_depth": 6},
        "privtree": {"n": [600], "epsilon": [2.0]},
        "ldp_oue_grid": {"n": [600], "epsilon": [2.0], "level": 3},
        "ldp_kdtree": {"n": [600], "epsilon": [2.0], "height": 3},
        "hdg": {"n": [600], "epsilon": [2.0]},
    }
    wd = make_workdir(cfg)
    run_snakemake(wd, "--cores", "2", "results/summary/metrics.csv")
    table = pd.read_csv(wd / "results/summary/metrics.csv")
    for mech in ("sldp", "privtree", "ldp_oue_grid", "ldp_kdtree", "hdg"):
        rows = table[table["mechanism"] == mech].set_index("metric")["value"]
        assert rows["answered"] == 1 and np.isfinite(rows["privacy_Z"]) and rows["spearman"] > 0
    # one randomize job for the interactive ones (600 users), 3 shards of 200 for the LDP grid
    views = [p.relative_to(wd / "results/runs/gauss9").parts[0] for p in wd.glob("results/runs/**/shard~*.parquet")]
    assert views.count("sldp") == 1 and views.count("privtree") == 1 and views.count("ldp_oue_grid") == 3
    assert views.count("ldp_kdtree") == 1 and views.count("hdg") == 1
