import numpy as np
import pytest

from locpriv.errors import InputError
from locpriv.sldp import classify

CFG = {"threshold": 0.0, "max_depth": 8, "delta": 0.05, "delta_constant": 6.0, "split_rule": "per_child",
       "calibration": "sensitivity2"}


def test_quantization_moves_points_to_region_centres_within_half_a_cell():
    X = np.random.default_rng(0).uniform(0, 1, size=(4000, 2))
    Q = classify.privatise("sldp_quantization", X, 2.0, CFG, np.random.default_rng(1))
    assert len(np.unique(Q, axis=0)) < len(X) / 4           # many points share a centre
    assert (np.abs(Q - X) <= 0.5 + 1e-12).all()


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
