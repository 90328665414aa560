"""The rff and geoind mechanisms as the workflow calls them (randomize -> partial -> density)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from locpriv import kde, mechanisms
from locpriv.domain import Domain, Grid
from locpriv.stages.run import run_seed_keys

GRID = Grid.regular(Domain(-3, 3, -3, 3), 30, 24)


def _points(n, seed=0):
    xy = np.random.default_rng(seed).normal(0, 0.7, size=(n, 2))
    return pd.DataFrame({"user": np.arange(n), "x": xy[:, 0], "y": xy[:, 1]})


def _mech(name, **given):
    return mechanisms.get(name)(**given)


def test_rff_view_is_the_compact_report_and_rebuilds_the_surface():
    mech = _mech("rff", h=0.55, B=3)
    pts = _points(40)
    view = mech.randomize(pts, rng=np.random.default_rng(1), domain=GRID)
    assert list(view.columns[:4]) == ["user", "omega_x_0", "omega_y_0", "phase_0"]
    assert len(view) == 40 and view.shape[1] == 1 + 3 * 3
    assert {"x", "y"}.isdisjoint(view.columns)
    phases = view[[f"phase_{b}" for b in range(3)]].to_numpy()
    assert (phases >= 0).all() and (phases < 2 * np.pi).all()
    # the server's reconstruction equals what the user computed from its location
    surf = mech.surfaces(view, GRID)
    omega = view[[c for c in view.columns if c.startswith("omega")]].to_numpy().reshape(40, 3, 2)
    direct = np.cos(
        np.einsum("nbk,pqk->npqb", omega, np.stack(np.meshgrid(GRID.x, GRID.y, indexing="ij"), -1))
        - np.einsum("nbk,nk->nb", omega, pts[["x", "y"]].to_numpy())[:, None, None, :]
    ).sum(-1)
    np.testing.assert_allclose(surf, direct, atol=1e-9)
    assert mech.communication(GRID) == 9


def test_rff_estimate_is_unbiased_for_the_exact_kde():
    """Mean of the RFF estimate over independent draws vs the exact KDE, CLT bound.

    Each user's surface is a sum of B cosines in [-1, 1], so a single estimate's
    variance per cell is at most 1 / (N B normaliser^2); averaging R draws, a cell's
    deviation beyond 5 standard errors has probability < 6e-7 per cell.
    """
    mech = _mech("rff", h=0.55, B=2)
    pts = _points(300)
    R = 40
    ests = np.stack(
        [mech.density(mech.partial(mech.randomize(pts, rng=r, domain=GRID), GRID), 300, GRID) for r in range(R)]
    )
    exact = kde.kde_sum(pts[["x", "y"]].to_numpy(), GRID.x, GRID.y, 0.55) / (300 * kde.normaliser(0.55))
    se = 1 / (np.sqrt(300 * 2 * R) * kde.normaliser(0.55))
    assert np.abs(ests.mean(0) - exact).max() < 5 * se


def test_rff_policy_refusal_leaves_an_empty_view_that_says_why():
    mech = _mech("rff", h=0.55, B=60)  # max_features defaults to 50
    view = mech.randomize(_points(10), rng=0, domain=GRID)
    assert view.empty and "exceeds the policy maximum" in view.attrs["refusal"]["reason"]
    too_wide = _mech("rff", h=5.0, B=1)  # far above Lemma 3's bound on a 6 x 6 box
    view = too_wide.randomize(_points(10), rng=0, domain=GRID)
    assert view.empty and "Lemma 3" in view.attrs["refusal"]["reason"]
    assert (too_wide.partial(view, GRID) == 0).all()


def test_rff_users_keep_their_frequencies_across_queries():
    """Runs differing in B or in h = (4n+1) h0 share the users' one draw (Alg. 3)."""
    run = {"dataset": "d", "mechanism": "rff", "rep": 0}
    a = _mech("rff", h=0.5, B=1, h0=0.5)
    b = _mech("rff", h=0.5, B=4, h0=0.5)
    c = _mech("rff", h=2.5, B=4, h0=0.5)
    assert run_seed_keys(run, a) == run_seed_keys(run, b) == run_seed_keys(run, c)
    pts = _points(20)
    big = Grid.regular(Domain(-30, 30, -30, 30), 10, 10)  # Lemma 3 admits h = 2.5 here
    va, vc = (m.randomize(pts, rng=7, domain=big) for m in (a, c))
    # same directions, rescaled by h0 / h = 1/5 (never redrawn)
    np.testing.assert_allclose(vc["omega_x_0"], va["omega_x_0"] / 5)
    assert run_seed_keys(run, a) != run_seed_keys(run, _mech("rff", h=0.5, B=1, h0=0.1))


def test_geoind_moves_each_user_by_planar_laplace():
    """Displacement radii ~ Gamma(2, 1/eps) up to the grid (step <= 1/(1024 eps)): KS at alpha = 1e-6."""
    mech = _mech("geoind", h=0.55, epsilon=2.0)
    pts = _points(4000)
    view = mech.randomize(pts, rng=3, domain=GRID)
    r = np.hypot(view["x"] - pts["x"], view["y"] - pts["y"])
    assert stats.kstest(r, stats.gamma(2, scale=0.5).cdf).pvalue > 1e-6
    assert (view["user"] == pts["user"]).all()
    assert mech.guarantee().epsilon == 2.0
    with pytest.raises(ValueError, match="epsilon"):
        _mech("geoind", h=0.55, epsilon=-1)


# a parameter setting each registered mechanism validates (mechanisms not listed need none)
SETTINGS = {
    "fedkde": {"h": 0.5},
    "rff": {"h": 0.5, "B": 2},
    "geoind": {"h": 0.5, "epsilon": 2.0},
    "laplace_ldp": {"h": 0.5, "epsilon": 2.0},
    "sldp": {"epsilon": 2.0},
    "privtree": {"epsilon": 2.0},
    "ldp_oue_grid": {"epsilon": 2.0},
}
FIELDS = {
    "model",
    "epsilon",
    "delta",
    "relation",
    "covers",
    "discretisation",
    "note",
    "non_private_inputs",
    "other_relations",
    "trust_model",
    "timing",
}


@pytest.mark.parametrize("name", mechanisms.names())
def test_every_mechanism_states_a_complete_guarantee(name):
    """Every record names its model, relation, coverage and discretisation; an epsilon comes with a delta."""
    cls = mechanisms.get(name)
    given = SETTINGS.get(name, {"epsilon": 2.0} if "epsilon" in cls.params else {})
    g = cls(**given).guarantee().as_dict()
    assert set(g) == FIELDS and g["trust_model"] == cls.trust_model
    assert all(isinstance(g[k], str) and g[k] for k in ("model", "relation", "covers", "discretisation"))
    if g["epsilon"] is not None:
        assert g["epsilon"] >= 0 and g["delta"] is not None and g["model"] != "none"


@pytest.mark.parametrize("name", ["geoind", "laplace_ldp"])
def test_knn_bandwidth_from_raw_locations_voids_the_guarantee(name):
    """h: knn reads every raw location: the run's record has no epsilon and names the leak."""
    mech = _mech(name, h=0.5, epsilon=2.0)  # the workflow builds the run's object with h resolved
    assert mech.run_guarantee({"h": 0.5, "epsilon": 2.0}).epsilon == 2.0
    voided = mech.run_guarantee({"h": "knn", "epsilon": 2.0})
    assert voided.epsilon is None and voided.delta is None and "knn" in voided.non_private_inputs
    assert voided.trust_model == "local"


def test_privtree_records_the_replace_one_cost_with_add_remove_beside_it():
    g = _mech("privtree", epsilon=2.0).guarantee()
    assert g.epsilon == 4.0 and g.relation.startswith("replace one user")
    assert g.other_relations == {"add/remove one user": 2.0}


def test_sldp_guarantee_follows_rule_calibration_and_threshold():
    default = _mech("sldp", epsilon=2.0)
    assert default.settings["threshold"] == 20 and default.settings["calibration"] == "sensitivity2"
    assert default.guarantee().epsilon is None  # per_child: none proven
    assert _mech("sldp", epsilon=2.0, split_rule="all_children").guarantee().epsilon == 2.0
    paper = _mech("sldp", epsilon=2.0, split_rule="all_children", calibration="paper")
    assert paper.guarantee().epsilon == 4.0  # the true cost, 2 eps per round
