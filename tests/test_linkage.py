"""The adversaries across releases: the cross-release Bayes adversary (adversary.linkage) and Xu et al.'s
trajectory recovery from aggregate counts (adversary.trajectory_recovery).  Small synthetic, seconds."""

import copy
from collections import namedtuple

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import TINY, run_snakemake, write_config
from locpriv import config as lpconfig
from locpriv.adversary import bayes, likelihoods, linkage
from locpriv.adversary import trajectory_recovery as tr
from locpriv.datasets import windows
from locpriv.domain import Domain, Grid
from locpriv.seeding import rng
from locpriv.stages import linkage as stage

GRID = Grid.regular(Domain(-3, 3, -3, 3), 24, 20)


def laplace_windows(home: np.ndarray, windows: int, per_window: int, scale: float, key: str):
    """Per window: each person's product-Laplace reports (per_window rows at home), their log-likelihood."""
    gen = rng(3, "linkage test", key)
    owner = np.repeat(np.arange(len(home)), per_window)
    for _ in range(windows):
        reports = home[owner] + gen.laplace(0.0, scale, (len(owner), 2))
        per_row = likelihoods.product_laplace_logpdf(reports, GRID, (scale, scale))
        yield bayes.person_log_likelihoods(
            lambda rows, per_row=per_row: per_row[rows], owner, len(home), np.ones(GRID.shape, bool), 64
        )[0]


def test_cross_release_error_decreases_with_releases():
    """Persons at a fixed home, one product-Laplace report (scale 2, i.e. epsilon 0.5 per axis) per window, T = 8.
    A posterior from k independent reports concentrates like scale / sqrt(k): the stated test is that the mean
    expected error after 8 releases is below 0.6 of that after 1 (theory ~0.35 once the prior no longer
    dominates), with the per-person decrease significant (paired one-sided t-test, alpha = 0.05), that the
    error after 0 releases is the prior's (fraction 1), and that exposure rises."""
    prior = bayes.prior("population", np.ones(GRID.shape))
    home_rows = rng(3, "homes").uniform(-2.5, 2.5, (200, 2))
    home = linkage.home_cells(home_rows, np.arange(200), 200, GRID)
    per_person = linkage.curve(prior, laplace_windows(home, 8, 1, 2.0, "a"), GRID, home, r=0.75)
    curve = linkage.summarise(per_person).set_index("k")
    assert curve.loc[0, "expected_error_fraction"] == pytest.approx(1.0)
    assert curve.loc[8, "expected_error"] < 0.6 * curve.loc[1, "expected_error"], curve
    first, last = (per_person[per_person["k"] == k]["expected_error"].to_numpy() for k in (1, 8))
    assert stats.ttest_rel(first, last, alternative="greater").pvalue < 0.05
    assert curve.loc[8, "exposed"] > curve.loc[1, "exposed"]
    assert list(curve.columns) == linkage.CURVE_COLUMNS[1:]


def test_home_cell_is_the_most_frequent():
    xy = np.array([[0.1, 0.1], [2.0, 2.0], [2.01, 2.02], [-1.0, -1.0]])
    home = linkage.home_cells(xy, np.array([0, 0, 0, 1]), 2, GRID)
    i, j = likelihoods.cell_of(np.array([[2.0, 2.0], [-1.0, -1.0]]), GRID)
    assert np.allclose(home, np.stack([GRID.x[i], GRID.y[j]], axis=1))
    with pytest.raises(ValueError, match="no row in any window"):
        linkage.home_cells(xy, np.array([0, 0, 0, 0]), 2, GRID)


# ---- trajectory recovery -------------------------------------------------------------------------


def separated_walks(persons: int, slots: int, key: str):
    """Each person moves among 3 cells of its own block of the grid (blocks far apart): (N, T) cell indices."""
    gen = rng(5, "recovery test", key)
    cells = GRID.shape[0] * GRID.shape[1]
    blocks = np.linspace(0, cells - 3, persons).astype(int)
    return blocks[:, None] + gen.integers(0, 3, (persons, slots)), cells


def table(paths: np.ndarray, cells: int) -> np.ndarray:
    return np.stack([np.bincount(paths[:, t], minlength=cells) for t in range(paths.shape[1])])


def centres():
    x, y = np.meshgrid(GRID.x, GRID.y, indexing="ij")
    return np.stack([x.ravel(), y.ravel()], axis=1)


def test_exact_aggregates_of_separated_persons_are_recovered():
    """8 persons, each moving inside its own corner of the map over 3 days of 4 slots: exact counts give every
    trajectory back (accuracy 1), and the recovered ones are as unique as the true ones."""
    paths, cells = separated_walks(8, 12, "exact")
    starts = pd.date_range("2026-01-05", periods=12, freq="6h", tz="UTC")
    night, day = tr.slot_calendar(starts, [0, 6])
    assert night.tolist() == [True, False, False, False] * 3 and day.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    recovered = tr.recover(table(paths, cells), centres(), night, day)
    result = tr.evaluate(recovered, paths, centres(), [1, 3])
    assert result["accuracy"] == 1.0 and result["recovery_error"] == 0.0
    assert result["identified_3"] == result["true_uniqueness_3"] == result["uniqueness_3"]


def test_noisy_aggregates_at_small_epsilon_recover_no_more_than_chance():
    """The same persons' counts with Laplace noise of scale 2 / epsilon per count (a person moves one count:
    L1 sensitivity 2 under replace-one), epsilon 0.05 per slot: the accuracy falls to that of an uninformative
    release (uniform counts), within 0.1 over 20 replications (measured: 0.008 against 0.05, standard
    deviations 0.013 and 0.018), while the exact counts give 1 (the power check)."""
    starts = pd.date_range("2026-01-05", periods=8, freq="6h", tz="UTC")
    night, day = tr.slot_calendar(starts, [0, 6])
    noisy, chance = [], []
    for rep in range(20):
        paths, cells = separated_walks(8, 8, f"noisy{rep}")
        counts = table(paths, cells) + rng(5, "noise", rep).laplace(0.0, 2 / 0.05, (8, cells))
        for out, release in ((noisy, counts), (chance, np.zeros_like(counts))):
            recovered = tr.recover(tr.to_persons(release, 8), centres(), night, day)
            out.append(tr.evaluate(recovered, paths, centres(), [1])["accuracy"])
    assert np.mean(noisy) < np.mean(chance) + 0.1, (np.mean(noisy), np.mean(chance))
    assert np.mean(noisy) < 0.2


def test_to_persons_keeps_exact_tables_and_rounds_noise_to_n():
    exact = np.array([[3, 0, 2], [1, 1, 3]])
    assert np.array_equal(tr.to_persons(exact, 5), exact)
    noisy = tr.to_persons(np.array([[2.6, -1.0, 1.7], [0.0, 0.0, 0.0]]), 5)
    assert noisy.sum(axis=1).tolist() == [5, 5] and noisy[0, 1] == 0 and noisy[0].tolist() == [3, 0, 2]
    with pytest.raises(ValueError, match="same number of persons"):
        tr.recover(np.array([[1, 0], [1, 1]]), np.zeros((2, 2)), np.zeros(2, bool), np.zeros(2, int))


def test_information_gain_links_a_persons_regular_days():
    """Two persons, each at the same two places every day: step 3 links day 2's halves to the right day 1."""
    day1 = np.array([[0, 0, 1], [5, 5, 6]])
    day2 = np.array([[5, 6, 6], [0, 1, 1]])
    gain = tr.information_gain(day1, day2)
    assert gain[0, 1] < gain[0, 0] and gain[1, 0] < gain[1, 1]


def test_windowed_settings_group_a_settings_windows_in_time_order():
    """The linkage jobs' grouping (datasets.windows.windowed_settings): one key per setting and rep of a windowed
    dataset, its runs in window order; runs on a dataset without windows are left out."""
    Run = namedtuple("Run", "dataset mechanism pstr rep")
    datasets = {f"walk.w{k:03d}": {"window": {"of": "walk", "index": k}} for k in range(3)} | {"flat": {}}
    runs = [Run(f"walk.w{k:03d}", "zero", "n~all", r) for k in (2, 0, 1) for r in (0, 1)] + [
        Run("flat", "zero", "n~all", 0)
    ]
    grouped = windows.windowed_settings(runs, datasets)
    assert list(grouped) == [("walk", "zero", "n~all", 0), ("walk", "zero", "n~all", 1)]
    assert [r.dataset for r in grouped[("walk", "zero", "n~all", 1)]] == ["walk.w000", "walk.w001", "walk.w002"]


def test_frontier_releases_carry_trust_model_and_epsilon_by_k(tmp_path):
    """summary/frontier_releases.csv (stages.linkage.linkage_summary): on a synthetic trajectory config with
    releases (3 daily windows, 3 rows a person a day), each setting's cross-release curves by k carry its trust
    model and the person-level epsilon of its first k releases as the ledger prices them (laplace_ldp at
    epsilon 1 a row: 3 a window; privtree at add/remove 1 a row: 6), the recovery its T; the exact counts are
    listed under ``none``."""
    cfg = copy.deepcopy(TINY)
    cfg["datasets"] = {
        "walk": {
            "source": "synthetic",
            "pattern": "gauss9",
            "n_users": 20,
            "bbox": [-3, 3, -3, 3],
            "trajectory": {"days": 3, "per_day": 3},
            "releases": {"window": "1d"},
        }
    }
    cfg["experiments"] = {
        "density": {
            "datasets": ["walk"],
            "reps": 2,
            "mechanisms": {"laplace_ldp": {"n": "all", "h": 0.55, "epsilon": 1.0}, "privtree": {"epsilon": 1.0}},
        }
    }
    runs = lpconfig.check_startup(cfg, None)
    windowed = windows.windowed_settings(runs, cfg["datasets"])
    guarantees = stage.setting_guarantees(cfg, windowed)
    assert {g["mechanism"]: g["epsilon_person_windows"] for g in guarantees} == {
        "laplace_ldp": [3.0, 3.0, 3.0],
        "privtree": [6.0, 6.0, 6.0],
    }
    home = GRID.x[[3, 12, 20]][:, None].repeat(2, axis=1)
    bayes_runs, bayes_paths, recovery_runs, recovery_paths = [], [], [], []
    for dataset, mechanism, setting, rep in windowed:
        curve = linkage.curve(
            np.full(GRID.shape, 1 / GRID.x.size / GRID.y.size),
            laplace_windows(home, 3, 3, 1.0, f"{mechanism} {rep}"),
            GRID,
            home,
            0.75,
        )
        bayes_paths.append(str(tmp_path / f"{mechanism}-{rep}.parquet"))
        pd.concat([curve.assign(adversary=a) for a in ("population", "informed")]).to_parquet(bayes_paths[-1])
        recovery_paths.append(str(tmp_path / f"{mechanism}-{rep}-recovery.parquet"))
        pd.DataFrame([{"persons": 3, "slots": 3, "accuracy": 0.5 + rep / 10}]).to_parquet(recovery_paths[-1])
        bayes_runs.append({"dataset": dataset, "mechanism": mechanism, "setting": setting, "rep": rep})
        recovery_runs.append(bayes_runs[-1])
    recovery_paths.append(str(tmp_path / "exact.parquet"))
    pd.DataFrame([{"persons": 3, "slots": 3, "accuracy": 1.0}]).to_parquet(recovery_paths[-1])
    recovery_runs.append({"dataset": "walk", "mechanism": "exact", "setting": "exact", "rep": 0})
    out = {name: str(tmp_path / f"{name}.csv") for name in ("bayes", "recovery", "frontier")}
    stage.linkage_summary(
        bayes_runs=bayes_runs,
        bayes_paths=bayes_paths,
        recovery_runs=recovery_runs,
        recovery_paths=recovery_paths,
        out_bayes=out["bayes"],
        out_recovery=out["recovery"],
        out_plot=str(tmp_path / "cross_release.png"),
        out_frontier=out["frontier"],
        guarantees=guarantees,
        dpi=40,
    )
    table = pd.read_csv(out["frontier"])
    curves = (
        table[table["attack"] == "cross_release_bayes_informed"].set_index(["mechanism", "metric", "k"]).sort_index()
    )
    assert curves.loc[("laplace_ldp", "exposed"), "guarantee_epsilon_person"].tolist() == [0, 3, 6, 9]
    assert curves.loc[("privtree", "exposed"), "guarantee_epsilon_person"].tolist() == [0, 6, 12, 18]
    assert set(zip(table["mechanism"], table["trust_model"], strict=True)) == {
        ("laplace_ldp", "local"),
        ("privtree", "central"),
        ("exact", "none"),
    }
    found = table[(table["attack"] == "trajectory_recovery") & (table["metric"] == "accuracy")].set_index("mechanism")
    assert found["k"].tolist() == [3, 3, 3]
    assert found.loc["laplace_ldp", "mean"] == pytest.approx(0.55) and found.loc["laplace_ldp", "reps"] == 2
    assert found.loc["exact", "guarantee_epsilon_person"] == np.inf
    bayes_table = pd.read_csv(out["bayes"])
    assert len(table[table["attack"].str.startswith("cross_release")]) == len(bayes_table)


@pytest.mark.workflow
@pytest.mark.heavy
def test_linkage_stages_run_end_to_end(tmp_path):
    """A 1-day trajectory in 8 h windows (T = 3, one row per person per window), laplace_ldp, 2 reps: the linkage
    jobs write both summaries; k runs 0..3 for both adversaries, the curve starts at the prior (fraction 1), and
    the exact counts of 1000 persons are recovered with accuracy above 0.2 (0.66 measured for 2 days).  47 jobs,
    5 min 38 s on the shared 2-core machine, hence heavy."""
    cfg = {**TINY, "utility": {"range_queries": 20}}
    cfg["datasets"] = {
        "walk": {
            "source": "synthetic",
            "pattern": "gauss9",
            "n_users": 1000,  # the range workload needs ~1000 rows per window
            "bbox": [-3, 3, -3, 3],
            "trajectory": {"days": 1, "per_day": 3},
            "releases": {"window": "8h"},
        }
    }
    cfg["experiments"] = {
        "density": {
            "datasets": ["walk"],
            "reps": 2,
            "mechanisms": {"laplace_ldp": {"n": "all", "h": 0.55, "epsilon": 1.0}},
        }
    }
    wd = tmp_path / "wd"
    wd.mkdir()
    write_config(wd, cfg)
    run_snakemake(wd, "--cores", "2")
    bayes_table = pd.read_csv(wd / "results/summary/cross_release_bayes.csv")
    assert sorted(bayes_table["k"].unique()) == [0, 1, 2, 3]
    assert set(bayes_table["adversary"]) == {"population", "informed"}
    start = bayes_table[(bayes_table["k"] == 0) & (bayes_table["metric"] == "expected_error_fraction")]
    assert np.allclose(start["mean"], 1.0)
    found = pd.read_csv(wd / "results/summary/trajectory_recovery.csv").set_index(["mechanism", "metric"])
    assert found.loc[("exact", "accuracy"), "mean"] > 0.2
    assert ("laplace_ldp", "accuracy") in found.index
    assert (wd / "results/plots/cross_release.png").exists()


def test_geolife_study_prices_mechanisms_alike_and_runs_on_windows_with_comings_and_goings():
    """locpriv.adversary.linkage_study's Geolife path on small synthetic windows: every mechanism gets the per-row
    epsilon at which the ledger charges one window the same person-level epsilon (laplace_ldp: 20 / 20 rows;
    privtree, add/remove: 20 / 40); the recovery's stretch is the run of windows the most persons share; a
    replication gives k = 0..T curves starting at the prior and the recovery of the exact counts, the density
    and the mechanism's maps."""
    from locpriv import ledger
    from locpriv.adversary import linkage_study as study

    assert study.row_epsilon("laplace_ldp", {"h": 1000.0}, 20.0, 20) == pytest.approx(1.0)
    assert study.row_epsilon("privtree", {}, 20.0, 20) == pytest.approx(0.5)
    spec = {"source": "points", "user_column": "user", "max_points_per_person": 20}
    charged = ledger.person_record(spec, "privtree", {"epsilon": 0.5}, diameter=np.inf)["epsilon"]
    assert charged == pytest.approx(20.0)
    gen = rng(5, "geolife study test")
    present = [range(0, 12), range(2, 14), range(2, 14), range(6, 20)]  # persons 6..11 are in all four
    windows = [
        pd.DataFrame({"source_user": np.repeat(list(p), 2), "x": gen.uniform(-3, 3, 2 * len(p)), "y": 0.0})
        for p in present
    ]
    for w in windows:
        w["y"] = gen.uniform(-3, 3, len(w))
    first, persons = study.stretch(windows, 2)
    assert first == 1 and persons.tolist() == list(range(2, 14))
    grid = Grid.regular(Domain(-3, 3, -3, 3), 8, 8)
    chosen = np.arange(20)
    every = pd.concat(windows, ignore_index=True)
    home = linkage.home_cells(every[["x", "y"]].to_numpy(), every["source_user"].to_numpy(), 20, grid)
    curves, found = study.geolife_replication(
        0,
        windows=windows,
        starts=pd.date_range("2008-10-20", periods=4, freq="7D", tz="UTC"),
        grid=grid,
        prior=np.full(grid.shape, 1 / 64),
        home=home,
        chosen=chosen,
        epsilons=[20.0],
        cap=2,
        slots=2,
        seed=1,
        names=["laplace_ldp"],
    )
    assert sorted(curves["k"].unique()) == [0, 1, 2, 3, 4]
    assert np.allclose(curves.loc[curves["k"] == 0, "expected_error_fraction"], 1.0)
    assert set(found["release"]) == {"exact", "population", "laplace_ldp"}
    assert found.set_index("release").loc["exact", "accuracy"] > 0
