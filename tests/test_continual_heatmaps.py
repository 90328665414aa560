"""Continual heatmaps (releases mode continual, heatmaps.continual, stages.continual): the config, the ledger's
one charge for the T windows, the tree's maps and totals, and the person-level guarantee audited end to end."""

import copy

import numpy as np
import pandas as pd
import pytest

from conftest import DATA, TINY
from locpriv import config as lpconfig
from locpriv import ledger
from locpriv.audit.estimator import audit_samples
from locpriv.config import ConfigError
from locpriv.heatmaps import continual
from locpriv.heatmaps.aggregation import SecAgg
from locpriv.stages import continual as stage


def walk(mode: str = "continual", mechanisms=None, days: int = 4, per_day: int = 2) -> dict:
    """TINY on a ledgered synthetic trajectory of ``days`` daily windows, one heatmap_flat setting."""
    cfg = copy.deepcopy(TINY)
    cfg["datasets"] = {
        "walk": {
            "source": "synthetic",
            "pattern": "gauss9",
            "n_users": 200,
            "bbox": [-3, 3, -3, 3],
            "trajectory": {"days": days, "per_day": per_day},
            "simulation": False,
            "releases": {"window": "1d", "mode": mode},
        }
    }
    mechanisms = mechanisms or {"heatmap_flat": {"epsilon": 0.5, "depth": 3}}
    cfg["experiments"] = {"hm": {"datasets": ["walk"], "reps": 2, "mechanisms": mechanisms}}
    return cfg


def test_the_ledger_charges_the_tree_once_at_the_windowed_total(tmp_path):
    """T = 4 daily windows, 2 rows a person a day, epsilon 0.5 per row: window by window the ledger charges 8
    releases (2 reps x 4 windows) of 2 x 0.5 x 2 = 2 each; the continual setting is one release per rep of the
    whole tree, 4 x 2 = 8, the same person-level total (16) charged as 2 releases, not 8."""
    lines = {}
    for mode in ("windowed", "continual"):
        cfg = walk(mode)
        runs = lpconfig.check_startup(cfg, None)
        (lines[mode],) = ledger.charge_runs(cfg, runs, str(tmp_path / mode))
    assert "8 new release(s) charged; person-level epsilon 16," in lines["windowed"]
    assert "2 new release(s) charged; person-level epsilon 16," in lines["continual"]
    cfg = walk()
    plain, settings = stage.split(cfg, lpconfig.check_startup(cfg, None))
    assert plain == [] and [s.rep for s in settings] == [0, 1]
    assert settings[0].windows == tuple(f"walk.w{k:03d}" for k in range(4))
    assert ledger.continual_rows(cfg, settings[0]) == 8
    record, person = stage.record(settings[0], 8)
    assert (record.epsilon, person) == (1.0, 8.0) and "continual release over 4 windows" in record.model
    # the charge is what the run's metrics record as guarantee_epsilon_person (below) and is kept: re-run free
    cfg = walk()
    (again,) = ledger.charge_runs(cfg, lpconfig.check_startup(cfg, None), str(tmp_path / "continual"))
    assert "0 new release(s) charged; person-level epsilon 16," in again


@pytest.mark.parametrize(
    "mechanisms, words",
    [
        ({"laplace_ldp": {"epsilon": 1.0, "h": 0.5}}, ["datasets.walk.releases.mode", "heatmap_flat", "laplace_ldp"]),
        ({"heatmap_flat": {"epsilon": 1.0, "n": 100}}, ["datasets.walk.releases.mode", "n: all"]),
    ],
)
def test_a_run_without_a_continual_mode_is_refused_in_one_line(mechanisms, words):
    cfg = walk(mechanisms=mechanisms)
    with pytest.raises(ConfigError) as err:
        stage.split(cfg, lpconfig.check_startup(cfg, None))
    assert all(w in str(err.value) for w in words) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize("shard_size", [10_000, 7])
def test_maps_and_running_totals_come_from_the_nodes(shard_size):
    """Noise-free (epsilon 1e9: every draw 0), central and in shards: the leaves are the windows' counts,
    the nodes are sums of windows, and the running totals (popcount(t) nodes) are the cumulative sums."""
    gen = np.random.default_rng(1)
    windows = [gen.integers(0, 16, size=gen.integers(5, 40)) for _ in range(11)]
    windows[3] = windows[3][:0]  # a window without rows
    nodes = continual.release(windows, 2, 1e9, gen, SecAgg(shard_size=shard_size), continual.CONTINUAL)
    exact = continual.truth(windows, 2)
    assert [len(n) for n in nodes] == [11, 6, 3, 2, 1]
    assert (continual.window_maps(nodes) == exact).all() and (nodes[2][1] == exact[4:8].sum(axis=0)).all()
    assert (continual.running_totals(nodes) == np.cumsum(exact, axis=0)).all()
    flat = continual.release(windows, 2, 1e9, gen, SecAgg(shard_size=shard_size), "windowed")
    assert len(flat) == 1 and (continual.running_totals(flat) == np.cumsum(exact, axis=0)).all()


def _one_person_everywhere(tmp_path, present: bool, n: int, T: int) -> list[str]:
    """T windows of the vectorised audit: with ``present``, one user on each of the n = 4^depth pixels in every
    window (column i an independent copy of 'the person at pixel i in all T windows'); else no rows."""
    side = int(np.sqrt(n))
    ij = np.arange(n) if present else np.arange(0)
    pts = pd.DataFrame({"user": ij, "x": (ij // side + 0.5) / side, "y": (ij % side + 0.5) / side})
    paths = []
    for t in range(T):
        paths.append(str(tmp_path / f"{int(present)}-{t}.parquet"))
        pts.to_parquet(paths[-1])
    return paths


@pytest.mark.parametrize("fault", [False, True])
def test_person_level_guarantee_audited_end_to_end(tmp_path, monkeypatch, fault):
    """The DAG's stage (stages.continual.release: points files in, nodes.parquet out) for T = 4 windows, a
    person with one row in every window (c = 1, w = T) present or absent, epsilon 0.25 per row: the ledger's
    person-level claim is c T epsilon = 1 under add/remove (2 replaced).  Central (one shard), depth 8: the
    4^8 = 65,536 pixels are independent copies of the one-pixel experiment (the noise is iid over pixels and
    a pixel's nodes depend on its own counts only), so one release gives 65,536 draws of the person's 7 nodes.
    The statistic is the discrete-Laplace log-likelihood ratio / (1 / scale), clipped per node, summed (public
    post-processing).  Correct code: the lower bound stays below the claim 1 (alpha = 0.05).  Planted fault: the
    tree calibrated as if the person were in one window (each level at c epsilon_person / (L + 1) for w = 1,
    i.e. a node epsilon T = 4 times too large, true epsilon 4): refuted, bound above 1."""
    T, depth, eps = 4, 8, 0.25
    n = 4**depth
    if fault:
        monkeypatch.setattr(continual, "node_epsilon", lambda e, T, mode: e * T / continual.tree.levels(T))
    setting = stage.Setting(
        "audit", "heatmap_flat", {"n": "all", "epsilon": eps, "depth": depth, "shard_size": 10**6}, "p", 0, ("w",) * T
    )
    spec = {"source": "synthetic", "pattern": "gauss9", "n_users": n, "bbox": [0, 1, 0, 1]}

    def nodes(present: bool, seed: int) -> np.ndarray:
        out = {k: str(tmp_path / f"{k}-{int(present)}") for k in ("nodes", "maps", "metrics")}
        stage.release(
            setting=stage.as_params(setting),
            spec=spec,
            points=_one_person_everywhere(tmp_path, present, n, T),
            person_rows=T,
            seed=seed,
            out_nodes=out["nodes"],
            out_maps=out["maps"],
            out_metrics=out["metrics"],
        )
        table = pd.read_parquet(out["nodes"]).sort_values(["code", "level", "index"])
        assert len(table) == n * (2 * T - 1)
        return table["count"].to_numpy().reshape(n, 2 * T - 1), pd.read_csv(out["metrics"])

    (with_person, metrics), (without, _) = nodes(True, 1), nodes(False, 2)
    claimed = metrics["guarantee_epsilon_person"].iloc[0] / 2  # add/remove: half the replaced person's
    assert claimed == pytest.approx(1.0) and (metrics["rows"] == n).all()
    weights = np.array([1, 1, 1, 1, 2, 2, 4])  # the person's count in each node (levels 0, 1, 2)

    def llr(out):
        return np.clip(out, 0, weights).sum(axis=1, keepdims=True)

    result = audit_samples(with_person, without, stat_x=llr(with_person), stat_xp=llr(without))
    assert (result.epsilon_lb > claimed) == fault, result
    if not fault:
        assert result.epsilon_lb > 0.3, result  # power: the bound is not vacuous


@pytest.mark.workflow
@pytest.mark.heavy
def test_continual_release_runs_end_to_end_with_the_same_bytes_for_any_cores(tmp_path):
    """releases {window: 1d, mode: continual} on a 4-day trajectory: the 4 windows ingested, one tree per rep
    (2 charged, not 8), its metrics in summary/continual.csv; a second run has nothing to do; --cores 1 and 2
    give the same bytes (about 2 min
    on the shared 2-core machine, hence heavy)."""
    from conftest import run_snakemake, write_config

    outputs = []
    for cores in ("2", "1"):
        wd = tmp_path / f"cores{cores}"
        wd.mkdir()
        write_config(wd, walk())
        proc = run_snakemake(wd, "--cores", cores)
        assert "walk.json: 2 new release(s) charged; person-level epsilon 16," in proc.stdout + proc.stderr
        summary = pd.read_csv(wd / "results/summary/continual.csv")
        assert len(summary) == 8 and (summary["guarantee_epsilon_person"] == 8).all()
        outputs.append(
            {p.relative_to(wd): p.read_bytes() for p in (wd / "results/continual").rglob("*") if p.is_file()}
        )
        again = run_snakemake(wd, "--dry-run")  # cached: an unchanged setting is neither re-run nor re-charged
        assert "Nothing to be done" in again.stdout and "0 new release(s)" in again.stdout + again.stderr
    assert len(outputs[0]) == 6 and outputs[0] == outputs[1]


GEOLIFE = DATA / "geolife_beijing/geolife_beijing_1min.csv.gz"


@pytest.mark.workflow
@pytest.mark.heavy
@pytest.mark.skipif(not GEOLIFE.exists(), reason="needs the Geolife file in ../shared/data (or $LOCPRIV_DATA)")
def test_continual_release_and_linkage_on_geolife_weeks(tmp_path):
    """Geolife's first 3 weeks from 2008-10-20, a person capped at 20 rows a week: one heatmap_flat tree (central:
    one shard) and one distributed (shards of 1,000), 2 trees charged at 2 x 20 x 3 x 0.01 = 1.2 each; and the
    same weeks released window by window (laplace_ldp and privtree at person-level epsilon 20 a week) with the
    adversaries across releases (workflow/rules/linkage.smk): both attacks' summaries, their rows by k with the
    ledger's person-level epsilon after k weeks (summary/frontier_releases.csv), the exact weekly places
    recovered at least as well as a noisy map's.  A few minutes, hence heavy; the year is
    docs/results/geolife_over_time.md."""
    from conftest import run_snakemake, write_config

    geolife = {
        "source": "points",
        "path": str(GEOLIFE),
        "lonlat_bbox": [116.15, 116.60, 39.75, 40.10],
        "user_column": "user",
        "time_column": "timestamp_utc",
        "max_points_per_person": 20,
    }
    weeks = {"window": "1w", "start": "2008-10-20", "count": 3}
    cfg = copy.deepcopy(TINY)
    cfg["datasets"] = {
        "geolife": {**geolife, "releases": {**weeks, "mode": "continual"}},
        "geolife_weekly": {**geolife, "knn_k": 50, "releases": weeks},
    }
    mechanisms = {"heatmap_flat": {"epsilon": 0.01, "depth": 5, "shard_size": [10**6, 1000]}}
    weekly = {"laplace_ldp": {"n": "all", "h": 1000, "epsilon": 1.0}, "privtree": {"epsilon": 0.5}}
    cfg["experiments"] = {
        "weeks": {"datasets": ["geolife"], "reps": 1, "mechanisms": mechanisms},
        "weekly": {"datasets": ["geolife_weekly"], "reps": 2, "mechanisms": weekly},
    }
    wd = tmp_path / "wd"
    wd.mkdir()
    write_config(wd, cfg)
    proc = run_snakemake(wd, "--cores", "2")
    assert "geolife.json: 2 new release(s) charged; person-level epsilon 2.4," in proc.stdout + proc.stderr
    summary = pd.read_csv(wd / "results/summary/continual.csv")
    assert len(summary) == 6 and np.allclose(summary["guarantee_epsilon_person"], 1.2)  # Series == approx is False
    assert (summary["rows"] > 0).all()
    by_k = pd.read_csv(wd / "results/summary/frontier_releases.csv")
    curves = by_k[(by_k["attack"] == "cross_release_bayes_informed") & (by_k["metric"] == "expected_error_fraction")]
    assert sorted(curves["k"].unique()) == [0, 1, 2, 3]
    assert (curves["guarantee_epsilon_person"] == 20 * curves["k"]).all()
    assert np.allclose(curves.loc[curves["k"] == 0, "mean"], 1.0)
    found = by_k[(by_k["attack"] == "trajectory_recovery") & (by_k["metric"] == "accuracy")].set_index("mechanism")
    assert set(found.index) == {"exact", "laplace_ldp", "privtree"} and (found["k"] == 3).all()
    assert found.loc["exact", "mean"] >= found.loc["laplace_ldp", "mean"]
