import numpy as np
import pytest

from locpriv.errors import InputError
from locpriv.sldp import classify

CFG = {"threshold": 0.0, "max_depth": 8, "delta": 0.05, "delta_constant": 6.0, "split_rule": "per_child",
       "calibration": "sensitivity2"}


def test_quantization_moves_each_point_to_its_own_regions_centre():
    X = np.random.default_rng(0).uniform(0, 1, size=(4000, 2))
    Q = classify.privatise("sldp_quantization", X, 2.0, CFG, np.random.default_rng(1))
    box = classify._regions(X, 2.0, CFG, np.random.default_rng(1))   # the same partition (same stream)
    lo, hi = box[:, [0, 2]], box[:, [1, 3]]
    assert ((X >= lo - 1e-12) & (X <= hi + 1e-12)).all()          # each point lies in its own region
    np.testing.assert_allclose(Q, (lo + hi) / 2)                  # and is released as that region's centre
    assert (np.abs(Q - X) <= (hi - lo) / 2 + 1e-12).all()         # so it moves at most half ITS cell
    assert len(np.unique(Q, axis=0)) < len(X) / 4                 # many points share a centre
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
        classify.load_housing(str(bad))
    with pytest.raises(ValueError, match="unknown classification mechanism"):
        classify.privatise("magic", np.zeros((2, 2)), 1.0, CFG, np.random.default_rng(0))
