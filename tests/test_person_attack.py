"""Person-level attack through the stage functions: data with a person column (no Snakemake).

Each person sends several points from around one place; the attack targets the person
(all their reports), and the run's summary rows state the person-level epsilon beside
the record-level one.
"""

import numpy as np
import pandas as pd
import pytest

from locpriv import io
from locpriv.adversary import bayes
from locpriv.stages import attack as st_attack
from locpriv.stages import metrics as st_metrics
from locpriv.stages import prepare, utility
from locpriv.stages import run as st_run

PERSONS, POINTS, CAP = 40, 12, 8
SPEC = {
    "source": "points",
    "bbox": [0.0, 1.0, 0.0, 1.0],
    "user_column": "person",
    "max_points_per_person": CAP,
    "max_dropped_fraction": 0.0,
}


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """ingest -> encode -> randomize -> aggregate/estimate -> attacks for a geoind run of person data."""
    run = {"dataset": "people", "mechanism": "geoind", "params": {"n": "all", "h": 0.05, "epsilon": 20.0}, "rep": 0}
    return _chain(tmp_path_factory.mktemp("persons"), run)


def _chain(d, run, **dataset):
    rng = np.random.default_rng(3)
    homes = rng.uniform(0.2, 0.8, size=(PERSONS, 2))
    xy = np.repeat(homes, POINTS, axis=0) + rng.normal(0, 0.01, size=(PERSONS * POINTS, 2))
    pd.DataFrame(
        {"person": np.repeat([f"p{k:02d}" for k in range(PERSONS)], POINTS), "x": xy[:, 0], "y": xy[:, 1]}
    ).to_csv(d / "points.csv", index=False)
    spec = {**SPEC, **dataset, "path": str(d / "points.csv")}
    f = {
        k: str(d / v)
        for k, v in {
            "points": "points.parquet",
            "meta": "meta.json",
            "grid": "grid.nc",
            "truth": "truth.nc",
            "view": "view",
            "agg": "agg.nc",
            "est": "est.nc",
            "lm": "lm.parquet",
            "bayes": "bayes.parquet",
            "workload": "w.parquet",
            "metrics": "metrics.parquet",
        }.items()
    }
    prepare.ingest(name="people", spec=spec, seed=11, out_points=f["points"], out_meta=f["meta"])
    prepare.encode_grid(spec=spec, grid_spec={"P": 40, "Q": 40}, out_grid=f["grid"])
    grid = prepare.load_grid(f["grid"])
    io.write_netcdf(grid.surface(np.ones(grid.shape), "density", {"units": "1/1^2"}, "1"), f["truth"])
    common = {"run": run, "grid_path": f["grid"], "bandwidth_json": None}
    st_run.randomize(
        seed=11,
        shards=[0, 1],
        users_per_shard=200,
        points_path=f["points"],
        meta_json=f["meta"],
        out_dir=f["view"],
        **common,
    )
    views = [st_run.shard_file(f["view"], s) for s in (0, 1)]
    st_run.aggregate_estimate(view_paths=views, out_agg=f["agg"], out_est=f["est"], **common)
    st_attack.attacks_of_run(
        seed=11,
        attack_cfg={"users": 25, "ratio": 1.1},
        adversary_cfg={"users": 25, "prior": "uniform", "r": 2},
        users_per_shard=200,
        view_paths=views,
        points_path=f["points"],
        meta_json=f["meta"],
        truth_path=f["truth"],
        out_local_maxima=f["lm"],
        out_bayes=f["bayes"],
        **common,
    )
    return f, run, homes


def test_the_attack_targets_sampled_persons_with_all_their_points(chain):
    f, _, _ = chain
    points = pd.read_parquet(f["points"])
    for out in (f["lm"], f["bayes"]):
        res = pd.read_parquet(out)
        assert len(res) == 25 and res["person"].is_unique
        # every sampled person is attacked with all their (capped) points
        counts = points.groupby("source_user").size()
        assert (res["points"].to_numpy() == counts[res["person"]].to_numpy()).all()
        assert (res["points"] == CAP).all()
        assert io.read_parquet_metadata(out)["target"].startswith("person")
    # the same persons for both adversaries
    assert pd.read_parquet(f["lm"])["person"].tolist() == pd.read_parquet(f["bayes"])["person"].tolist()


def test_pooling_a_persons_reports_locates_them_better_than_one_report(chain):
    """Power check: with CAP = 8 reports from one place the Bayes posterior narrows ~sqrt(8)-fold.

    Fixed seed, deterministic: the person-level expected error must be below 0.6 x the mean
    expected error of attacking single reports (theory: ~0.35 x for planar Laplace at
    eps = 20 on this grid; 0.6 leaves room for the grid's discreteness).
    """
    f, run, _ = chain
    person = pd.read_parquet(f["bayes"])["expected_error"].mean()
    single = single_report_bayes_error(f, run)
    assert person < 0.6 * single, (person, single)


def single_report_bayes_error(f, run):
    from locpriv import mechanisms

    grid = prepare.load_grid(f["grid"])
    view = pd.concat([pd.read_parquet(st_run.shard_file(f["view"], s)) for s in (0, 1)]).sort_values("user")
    view = view.iloc[:200]
    truth = pd.read_parquet(f["points"]).set_index("user").loc[view["user"], ["x", "y"]].to_numpy()
    log_lik = mechanisms.get("geoind")(h=0.05, epsilon=20.0).log_likelihood(view, grid)
    prior = np.full(grid.shape, 1 / grid.shape[0] / grid.shape[1])
    res = bayes.bayes_attack([(slice(0, len(view)), log_lik)], prior, grid, view["user"].to_numpy(), truth, 0.05)
    return res["expected_error"].mean()


def _metric_rows(f, run):
    """The metrics stage on a chain's files: its rows as a metric -> value series."""
    st_metrics.run_metrics(
        run=run,
        est_path=f["est"],
        truth_path=f["truth"],
        pooled_path=None,
        attack_path=f["lm"],
        bayes_path=f["bayes"],
        workload_path=f["workload"],
        grid_path=f["grid"],
        bandwidth_json=None,
        meta_json=f["meta"],
        hotspot_k=10,
        out_metrics=f["metrics"],
    )
    return pd.read_parquet(f["metrics"]).set_index("metric")["value"]


def test_the_runs_summary_rows_state_the_person_level_epsilon(chain):
    f, run, _ = chain
    queries = pd.DataFrame([[0.2, 0.5, 0.2, 0.5], [0.4, 0.8, 0.1, 0.9]], columns=utility.COLUMNS)
    io.write_parquet(queries, f["workload"])
    rows = _metric_rows(f, run)
    assert rows["guarantee_epsilon"] == pytest.approx(20.0)
    assert rows["guarantee_epsilon_person"] == pytest.approx(CAP * rows["guarantee_epsilon"])
    # the attack metrics are means over persons, not points
    assert rows["privacy_Z"] == pytest.approx(pd.read_parquet(f["lm"])["Z"].mean())
    # the run's noise check (made by the attack job) reaches the summary rows
    checked = io.read_parquet_metadata(f["bayes"])["noise_check"]
    assert rows["noise_check_p"] == pytest.approx(checked["p"]) and 1e-6 < rows["noise_check_p"] <= 1
    assert rows["noise_epsilon_ratio"] == pytest.approx(checked["epsilon_ratio"])
    assert rows["noise_check_power"] == pytest.approx(checked["power"])


@pytest.fixture(scope="module")
def privtree_chain(tmp_path_factory):
    run = {"dataset": "people", "mechanism": "privtree", "params": {"n": "all", "epsilon": 2.0}, "rep": 0}
    return _chain(tmp_path_factory.mktemp("persons_privtree"), run)


def test_the_informed_adversary_attacks_one_row_of_a_privtree_person(privtree_chain):
    """Against a central release the informed adversary attacks each person's first row with every other row
    known (``stages.attack.informed_person_attack``), scored against that row; the person-level statistic
    (all of a person's rows placed at one location, ``PrivTreeLikelihood.person_values``) is within the
    person-level epsilon (cap × 2ε, which the stage checks too), each row's within 2ε.  Power (deterministic,
    fixed seed; one row at ε = 2 among 320): the posterior puts more mass near the target row than the prior
    does, and its expected error is lower."""
    f, _, _ = privtree_chain
    res = pd.read_parquet(f["bayes"])
    meta = io.read_parquet_metadata(f["bayes"])
    assert meta["informed_person_model"] == st_attack.PERSON_MODEL
    assert meta["informed_epsilon_person"] == pytest.approx(CAP * 4.0)
    assert (res["informed_max_log_ratio_person"] <= CAP * 4.0).all()
    assert (res["informed_max_log_ratio"] <= 4.0 + 1e-9).all()
    grid = prepare.load_grid(f["grid"])
    truth = pd.read_parquet(f["points"]).set_index("user").loc[res["user"], ["x", "y"]].to_numpy()
    prior = bayes.prior_attack(
        np.full(grid.shape, 1.0 / grid.x.size / grid.y.size), grid, res["user"].to_numpy(), truth, 0.05, 64
    )
    # the no-information reference the frontier levels the informed adversary against is this prior, scored
    # at the same row; the population adversary's is scored at the person's nearest point, so it is smaller
    np.testing.assert_allclose(res["prior_informed_expected_error"], prior["expected_error"], rtol=1e-12)
    np.testing.assert_allclose(res["prior_informed_hit_r"], prior["hit_r"], rtol=1e-12)
    assert res["prior_expected_error"].mean() < res["prior_informed_expected_error"].mean()
    # measured: hit mass 0.0117 against the prior's 0.0079, expected error 0.409 against 0.435
    assert res["informed_hit_r"].mean() > 1.3 * prior["hit_r"].mean()
    assert res["informed_expected_error"].mean() < prior["expected_error"].mean()


def test_split_epsilon_run_records_the_configured_epsilon_for_the_person(tmp_path):
    """person_budget split_epsilon through the stages: each row reported at epsilon / CAP (the view's noise and
    the informed check per row), the summary's record-level and person-level epsilon both the configured one,
    and every attacked person's informed statistic within it (the stage raises otherwise)."""
    eps = 20.0
    run = {
        "dataset": "people",
        "mechanism": "geoind",
        "params": {"n": "all", "h": 0.05, "epsilon": eps, "person_reports": CAP},
        "rep": 0,
    }
    f, _, _ = _chain(tmp_path, run, person_budget="split_epsilon")
    assert io.read_parquet_metadata(st_run.shard_file(f["view"], 0))["noise"]["epsilon"] == eps / CAP
    io.write_parquet(pd.DataFrame([[0.2, 0.5, 0.2, 0.5]], columns=utility.COLUMNS), f["workload"])
    rows = _metric_rows(f, run)
    assert rows["guarantee_epsilon"] == eps and rows["guarantee_epsilon_person"] == eps
    assert 0 < rows["informed_max_log_ratio_person"] <= eps
