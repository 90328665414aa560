import numpy as np
import pytest

from locpriv.errors import InputError
from locpriv.sldp import classify

CFG = {"threshold": 0.0, "max_depth": 8, "delta": 0.05, "split_rule": "per_child", "calibration": "sensitivity2"}


CALIFORNIA = [-124.48, -114.13, 32.53, 42.01]  # workflow/configs/sldp.yaml's public box


def test_housing_coordinates_are_scaled_from_the_public_box_not_the_data(tmp_path):
    """The box is configured: the same rows give the same features whatever the other rows are
    (a data min/max box would move with every row), and a row outside it is clamped and counted."""
    csv = tmp_path / "housing.csv"
    csv.write_text("longitude,latitude,median_house_value\n-122.0,37.0,1\n-118.0,34.0,3\n-113.0,33.0,2\n")
    X, y, counts = classify.load_housing(str(csv), CALIFORNIA)
    np.testing.assert_allclose(X[0], [(-122.0 + 124.48) / 10.35, (37.0 - 32.53) / 9.48])
    np.testing.assert_allclose(X[2], [1.0, (33.0 - 32.53) / 9.48])  # lon -113 clamped to -114.13
    assert counts["rows_clamped_to_box"] == 1 and list(y) == [0, 1, 0]
    csv.write_text("longitude,latitude,median_house_value\n-122.0,37.0,1\n-120.0,35.0,3\n")
    np.testing.assert_allclose(classify.load_housing(str(csv), CALIFORNIA)[0][0], X[0])


def test_quantization_moves_each_point_to_its_own_regions_centre():
    X = np.random.default_rng(0).uniform(0, 1, size=(4000, 2))
    Q = classify.privatise("sldp_quantization", X, 2.0, CFG, np.random.default_rng(1))
    box = classify._regions(X, 2.0, CFG, np.random.default_rng(1))  # the same partition (same stream)
    lo, hi = box[:, [0, 2]], box[:, [1, 3]]
    assert ((X >= lo - 1e-12) & (X <= hi + 1e-12)).all()  # each point lies in its own region
    np.testing.assert_allclose(Q, (lo + hi) / 2)  # and is released as that region's centre
    assert (np.abs(Q - X) <= (hi - lo) / 2 + 1e-12).all()  # so it moves at most half ITS cell
    assert len(np.unique(Q, axis=0)) < len(X) / 4  # many points share a centre
    # power: the partition is finer than the root, so the own-cell bound is tighter than half the root
    assert np.median(hi - lo) < 0.5


def test_ldp_is_clipped_and_geoind_is_not():
    X = np.full((1000, 2), 0.5)
    L = classify.privatise("ldp", X, 0.5, CFG, np.random.default_rng(2))
    G = classify.privatise("geoind", X, 0.5, CFG, np.random.default_rng(3))
    assert L.min() >= 0 and L.max() <= 1 and (G < 0).any()


def test_housing_loader_names_the_missing_columns(tmp_path):
    bad = tmp_path / "housing.csv"
    bad.write_text("longitude,latitude\n1,2\n")
    with pytest.raises(InputError, match="median_house_value"):
        classify.load_housing(str(bad), CALIFORNIA)
    with pytest.raises(ValueError, match="unknown classification mechanism"):
        classify.privatise("magic", np.zeros((2, 2)), 1.0, CFG, np.random.default_rng(0))
