import numpy as np
import pytest

from locpriv import kde
from locpriv.deconv.kernels import gaussian_cut
from locpriv.seeding import rng


def direct_sum(points, gx, gy, h):
    """O(N P Q) reference: every kernel evaluated at every grid point."""
    X, Y = np.meshgrid(gx, gy, indexing="ij")
    d2 = (X[None] - points[:, 0, None, None]) ** 2 + (Y[None] - points[:, 1, None, None]) ** 2
    return np.exp(-d2 / (2 * h * h)).sum(0)


def test_separable_sum_equals_direct_evaluation():
    r = rng(1, "kde-test")
    pts = r.normal(size=(300, 2))
    gx, gy = np.linspace(-3, 3, 17), np.linspace(-2, 2.5, 13)
    expect = direct_sum(pts, gx, gy, 0.4)
    got = kde.kde_sum(pts, gx, gy, 0.4, chunk=64)  # several chunks and a ragged last one
    assert np.max(np.abs(got - expect)) <= 1e-10 * np.max(expect)


def test_chunk_size_does_not_change_result_beyond_rounding():
    pts = rng(2, "kde-test").normal(size=(1000, 2))
    g = np.linspace(-2, 2, 21)
    a, b = kde.kde_sum(pts, g, g, 0.3, chunk=7), kde.kde_sum(pts, g, g, 0.3, chunk=5000)
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_user_surfaces_sum_to_aggregate():
    pts = rng(3, "kde-test").normal(size=(40, 2))
    g = np.linspace(-2, 2, 11)
    np.testing.assert_allclose(kde.kernel_surfaces(pts, g, g, 0.5).sum(0), kde.kde_sum(pts, g, g, 0.5), rtol=1e-12)


def test_normalised_kde_integrates_to_one():
    pts = np.zeros((1, 2))
    g = np.linspace(-5, 5, 401)
    dens = kde.kde_sum(pts, g, g, 0.5) / kde.normaliser(0.5)
    assert abs(dens.sum() * (g[1] - g[0]) ** 2 - 1) < 1e-6


def test_knn_bandwidth_matches_brute_force():
    pts = rng(4, "kde-test").normal(size=(500, 2))
    k = 20
    h = kde.knn_bandwidth(pts, k, rng(5, "knn"), sample_fraction=0.1)
    idx = rng(5, "knn").choice(500, size=50, replace=False)
    d = np.sqrt(((pts[idx, None, :] - pts[None, :, :]) ** 2).sum(-1))
    expect = np.sort(d, axis=1)[:, k].mean()  # column 0 is the point itself
    assert h == pytest.approx(expect, rel=1e-12)


def test_knn_rejects_k_not_below_n():
    with pytest.raises(ValueError, match="knn_k"):
        kde.knn_bandwidth(np.zeros((10, 2)), 10, rng(0, "x"))


def test_bandwidth_must_be_positive():
    with pytest.raises(ValueError, match="bandwidth"):
        kde.kde_sum(np.zeros((1, 2)), np.arange(3.0), np.arange(3.0), 0.0)


def dense_sum(points, gx, gy, h, b=(0.0, 0.0)):
    """The dense separable form (every factor entry over the whole grid), no cut."""
    return kde.kernel_factor(points[:, 0], gx, h, b[0]).T @ kde.kernel_factor(points[:, 1], gy, h, b[1])


@pytest.mark.parametrize("h", [0.01, 0.024, 0.08, 0.3, 2.4])  # h/l from 0.001 to 0.3, and below a grid step
@pytest.mark.parametrize("b", [(0.0, 0.0), (0.1, 0.05)])  # plain and deconvoluting kernel
@pytest.mark.parametrize("regular", [True, False])  # recurrence and per-entry factors
def test_tiled_sum_equals_dense_sum(h, b, regular):
    r = rng(6, "kde-test", h, b[0], regular)
    pts = np.concatenate(
        [
            r.normal(size=(3000, 2)) * 1.5,  # some beyond the grid,
            r.uniform(-40, 40, size=(50, 2)),
        ]
    )  # some far beyond any cut
    gx = np.linspace(-4, 4, 200) if regular else np.sort(r.uniform(-4, 4, 61))
    gy = np.linspace(-3, 5, 150) if regular else np.sort(r.uniform(-3, 5, 47))
    expect = dense_sum(pts, gx, gy, h, b)
    got = kde.kde_sum(pts, gx, gy, h, chunk=700, laplace_b=b)  # chunks cut through tiles
    assert np.max(np.abs(got - expect)) <= 1e-12 * np.max(np.abs(expect))


# one segment of 200 rows ... many short ones; 0.186: a shift of 128 rows, where r^128 would overflow at |v| = 30
@pytest.mark.parametrize("d", [0.0168, 0.186, 0.5, 1.675, 4.0])
def test_geometric_factor_rows_are_the_gaussian_to_2e13(d):
    """The recurrence's rows times its scale equal exp(-u^2/2) entry by entry (the docstring's bound;
    np.exp's own reference carries about u^2/2 ulps, ~6e-14 at |u| = 24, so the bound is not tighter),
    over every v that factors() lets through (every |u| <= SAFE_U), both ends included."""
    width = min(200, int(kde.SAFE_U / d))
    v = np.r_[
        -kde.SAFE_U, kde.SAFE_U - width * d, rng(9, "kde-test", d).uniform(-kde.SAFE_U, kde.SAFE_U - width * d, 500)
    ]
    rows, scale = kde._gaussian_rows(v, d, width)
    expect = np.exp(-0.5 * np.add.outer(d * np.arange(width), v) ** 2)
    assert np.isfinite(rows).all() and rows.min() >= np.finfo(float).tiny  # normal floats only
    np.testing.assert_allclose(rows * scale[:, None], expect, rtol=2e-13, atol=0)


@pytest.mark.parametrize("h", [0.01, 0.024, 0.08, 2.4])  # h/l 0.00125 ... 0.3 on the grid below
@pytest.mark.parametrize("b", [(0.0, 0.0), (0.1, 0.05)])
def test_factors_kde_sum_multiplies_are_never_subnormal(h, b, monkeypatch):
    """Every factor entry and row scale kde_sum feeds its GEMMs is 0 or a normal float, and finite.

    Points far beyond the grid and h below a grid step drive |u| up to hundreds, where an uncut
    exp(-u^2/2) is subnormal; the smallest nonzero entry seen shows the check reaches the tail."""
    seen = []
    factors = kde._Axis.factors

    def spy(self, *args, **kwargs):
        f, scale = factors(self, *args, **kwargs)
        seen.extend([f.ravel().copy()] + ([] if scale is None else [scale]))
        return f, scale

    monkeypatch.setattr(kde._Axis, "factors", spy)
    r = rng(10, "kde-test", h, b[0])
    pts = np.concatenate([r.normal(size=(2000, 2)) * 1.5, r.uniform(-40, 40, size=(50, 2))])
    kde.kde_sum(pts, np.linspace(-4, 4, 200), np.linspace(-3, 5, 150), h, chunk=700, laplace_b=b)
    entries = np.abs(np.concatenate(seen))
    assert np.isfinite(entries).all()
    nonzero = entries[entries != 0]
    assert nonzero.min() >= np.finfo(float).tiny
    assert nonzero.min() < 1e-12  # power: the factors do reach far into the kernel's tail


@pytest.mark.parametrize("b", [(0.0, 0.0), (0.02, 0.01)])  # plain and deconvoluting kernel
def test_error_is_within_the_stated_tail_bound_and_the_bound_bites(b, monkeypatch):
    """The module docstring's bound: at each grid node |kde_sum - exact| <= TAIL * peak per point
    whose kernel is cut there (peak (1 + c_x)(1 + c_y)).  One point at a time, so its tile is its
    own window and the cut decides alone; at 40 random offsets some node falls just beyond the cut
    (plain kernel: the worst dropped term is 0.996 TAIL, so the bound is tight).
    Power: the same check with the cut 0.5 narrower must fail (dropped terms up to ~40x TAIL)."""
    g, h = np.linspace(-1, 1, 101), 0.05
    pts = rng(11, "kde-test", b[0]).uniform(-0.5, 0.5, size=(40, 2))
    peak = (1 + (b[0] / h) ** 2) * (1 + (b[1] / h) ** 2)

    def worst():
        return max(
            np.abs(kde.kde_sum(p[None], g, g, h, laplace_b=b) - dense_sum(p[None], g, g, h, b)).max() for p in pts
        )

    assert worst() <= kde.TAIL * peak
    monkeypatch.setattr(kde._Axis, "cut", property(lambda self: gaussian_cut(self.c, kde.TAIL) - 0.5))
    assert worst() > kde.TAIL * peak


def test_single_grid_line_equals_dense_sum():
    """A grid with one line on an axis (a 1-D slice, as the RFF illustration draws) has no step."""
    pts = rng(6, "kde-test", "line").normal(size=(500, 2))
    gx, gy = np.array([0.3]), np.linspace(-3, 3, 40)
    expect = dense_sum(pts, gx, gy, 0.2)
    assert np.max(np.abs(kde.kde_sum(pts, gx, gy, 0.2) - expect)) <= 1e-12 * expect.max()


def test_tiled_sum_without_reachable_points_is_zero():
    g = np.linspace(0, 1, 20)
    assert not kde.kde_sum(np.array([[50.0, 0.5], [0.5, -50.0]]), g, g, 0.05).any()
    assert not kde.kde_sum(np.zeros((0, 2)), g, g, 0.05).any()


@pytest.mark.parametrize("c", [0.0, 0.2, 5.0, 400.0])
def test_cut_drops_less_than_tail_of_the_peak(c):
    """|K_hat(u)| <= TAIL K_hat(0) beyond the cut, checked on a fine grid of u (peak at u = 0)."""
    cut = gaussian_cut(c, kde.TAIL)
    u = np.linspace(cut, cut + 30, 30001)
    tail = np.abs(kde.kernel_factor(np.zeros(1), u, 1.0, laplace_b=np.sqrt(c))[0])
    peak = kde.kernel_factor(np.zeros(1), np.linspace(-cut, cut, 20001), 1.0, laplace_b=np.sqrt(c))[0]
    assert np.abs(peak).max() == pytest.approx(1 + c)
    assert tail.max() <= kde.TAIL * (1 + c)
    # and the cut is not wastefully wide: just inside it the bound is not yet met
    inside = np.linspace(cut - 0.3, cut - 0.2, 11)
    assert np.abs(kde.kernel_factor(np.zeros(1), inside, 1.0, laplace_b=np.sqrt(c))[0]).max() > kde.TAIL * (1 + c)


def test_surfaces_are_cut_and_never_subnormal():
    g = np.linspace(-4, 4, 120)
    s = kde.kernel_surfaces(np.array([[0.0, 0.0], [3.9, -3.9]]), g, g, 0.1)
    nonzero = np.abs(s[s != 0])
    assert nonzero.min() >= np.finfo(float).tiny
    np.testing.assert_allclose(
        s.sum(0), dense_sum(np.array([[0.0, 0.0], [3.9, -3.9]]), g, g, 0.1), rtol=0, atol=kde.TAIL * 2
    )


@pytest.mark.parametrize("h", [0.08, 0.3])
def test_binned_sum_is_close_to_exact_and_converges(h):
    """Linear binning errs O((step / refine / h)^2) of the peak; refining the bins 2x cuts it ~4x."""
    pts = rng(7, "kde-test").normal(size=(20000, 2))
    g = np.linspace(-4, 4, 100)
    exact = kde.kde_sum(pts, g, g, h)
    err = {m: np.abs(kde.kde_binned(pts, g, g, h, refine=m) - exact).max() / exact.max() for m in (2, 4)}
    step = g[1] - g[0]
    assert err[4] <= (step / 4 / h) ** 2  # the second-order bound with constant 1
    assert err[4] < err[2] / 2.5  # and it is second order, not luck
    assert abs(kde.kde_binned(pts, g, g, h).sum() / exact.sum() - 1) < 1e-3


def test_binned_rejects_irregular_grid():
    with pytest.raises(ValueError, match="regular grids"):
        kde.kde_binned(np.zeros((3, 2)), np.array([0.0, 1.0, 3.0]), np.arange(3.0), 0.5)


# ---- the `kde: exact | binned` option of the density mechanisms ------------------------------------

KDE_MECHANISMS = ("fedkde", "geoind", "laplace_ldp")


def _default_config():
    from pathlib import Path

    import yaml

    return yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())


def _runs(cfg):
    from locpriv.config import expand_runs

    return {run.path: run.params for run in expand_runs(cfg)}


def _with_kde(cfg, value):
    import copy

    cfg = copy.deepcopy(cfg)
    for exp in cfg["experiments"].values():
        for name in KDE_MECHANISMS:
            if name in exp["mechanisms"]:
                exp["mechanisms"][name] = {**(exp["mechanisms"][name] or {}), "kde": value}
    return cfg


def test_kde_option_at_its_default_keeps_every_run_path_and_parameter():
    """The default config names no `kde`; writing `kde: exact` changes no run (path, seeds, tables)."""
    cfg = _default_config()
    default = _runs(cfg)
    assert any(f"/{m}/" in path for path in default for m in KDE_MECHANISMS)  # the check has runs to bite on
    assert not any("kde~" in path or "kde" in params for path, params in default.items())
    assert _runs(_with_kde(cfg, "exact")) == default


def test_kde_binned_gives_distinct_paths_and_a_mixed_list_keeps_the_exact_ones():
    cfg = _default_config()
    default = _runs(cfg)
    binned = {p: v for p, v in _runs(_with_kde(cfg, "binned")).items() if v.get("kde") == "binned"}
    assert binned and all("kde~binned" in p and p not in default for p in binned)
    both = _runs(_with_kde(cfg, ["exact", "binned"]))
    assert set(default) <= set(both) and set(binned) <= set(both)  # no 'kde~nan' from a mixed grid
    assert len(both) == len(default) + len(binned)


def test_kde_binned_rejects_unknown_value():
    from locpriv.config import ConfigError, expand_runs

    with pytest.raises(ConfigError, match=r"fedkde\.kde.*allowed: one of \['exact', 'binned'\]"):
        expand_runs(_with_kde(_default_config(), "fft"))


@pytest.mark.parametrize("name", ["fedkde", "laplace_ldp"])
def test_kde_binned_partial_is_within_the_binning_bound_of_exact(name):
    """Same view, both server estimators: |binned - exact| <= (fine step / h)^2 of the peak (refine 4)."""
    import pandas as pd

    from locpriv import mechanisms
    from locpriv.domain import Domain, Grid

    grid = Grid.regular(Domain(-4.0, 4.0, -4.0, 4.0), 80, 80)
    xy = rng(8, "kde-test", name).normal(size=(20000, 2))
    view = pd.DataFrame({"user": np.arange(len(xy)), "x": xy[:, 0], "y": xy[:, 1]})
    cls = mechanisms.get(name)
    base = {"h": 0.4, "epsilon": 4.0, "estimator": "naive"} if name == "laplace_ldp" else {"h": 0.4}
    exact = cls(**base).partial(view, grid)
    binned = cls(**base, kde="binned").partial(view, grid)
    np.testing.assert_array_equal(exact, cls(**base, kde="exact").partial(view, grid))  # absent = the default
    err = np.abs(binned - exact).max() / exact.max()
    step = grid.x[1] - grid.x[0]
    assert 0 < err <= (step / 4 / 0.4) ** 2  # binned, and within its second-order bound
