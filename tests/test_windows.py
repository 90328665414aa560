"""Windowed releases (datasets.windows) and the ledger over them, audited over one person's T releases."""

import copy

import numpy as np
import pytest

from conftest import TINY, run_snakemake, write_config
from locpriv import config as lpconfig
from locpriv import ledger
from locpriv.audit.cases import domain_corners, randomized, xy_of
from locpriv.audit.estimator import audit_samples
from locpriv.config import ConfigError
from locpriv.datasets import windows
from locpriv.domain import Domain, Grid
from locpriv.mechanisms.laplace_ldp import LaplaceLDP
from locpriv.seeding import rng

BOX = [-3, 3, -3, 3]


def walk(days: int = 3, per_day: int = 1, window: str = "1d", persons: int = 200, **releases) -> dict:
    """TINY on a ledgered synthetic trajectory cut into windows, one laplace_ldp setting."""
    cfg = copy.deepcopy(TINY)
    cfg["datasets"] = {
        "walk": {
            "source": "synthetic",
            "pattern": "gauss9",
            "n_users": persons,
            "bbox": BOX,
            "trajectory": {"days": days, "per_day": per_day},
            "simulation": False,
            "releases": {"window": window, **releases},
        }
    }
    cfg["experiments"] = {
        "density": {"datasets": ["walk"], "mechanisms": {"laplace_ldp": {"n": "all", "h": 0.55, "epsilon": 1.0}}}
    }
    return cfg


def test_windows_expand_to_t_datasets_sharing_the_ledger(tmp_path):
    cfg = walk(days=7, window="2d")
    runs = lpconfig.check_startup(cfg, None)
    names = [f"walk.w{k:03d}" for k in range(4)]  # 7 days in windows of 2: T = 4, the last one short
    assert sorted(cfg["datasets"]) == names and cfg["experiments"]["density"]["datasets"] == names
    assert sorted(r.dataset for r in runs) == names
    assert cfg["datasets"]["walk.w003"]["window"]["start"] == "2026-01-11T00:00:00+00:00"
    (line,) = ledger.charge_runs(cfg, runs, str(tmp_path))
    # each window: a person's 2 days x 1 row at epsilon 1; four windows compose to 8
    assert "ledger" in line and "walk.json: 4 new release(s) charged; person-level epsilon 8," in line
    assert ledger.rows_per_person(cfg["datasets"]["walk.w000"]) == 2


@pytest.mark.parametrize(
    "releases, spec, words",
    [
        ({"window": "1x"}, {}, ["datasets.walk.releases.window", "12h"]),
        ({"window": "1d"}, {"trajectory": None}, ["time_column", "start", "count"]),
    ],
)
def test_bad_windows_name_the_key(releases, spec, words):
    cfg = walk()
    cfg["datasets"]["walk"]["releases"] = releases
    for k in spec:
        del cfg["datasets"]["walk"][k]
    with pytest.raises(ConfigError) as err:
        windows.expand(cfg)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_one_persons_releases_audited_against_the_ledger():
    """The ledger of T = 3 daily releases of one laplace_ldp setting (epsilon 1, a person one row a day)
    charges a person 3.  One person's three reports -- at one corner of the box every day, or at the other
    -- are drawn by the mechanism itself, window by window with independent streams, as the workflow's
    windows are; the empirical lower bound on the joint output (audit.estimator, alpha = 0.05) must stay
    below the ledger's 3 and exceed 2.5, the total of a ledger that charged one window at epsilon / 2
    (the planted fault).  Power: under the far corner every coordinate of every report is beyond it with
    probability 1/2, so the event of maximal loss has probability 1/64 and likelihood ratio e^3."""
    cfg = walk(days=3)
    runs = lpconfig.check_startup(cfg, None)
    entries = [ledger.person_record(cfg["datasets"][r.dataset], r.mechanism, r.params, 8.5) for r in runs]
    total = sum(e["epsilon"] for e in entries)
    faulty = total - entries[0]["epsilon"] / 2
    assert (len(entries), total, faulty) == (3, 3.0, 2.5)

    grid = Grid.regular(Domain.from_list(BOX), 24, 20)
    mech = LaplaceLDP(epsilon=1.0, h=0.55)
    lo, hi = domain_corners(grid)
    n = 400_000

    def person(xy, key):  # T reports of one person at xy: one per window, each window its own stream
        sample = randomized(mech, grid, xy, xy_of)
        return np.hstack([sample(n, rng(7, "windows audit", key, t)) for t in range(len(entries))])

    def loss(out):  # the Laplace log-likelihood ratio between the corners, summed over the windows (public)
        side = np.tile(hi - lo, len(entries))
        return (np.clip(out, np.tile(lo, len(entries)), np.tile(hi, len(entries))) / side).sum(axis=1)

    at_hi, at_lo = person(hi, "hi"), person(lo, "lo")
    result = audit_samples(at_hi, at_lo, stat_x=loss(at_hi)[:, None], stat_xp=loss(at_lo)[:, None])
    assert faulty < result.epsilon_lb <= total, (result, faulty)


@pytest.mark.workflow
@pytest.mark.heavy
def test_windowed_trajectory_runs_end_to_end(tmp_path):
    """releases: {window: 1d} on a 2-day trajectory: two window datasets, each ingested, estimated, attacked
    and in the summary, both releases in the ledger (27 jobs: 5 min on the shared 2-core machine, hence heavy)."""
    wd = tmp_path / "wd"
    wd.mkdir()
    cfg = walk(days=2, per_day=2, persons=500)
    cfg["utility"] = {"range_queries": 20}
    write_config(wd, cfg)
    proc = run_snakemake(wd, "--cores", "2")
    console = proc.stdout + proc.stderr
    assert "walk.json: 2 new release(s) charged; person-level epsilon 4," in console
    assert "ingest walk.w001: 1000 rows read" in console and "500 persons, up to 2 rows each" in console
    runs = (wd / "results/summary/runs.csv").read_text()
    assert "walk.w000" in runs and "walk.w001" in runs
