"""Shared utility metrics: range_mre on one workload, hotspot_recall."""

import numpy as np
import pandas as pd
import pytest

from locpriv import io, metrics
from locpriv.domain import Domain, Grid
from locpriv.sldp.range_queries import anchored_workload
from locpriv.stages import utility

GRID = Grid.regular(Domain(0, 4, 0, 2), 8, 4)


def test_range_masses_integrate_the_cell_constant_density():
    dens = np.arange(32, dtype=float).reshape(8, 4)
    dens /= dens.sum() * GRID.cell_area
    queries = np.array(
        [
            [0, 4, 0, 2],  # the whole domain
            [0, 0.5, 0, 0.5],  # exactly cell (0, 0)
            [0.25, 0.75, 0, 0.5],  # half of cells (0, 0) and (1, 0)
            [5, 6, 0, 1],
        ]
    )  # outside
    m = metrics.range_masses(dens, GRID, queries)
    c = GRID.cell_area
    np.testing.assert_allclose(m, [1.0, dens[0, 0] * c, (dens[0, 0] + dens[1, 0]) * c / 2, 0.0], atol=1e-12)


def test_range_mre_is_zero_for_the_truth_and_positive_for_a_flat_map():
    rng = np.random.default_rng(0)
    truth = rng.gamma(1.0, size=(8, 4))
    truth /= truth.sum() * GRID.cell_area
    queries = anchored_workload(rng.uniform([0, 0], [4, 2], (5000, 2)), [0, 4, 0, 2], 30, rng)
    assert metrics.range_mre(truth, truth, GRID, queries, 5000) == 0.0
    flat = np.full((8, 4), 1 / 8.0)
    assert metrics.range_mre(flat, truth, GRID, queries, 5000) > 0.05


def test_hotspot_recall():
    truth = np.arange(32, dtype=float).reshape(8, 4)
    assert metrics.hotspot_recall(truth, truth, 5) == 1.0
    assert metrics.hotspot_recall(-truth, truth, 5) == 0.0
    # a constant map shares every place: the chance level k / cells, not an arbitrary pick
    assert metrics.hotspot_recall(np.ones((8, 4)), truth, 5) == pytest.approx(5 / 32)
    with pytest.raises(ValueError, match="hotspot_k"):
        metrics.hotspot_recall(truth, truth, 33)


def test_workload_is_seeded_per_dataset_and_hashed(tmp_path):
    pts = pd.DataFrame(np.random.default_rng(1).normal(0, 0.5, (3000, 2)).clip(-1.9, 1.9), columns=["x", "y"])
    io.write_parquet(pts, tmp_path / "points.parquet")
    grid = Grid.regular(Domain(-2, 2, -2, 2), 10, 10)
    io.write_netcdf(grid.to_dataset("1"), tmp_path / "grid.nc")
    cfg = {**utility.DEFAULTS, "range_queries": 25, "workload_points": 2000}
    paths = [tmp_path / f"w{i}.parquet" for i in range(3)]
    for path, name, seed in zip(paths, ["a", "a", "b"], [7, 7, 7], strict=True):
        utility.range_workload(
            dataset=name,
            points_path=str(tmp_path / "points.parquet"),
            grid_path=str(tmp_path / "grid.nc"),
            utility_cfg=cfg,
            seed=seed,
            out_parquet=str(path),
        )
    (q0, h0), (_q1, h1), (_, h2) = (utility.read_workload(str(p)) for p in paths)
    assert len(q0) == 25 and h0 == h1 != h2
    assert io.read_parquet_metadata(paths[0])["workload_sha256"] == h0
    assert io.read_parquet_metadata(paths[0])["points_used"] == 2000
