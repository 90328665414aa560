"""Unit tests of the radiomap study ([GeoDP-Radio]): geometry, model, noise, attack, training."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from locpriv.config import ConfigError
from locpriv.radiomap import scenario, validate_config
from locpriv.radiomap.geo import GeoSettings, geo_variance, objective_terms, plane_variance, solve_offset
from locpriv.radiomap.geometry import CellGrid, traverse
from locpriv.radiomap.model import hard_gain, local_gradients, smooth_gain
from locpriv.radiomap.noise import aggregate, clip, gradient_step, guarantee, noise_budget, uniform_variance, upload
from locpriv.radiomap.training import Settings, train
from locpriv.radiomap.wcl import localisation_error, wcl
from locpriv.seeding import rng

GRID = CellGrid(10, 3.0)


def small_problem(seed=1, n_users=6):
    cfg = validate_config(
        {
            "environment": {"size": 60.0, "cell": 3.0, "n_buildings": 6},
            "n_users": n_users,
            "n_stations": 30,
            "n_measurements": 25,
            "evaluation": {"stride": 2, "n_stations": 3},
        }
    )
    env = scenario.make_environment(cfg, rng(seed, "rm-test", "env"))
    links, ev = scenario.link_geometry(cfg, env)
    y, _ = scenario.measure(cfg, links, env["heights"], rng(seed, "rm-test", "y"))
    return cfg, env, scenario.problem(cfg, env, links, ev, y)


def fedavg_settings(epochs, **overrides):
    """FedAvg (no noise) on small_problem with a step size that trains it in a few epochs."""
    return Settings(
        epochs=epochs,
        eta_h=3000.0,
        eta_theta=0.08,
        clip=1.0,
        psi_scale=3.0,
        h_init=20.0,
        theta_init=(-20.0, -30.0, -20.0, -40.0),
        scheme="radio_fedavg",
        **overrides,
    )


def test_traversal_of_an_axis_parallel_link_visits_its_row_with_linear_heights():
    links = traverse(GRID, np.array([[0.5, 4.5, 0.0]]), np.array([[29.5, 4.5, 29.0]]))
    row = links.matrix.getrow(0)
    np.testing.assert_array_equal(row.indices, 1 * GRID.n + np.arange(GRID.n))
    # piece midpoints: x = 1.75 (first, partial cell), then cell centres, then 28.25 (last, partial)
    mids = np.r_[1.75, (np.arange(1, 9) + 0.5) * 3, 28.25]
    np.testing.assert_allclose(row.data, (mids - 0.5) / 29 * 29.0)


def test_traversal_matches_dense_sampling_of_random_links():
    r = rng(3, "rm-test", "links")
    a = np.column_stack([r.uniform(0, 30, (200, 2)), np.full(200, 1.5)])
    b = np.column_stack([r.uniform(0, 30, (200, 2)), np.full(200, 50.0)])
    links = traverse(GRID, a, b)
    t = np.linspace(0, 1, 20001)
    for k in range(0, 200, 17):  # spot checks against a brute-force reference
        pts = a[k, :2] + t[:, None] * (b[k, :2] - a[k, :2])
        ref = set(np.unique(GRID.cell_of(pts)))
        got = set(links.matrix.getrow(k).indices)
        assert got <= ref and len(ref - got) <= 2  # only corner touches may differ
    np.testing.assert_allclose(links.log10_distance, np.log10(np.linalg.norm(b - a, axis=1)))


def test_hard_rule_is_los_iff_every_obstacle_is_below_the_link():
    links = traverse(GRID, np.array([[0.5, 4.5, 0.0], [0.5, 4.5, 0.0]]), np.array([[29.5, 4.5, 29.0]] * 2))
    h = np.zeros(GRID.M)
    theta = np.array([-20.0, -30.0, -30.0, -40.0])
    g, los = hard_gain(links, h, theta)
    assert los.all()
    h[1 * GRID.n + 5] = 100.0
    g2, los2 = hard_gain(links, h, theta)
    assert not los2.any() and np.all(g2 < g)


def test_analytic_gradients_match_finite_differences():
    _cfg, _env, pb = small_problem()
    r = rng(5, "rm-test", "point")
    h = r.uniform(0, 40, pb.centres.shape[0])
    theta = np.array([-21.0, -29.0, -31.0, -45.0])
    scale = 3.0
    _, gh, gt = local_gradients(pb.links, pb.user, pb.y, h, theta, scale, pb.n_users)

    def loss(hh, th):
        return local_gradients(pb.links, pb.user, pb.y, hh, th, scale, pb.n_users)[0]

    eps = 1e-5
    cells = np.argsort(-np.abs(gh).sum(axis=0))[:15]  # cells that carry gradient
    for m in cells:
        e = np.zeros_like(h)
        e[m] = eps
        np.testing.assert_allclose(
            (loss(h + e, theta) - loss(h - e, theta)) / (2 * eps), gh[:, m], rtol=1e-5, atol=1e-8
        )
    for k in range(4):
        e = np.zeros(4)
        e[k] = eps
        np.testing.assert_allclose(
            (loss(h, theta + e) - loss(h, theta - e)) / (2 * eps), gt[:, k], rtol=1e-5, atol=1e-7
        )


def test_smooth_model_tends_to_the_hard_rule_as_the_logistic_sharpens():
    cfg, env, pb = small_problem()
    theta = np.asarray(cfg["channel"]["theta_true"])
    hard, _ = hard_gain(pb.eval_links, env["heights"], theta)
    soft, _, x = smooth_gain(pb.eval_links, env["heights"], theta, 1e-3)
    clear = np.abs(x).min() if x.size else 1.0
    assert clear > 0  # no link grazes an obstacle top exactly
    np.testing.assert_allclose(soft, hard, atol=1e-6)


def test_clipping_bounds_the_norm_and_leaves_small_gradients_alone():
    g = np.array([[3.0, 4.0], [0.3, 0.4]])
    gbar, was = clip(g, 1.0)
    np.testing.assert_allclose(np.linalg.norm(gbar, axis=1), [1.0, 0.5])
    np.testing.assert_array_equal(was, [True, False])


def test_water_filling_meets_the_budget_to_1e_9_from_any_start():
    r = rng(7, "rm-test", "budget")
    g2 = r.exponential(1e-4, (20, 500)) * (r.random((20, 500)) < 0.4)
    level = r.normal(0, 1e-4, (20, 500))
    for mu in (0.5, 1.0, 50.0):
        budget = mu * g2.sum(axis=1)
        for start in (None, np.full(20, -1.0), np.full(20, 1.0), r.normal(0, 1e-4, 20)):
            b = solve_offset(level - g2, budget, start)
            spent = np.maximum(0, level + b[:, None] - g2).sum(axis=1)
            np.testing.assert_allclose(spent, budget, rtol=1e-9, atol=0)


@pytest.mark.parametrize("calibration", ["clip", "paper"])
@pytest.mark.parametrize("mu, rho", [(1.0, 1.0), (10.0, 50.0), (50.0, 0.0)])
def test_geo_allocation_is_nonnegative_and_spends_exactly_the_budget(mu, rho, calibration):
    r = rng(8, "rm-test", "geo")
    grid = CellGrid(20, 3.0)
    users = r.uniform(10, 50, (8, 2))
    d = np.linalg.norm(grid.centres()[None] - users[:, None], axis=2)
    g = np.exp(-d / 8) * r.normal(1, 0.3, d.shape)
    gbar, _ = clip(g, 1.0)
    budget = noise_budget(gbar, mu, 1.0, calibration)
    s2, info = geo_variance(gbar, budget, grid.centres(), users, grid.size, rho, GeoSettings())
    assert np.all(s2 >= 0)
    np.testing.assert_allclose(s2.sum(axis=1), budget, rtol=1e-9)
    assert np.all(np.isfinite(info["J"]))


def test_geo_allocation_pulls_the_centroid_further_than_uniform_noise():
    # Theorem 2: with rho = 0 (P alone) the aligned plane enlarges the attacker's expected error
    r = rng(9, "rm-test", "align")
    grid = CellGrid(30, 3.0)
    users = r.uniform(20, 70, (10, 2))
    d = np.linalg.norm(grid.centres()[None] - users[:, None], axis=2)
    gbar, _ = clip(np.exp(-d / 6), 1.0)
    coords, p = grid.centres() / grid.size - 0.5, users / grid.size - 0.5
    budget = noise_budget(gbar, 10.0, 1.0, "clip")
    P_geo = objective_terms(
        gbar**2, geo_variance(gbar, budget, grid.centres(), users, grid.size, 0.0, GeoSettings())[0], coords, p
    )[0]
    P_uni = objective_terms(gbar**2, uniform_variance(budget, grid.M), coords, p)[0]
    assert np.all(P_geo > P_uni)


def test_uniform_noise_energy_follows_the_budget_chi_square():
    # sum_m n_m^2 / sigma^2 ~ chi^2_M; check every user's draw at alpha = 1e-3 (two-sided, Bonferroni)
    r = rng(10, "rm-test", "chi2")
    gbar = r.normal(0, 1, (5, 400))
    C = float(np.linalg.norm(gbar, axis=1).max())
    budget = noise_budget(gbar, 3.0, C, "clip")
    s2 = uniform_variance(budget, 400)
    np.testing.assert_allclose(s2.sum(axis=1), 3.0 * C * C)
    n = upload(np.zeros_like(gbar), s2, C, r)  # the library's noise: discrete Gaussian on the grid
    step = gradient_step(C, 400)
    assert np.array_equal(n / step, np.rint(n / step))  # every released value is a grid point
    lo, hi = stats.chi2.ppf([1e-3 / 10, 1 - 1e-3 / 10], df=400)
    q = (n**2 / s2).sum(axis=1)
    assert np.all((q > lo) & (q < hi))
    # power: noise with 2x the variance is flagged for every user: q ~ 2 chi^2_400, mean 800, sd 57, against
    # an upper bound near 514 (each user misses with probability ~2e-7; at 1.5x it would be ~2 %)
    q_wide = (upload(np.zeros_like(gbar), 2.0 * s2, C, r) ** 2 / s2).sum(axis=1)
    assert np.all(q_wide > hi)


def test_spatial_variance_closed_form_matches_monte_carlo():
    # V (eq. 36) in closed form vs the mean of R sample variances; bound 4 standard errors
    r = rng(11, "rm-test", "V")
    g = r.normal(0, 1, (1, 50))
    s2 = r.uniform(0, 2, (1, 50))
    _, V = objective_terms(g**2, s2, np.zeros((50, 2)), np.zeros((1, 2)))
    R = 20000
    X = (g + np.sqrt(s2) * r.standard_normal((R, 50))) ** 2
    sv = X.var(axis=1)
    assert abs(sv.mean() - V[0]) < 4 * sv.std(ddof=1) / np.sqrt(R)


@pytest.mark.parametrize("nu", [1, 2, 5, 10, "inf"])
def test_wcl_on_a_gradient_peaked_at_a_known_cell_returns_that_cell(nu):
    grid = CellGrid(20, 3.0)
    c = grid.centres()
    targets = np.array([7 * 20 + 9, 12 * 20 + 5])
    d = np.linalg.norm(c[None] - c[targets][:, None], axis=2)
    G = np.maximum(0, 1 - d / 7.0) * np.array([[1.0], [-2.0]])  # symmetric, compact, either sign
    np.testing.assert_allclose(wcl(G, c, nu), c[targets], atol=1e-9)
    np.testing.assert_allclose(localisation_error(G, c, c[targets], nu), 0, atol=1e-9)


def test_training_without_noise_decreases_the_loss():
    _cfg, _env, pb = small_problem()
    s = fedavg_settings(15)
    hist = train(pb, s, rng(1, "rm-test", "train"), keep_epochs=[1, 15])
    assert hist.loss[-1] < hist.loss[0]
    assert hist.mae[-1] < hist.mae[0]
    assert set(hist.uploads) == {1, 15}
    again = train(pb, s, rng(1, "rm-test", "train"), keep_epochs=[1, 15])
    np.testing.assert_array_equal(again.heights[-1], hist.heights[-1])


def test_guarantees_are_stated_and_only_uniform_noise_calibrated_to_the_clip_bound_has_one():
    assert guarantee("radio_fedavg", 0, 100, 1e-5, 10, "frozen", "clip")["epsilon"] is None
    assert guarantee("radio_geo", 10, 100, 1e-5, 10, "frozen", "clip")["epsilon"] is None
    e1 = guarantee("radio_uniform", 1.0, 100, 1e-5, 10, "frozen", "clip")["epsilon"]
    e50 = guarantee("radio_uniform", 50.0, 100, 1e-5, 10, "frozen", "clip")["epsilon"]
    assert 0 < e50 < e1 < np.inf
    # the paper's printed budget mu ||g_bar||^2 sets the noise by the user's own data: nothing holds
    paper = guarantee("radio_uniform", 50.0, 100, 1e-5, 10, "frozen", "paper")
    assert paper["epsilon"] is None and "own gradient" in paper["note"]


def test_uniform_guarantee_uses_sensitivity_2c_with_no_gate_and_needs_frozen_theta():
    """Local model: L2 sensitivity 2C, noise std sqrt(mu/M) C, so rho = T (2C)^2 / (2 mu C^2 / M) = 2 T M / mu,
    times (1 + 2^-20)^2 for rounding the uploads to the grid (sqrt(M) step <= 2C / 2^20); nothing about the
    data (such as how many users were clipped) enters the record."""
    mu, M, T, delta = 10.0, 100, 10, 1e-5
    g = guarantee("radio_uniform", mu, M, delta, T, "frozen", "clip")
    rho = 2 * T * M / mu * (1 + 2**-20) ** 2
    assert np.sqrt(M) * gradient_step(1.0, M) <= 2.0 / 2**20
    assert g["epsilon"] == pytest.approx(rho + 2 * np.sqrt(rho * np.log(1 / delta)))
    assert "local" in g["relation"] and g["delta"] == delta
    # the issue's setting (M = 16, mu = 1000, one epoch): the epsilon the audit test holds the mechanism to
    issue = guarantee("radio_uniform", 1000.0, 16, 1e-5, 1, "frozen", "clip")
    assert issue["epsilon"] == pytest.approx(1.246, abs=1e-3)
    # theta's gradient uploaded in the clear: nothing holds
    assert guarantee("radio_uniform", mu, M, delta, T, "learned", "clip")["epsilon"] is None


def test_frozen_theta_is_never_updated():
    _cfg, _env, pb = small_problem()
    s = fedavg_settings(3, theta="frozen")
    hist = train(pb, s, rng(1, "rm-test", "train"))
    assert all(np.array_equal(t, s.theta_init) for t in hist.theta)
    learned = train(pb, Settings(**{**s.__dict__, "theta": "learned"}), rng(1, "rm-test", "train"))
    assert not np.array_equal(learned.theta[-1], s.theta_init)


@pytest.mark.parametrize(
    "section, key",
    [
        ({"n_users": 0}, "studies.radiomap.n_users"),
        ({"environment": {"cell": 7.0}}, "studies.radiomap.environment.cell"),
        ({"runs": {"radio_magic": {}}}, "studies.radiomap.runs.radio_magic"),
        ({"runs": {"radio_uniform": {}}}, "studies.radiomap.runs.radio_uniform"),
        ({"attack": {"epochs": [500]}}, "studies.radiomap.attack.epochs"),
        ({"attack": {"nu": [0]}}, "studies.radiomap.attack.nu"),
        ({"bogus": 1}, "studies.radiomap.bogus"),
        ({"training": {"theta": "thawed"}}, "studies.radiomap.training.theta"),
    ],
)
def test_config_errors_name_the_key(section, key):
    with pytest.raises(ConfigError, match=f"'{key}'.*allowed"):
        validate_config(section)


def test_user_with_zero_gradient_gets_its_budget_only_under_the_clip_calibration():
    grid = CellGrid(10, 3.0)
    gbar = np.zeros((2, grid.M))
    gbar[1, 37] = 0.5
    users = np.array([[5.0, 5.0], [20.0, 11.0]])
    # paper: budget mu ||g_bar||^2, so the zero-gradient user gets no noise (and no NaN)
    s2, info = geo_variance(
        gbar, noise_budget(gbar, 10.0, 1.0, "paper"), grid.centres(), users, grid.size, 1.0, GeoSettings()
    )
    assert np.all(np.isfinite(s2)) and np.all(s2[0] == 0)
    np.testing.assert_allclose(s2[1].sum(), 10.0 * 0.25, rtol=1e-9)
    # clip: mu C^2 for both, whatever their gradients
    s2, info = geo_variance(
        gbar, noise_budget(gbar, 10.0, 1.0, "clip"), grid.centres(), users, grid.size, 1.0, GeoSettings()
    )
    assert np.all(np.isfinite(info["J"]))
    np.testing.assert_allclose(s2.sum(axis=1), [10.0, 10.0], rtol=1e-9)


def test_a_runs_summary_rows_are_tidy_and_carry_its_guarantee():
    """Attack rows per (epoch, nu), training rows per epoch (nu ""); epsilon and delta from the guarantee."""
    from locpriv.radiomap.study import STUDY, run_rows

    attack = pd.DataFrame(
        {
            "epoch": np.int32(1),
            "nu": ["1.0", "1.0", "inf", "inf"],
            "user": [0, 1, 0, 1],
            "error_m": [3.0, 4.0, 1.0, np.nan],
        }
    )
    history = pd.DataFrame(
        {
            "epoch": np.arange(1, 3, dtype=np.int32),
            "mae_db": [5.0, 4.0],
            "loss": [2.0, 1.0],
            "clipped_fraction": [1.0, 1.0],
        }
    )
    run = {"scheme": "radio_uniform", "mu": 10.0, "rho": 0.0}
    rows = run_rows(run, {"epsilon": 7.5, "delta": 1e-5}, attack, history, n_users=2)
    assert list(rows.columns) == list(STUDY.columns) and set(rows["method"]) == {"radio_uniform"}
    assert (rows["epsilon"] == 7.5).all() and (rows["delta"] == 1e-5).all() and (rows["n"] == 2).all()
    rmse = rows[rows["metric"] == "wcl_rmse_m"].set_index("nu")["value"]
    assert rmse["1.0"] == pytest.approx(np.sqrt(12.5)) and rmse["inf"] == pytest.approx(1.0)
    assert rows[rows["metric"] == "wcl_no_estimate"].set_index("nu")["value"]["inf"] == 1
    assert rows[rows["metric"] == "mae_db"]["epoch"].tolist() == [1, 2]
    assert (rows[rows["metric"].isin(["mae_db", "loss", "clipped_fraction"])]["nu"] == "").all()
    none = run_rows(run, {"epsilon": None, "delta": None}, attack, history, n_users=2)
    assert none["epsilon"].isna().all() and none["delta"].isna().all()


def reference_alg1(gbar, budget, centres, users, size, rho, st: GeoSettings):
    """Alg. 1 evaluated the direct way: every J of eqs. (45)-(46) by a full water-filling and full sums."""
    g2, M = gbar**2, gbar.shape[1]
    coords, p = centres / size - 0.5, users / size - 0.5
    s = (g2.sum(axis=1) + budget) / M
    V0 = objective_terms(g2, uniform_variance(budget, M), coords, p)[1]

    def J(u, r):
        P, V = objective_terms(g2, plane_variance(g2, coords, (r * s)[:, None] * u, budget), coords, p)
        return P - rho * V / V0

    dg = (g2 @ coords) / g2.sum(axis=1)[:, None] - p
    u, r, eps = dg / np.linalg.norm(dg, axis=1)[:, None], np.full(len(g2), st.r_max), st.fd_eps
    e1, e2 = np.array([eps, 0.0]), np.array([0.0, eps])
    for _ in range(st.outer_iters):
        for _ in range(st.inner_iters):
            dr = (J(u, r + eps) - J(u, r - eps)) / (2 * eps)
            r = np.clip(r + st.step_r * dr, 0.0, st.r_max)
            if np.all(np.abs(dr) <= st.tol_r):
                break
        du = np.column_stack([(J(u + e1, r) - J(u - e1, r)) / (2 * eps), (J(u + e2, r) - J(u - e2, r)) / (2 * eps)])
        u = u + st.step_u * du
        u /= np.linalg.norm(u, axis=1)[:, None]
        if np.all(np.linalg.norm(du, axis=1) <= st.tol_u):
            break
    return plane_variance(g2, coords, (r * s)[:, None] * u, budget), r


# r ends at r_max (1, 1), at 0 (10, 50) and inside (the others): every branch of the fast path is compared
@pytest.mark.parametrize(
    "mu, rho, calibration",
    [(1.0, 1.0, "clip"), (10.0, 50.0, "clip"), (10.0, 3.0, "clip"), (50.0, 1.0, "paper"), (0.5, 100.0, "paper")],
)
def test_geo_allocation_equals_alg1_evaluated_the_direct_way(mu, rho, calibration):
    """The fast path (perturbed J from the base's moments and the cells near the boundary; rows whose
    slope did not move not re-solved) gives the allocation of the direct evaluation of every J."""
    cfg, _env, pb = small_problem(seed=4, n_users=12)
    theta = np.asarray(cfg["model"]["theta_init"], float)
    _, g, _ = local_gradients(pb.links, pb.user, pb.y, np.full(pb.centres.shape[0], 5.0), theta, 3.0, pb.n_users)
    gbar, _ = clip(g, 1.0)
    budget = noise_budget(gbar, mu, 1.0, calibration)
    fast, info = geo_variance(gbar, budget, pb.centres, pb.users, pb.size, rho, GeoSettings())
    slow, r = reference_alg1(gbar, budget, pb.centres, pb.users, pb.size, rho, GeoSettings())
    np.testing.assert_allclose(info["r"], r, rtol=1e-7, atol=1e-9)
    # The two paths round J differently (moments vs full sums, ~1e-16 |J|); a central difference with
    # fd_eps 1e-3 turns that into ~1e-13 |J| per gradient, carried through 9 steps of r and u into the
    # plane.  Measured largest gap 2.0e-11 = 1.7e-9 of the largest variance (numpy 2.4.6, scipy 1.17.1;
    # 1e-9 held with the earlier numpy): 1e-8 of the largest variance leaves a 6x margin.
    np.testing.assert_allclose(fast, slow, rtol=1e-7, atol=1e-8 * slow.max())


def test_perturbed_objective_equals_a_full_evaluation_at_the_moved_plane():
    """Plane.perturbed(d) is J at slope a + d exactly (to rounding), also when cells change side."""
    from locpriv.radiomap.geo import Cells, Objective, Plane, _reach

    r = rng(12, "rm-test", "plane")
    grid = CellGrid(15, 3.0)
    users = r.uniform(5, 40, (6, 2))
    d = np.linalg.norm(grid.centres()[None] - users[:, None], axis=2)
    gbar, _ = clip(np.exp(-d / 5) * r.normal(1, 0.5, d.shape), 1.0)
    g2, budget = gbar**2, noise_budget(gbar, 5.0, 1.0, "clip")
    cells = Cells(grid.centres(), grid.size)
    obj = Objective(cells, g2, budget, users, grid.size, 3.0)
    a = r.normal(0, 0.1, (6, 2))
    shifts = [r.normal(0, scale, (6, 2)) for scale in (1e-6, 1e-3, 3e-2)]
    plane = Plane(obj, budget)
    plane.move(a, _reach(cells, *shifts))
    changed = 0
    for shift in shifts:
        s2 = plane_from(g2, cells, a + shift, budget)
        P, V = objective_terms(g2, s2, cells.c, obj.p)
        np.testing.assert_allclose(plane.perturbed(shift), P - 3.0 * V / obj.V0, rtol=1e-10)
        changed += np.sum((s2 > 0) != (plane_from(g2, cells, a, budget) > 0))
    assert changed > 0  # power: the largest shift moves cells across the boundary


def plane_from(g2, cells, a, budget):
    return plane_variance(g2, cells.c, a, budget)


def test_aggregate_has_the_law_of_the_weighted_sum_of_the_uploads():
    """noise.aggregate (one Gaussian per cell) against sum_i w_i upload_i drawn by the client code, per cell:
    two-sample KS at alpha = 1e-3 (Bonferroni over the cells); power: 1.2x the variance is rejected."""
    r = rng(13, "rm-test", "aggregate")
    N, M, R, C = 5, 4, 20000, 1.0
    step = gradient_step(C, M)
    gbar = r.normal(0, 0.3, (N, M))
    s2 = (step * r.uniform(50, 400, (N, M))) ** 2  # 50-400 grid steps: the discrete law is smooth
    weight = r.dirichlet(np.ones(N))
    exact = np.einsum("n,rnm->rm", weight, upload(np.tile(gbar, (R, 1)), np.tile(s2, (R, 1)), C, r).reshape(R, N, M))
    fast = np.array([aggregate(gbar, s2, weight, C, r) for _ in range(R)])
    wide = np.array([aggregate(gbar, 1.2 * s2, weight, C, r) for _ in range(R)])
    for m in range(M):
        assert stats.ks_2samp(fast[:, m], exact[:, m]).pvalue > 1e-3 / M
        assert stats.ks_2samp(wide[:, m], exact[:, m]).pvalue < 1e-3 / M


def test_discrete_gaussian_is_within_w1_0_27_grid_steps_of_its_continuous_counterpart():
    """The bound noise.aggregate states: W1(N_Z(0, s^2), N(0, s^2)) = int |F_Z - F| <= 0.27 for every s
    (evaluated exactly on a fine grid of x; the supremum, 0.261, is near s = 0.5; large s tends to 1/4)."""
    worst = 0.0
    for s in np.geomspace(0.02, 50, 60):
        K = int(12 * s) + 12
        k = np.arange(-K, K + 1)
        p = np.exp(-(k**2) / (2 * s * s))
        F = np.cumsum(p / p.sum())
        x = np.linspace(-K, K, 400 * 2 * K + 1)
        Fz = F[np.clip(np.floor(x).astype(int) + K, 0, 2 * K)]
        worst = max(worst, np.trapezoid(np.abs(Fz - stats.norm.cdf(x / s)), x))
    assert 0.25 < worst <= 0.27


def test_wcl_on_stacked_epochs_equals_each_epoch_alone():
    r = rng(14, "rm-test", "stack")
    grid = CellGrid(12, 3.0)
    G = r.normal(0, 1, (3, 5, grid.M)) * (r.random((3, 5, grid.M)) < 0.3)
    users = r.uniform(0, 36, (5, 2))
    for nu in (1.0, 5.0, np.inf):
        stacked = localisation_error(G, grid.centres(), users, nu)
        for e in range(3):
            np.testing.assert_array_equal(stacked[e], localisation_error(G[e], grid.centres(), users, nu))


def test_fedavg_trajectory_does_not_depend_on_which_uploads_are_kept():
    """Without noise the aggregate of the unkept epochs is exactly the weighted sum of the uploads."""
    _cfg, _env, pb = small_problem()
    s = fedavg_settings(6)
    kept = train(pb, s, rng(1, "rm-test", "train"), keep_epochs=range(1, 7))
    none = train(pb, s, rng(1, "rm-test", "train"))
    np.testing.assert_array_equal(np.asarray(kept.heights), np.asarray(none.heights))
