"""The per-dataset ledger (locpriv.ledger): releases charged once, the budget kept, simulations exempt."""

import copy
import json

import pytest

from conftest import TINY, run_snakemake, write_config
from locpriv import config as lpconfig
from locpriv import ledger
from locpriv.dp import composition as comp

LEDGER = "results/ledger/gauss9.json"


def kept(**budget) -> dict:
    """TINY with its synthetic dataset keeping a ledger (simulation: false), with ``budget``."""
    cfg = copy.deepcopy(TINY)
    cfg["datasets"]["gauss9"]["simulation"] = False
    if budget:
        cfg["datasets"]["gauss9"]["budget"] = budget
    cfg["experiments"]["density"]["mechanisms"] = {"laplace_ldp": {"n": 300, "h": 0.55, "epsilon": [1, 2]}}
    return cfg


def charge(cfg: dict, results_dir, write: bool = True) -> list[str]:
    return ledger.charge_runs(cfg, lpconfig.expand_runs(cfg), str(results_dir), write=write)


def test_identical_rerun_is_not_charged_and_a_changed_parameter_is(tmp_path):
    cfg = kept(epsilon=20.0)
    (line,) = charge(cfg, tmp_path)
    assert "2 new release(s) charged" in line and "person-level epsilon 3, delta 0 of budget 20" in line
    path = tmp_path / "ledger/gauss9.json"
    first = path.read_bytes()
    (line,) = charge(cfg, tmp_path)
    assert "0 new release(s) charged" in line and path.read_bytes() == first
    cfg["experiments"]["density"]["mechanisms"]["laplace_ldp"]["epsilon"] = [1, 2, 4]  # one new setting
    (line,) = charge(cfg, tmp_path)
    assert "1 new release(s) charged" in line and "epsilon 7," in line
    cfg["experiments"]["density"]["reps"] = 2  # another repetition draws other noise: three more releases
    assert "3 new release(s)" in charge(cfg, tmp_path)[0]
    releases = json.loads(path.read_text())["releases"]
    assert len({r["key"] for r in releases}) == len(releases) == 6
    assert json.loads(path.read_text())["total"] == {"epsilon": 14.0, "delta": 0.0}


def test_same_releases_give_the_same_bytes_in_any_order(tmp_path):
    cfg = kept()
    charge(cfg, tmp_path / "a")
    one = copy.deepcopy(cfg)
    one["experiments"]["density"]["mechanisms"]["laplace_ldp"]["epsilon"] = [2]
    charge(one, tmp_path / "b")
    charge(cfg, tmp_path / "b")
    assert (tmp_path / "a/ledger/gauss9.json").read_bytes() == (tmp_path / "b/ledger/gauss9.json").read_bytes()


def test_over_budget_is_refused_and_nothing_charged(tmp_path):
    cfg = kept(epsilon=3.0)
    charge(cfg, tmp_path)
    before = (tmp_path / "ledger/gauss9.json").read_bytes()
    cfg["experiments"]["density"]["mechanisms"]["laplace_ldp"]["epsilon"] = [1, 2, 0.5]
    with pytest.raises(ledger.LedgerError, match=r"datasets\.gauss9\.budget.*epsilon 3\.5.*nothing was charged"):
        charge(cfg, tmp_path)
    assert (tmp_path / "ledger/gauss9.json").read_bytes() == before
    # a release without a formal guarantee would make the total unbounded: refused under a budget
    cfg["experiments"]["density"]["mechanisms"] = {"fedkde": {"n": 300, "h": 0.55}}
    with pytest.raises(ledger.LedgerError, match="no person-level bound"):
        charge(cfg, tmp_path)


def test_zcdp_budget_and_its_checks(tmp_path):
    cfg = kept(epsilon=3.0, delta=1e-6, rule="zcdp", slack=1e-6)
    cfg["experiments"]["density"]["mechanisms"]["laplace_ldp"]["epsilon"] = 0.05
    cfg["experiments"]["density"]["reps"] = 100  # 100 x 0.05 = 5 basic: refused under a basic budget of 3
    (line,) = charge(cfg, tmp_path)
    expected = comp.total([comp.Guarantee("m", 0.05, 0.0, "r", "c")] * 100, rule="zcdp", slack=1e-6)[0]
    assert f"epsilon {expected:g}" in line and expected < 3.0  # 2.75
    # the same releases re-priced under a basic budget (its keys are not part of a release's identity)
    cfg["datasets"]["gauss9"]["budget"] = {"epsilon": 3.0}
    assert "0 new release(s) charged; person-level epsilon 5, delta 0 of budget 3" in charge(cfg, tmp_path)[0]
    cfg["experiments"]["density"]["reps"] = 101
    with pytest.raises(ledger.LedgerError, match=r"1 new release\(s\) would.*holds 100 release\(s\), epsilon 5\)"):
        charge(cfg, tmp_path)
    with pytest.raises(ledger.LedgerError, match=r"datasets\.gauss9\.budget.*slack"):
        charge(kept(epsilon=1.0, rule="zcdp"), tmp_path / "x")


def test_person_level_under_a_cap_and_unbounded_without():
    spec = {"source": "points", "path": "p.csv", "bbox": [0, 1, 0, 1], "user_column": "u"}
    assert ledger.rows_per_person(spec) is None
    assert ledger.rows_per_person({**spec, "max_points_per_person": 5}) == 5
    assert ledger.rows_per_person({**spec, "max_points_per_person": 5, "person_budget": "split"}) == 1
    rec = ledger.person_record({**spec, "max_points_per_person": 5}, "laplace_ldp", {"epsilon": 1.0, "h": 0.1}, 1.4)
    assert rec["epsilon"] == 5.0
    split = {**spec, "max_points_per_person": 5, "person_budget": "split_epsilon"}
    assert ledger.person_record(split, "laplace_ldp", {"epsilon": 1.0, "h": 0.1, "person_reports": 5}, 1.4)[
        "epsilon"
    ] == pytest.approx(1.0)
    assert ledger.person_record(spec, "laplace_ldp", {"epsilon": 1.0, "h": 0.1}, 1.4)["epsilon"] is None
    assert ledger.is_simulation({"source": "synthetic"}) and not ledger.is_simulation({"source": "points"})


@pytest.mark.workflow
def test_console_says_which_and_refuses_before_any_noise(tmp_path):
    """Through the workflow: a simulation says so; a ledgered dataset's runs are charged at start-up, an
    identical re-run is not, and an over-budget config stops with one line before any job."""
    wd = tmp_path / "wd"
    wd.mkdir()
    cfg = kept(epsilon=3.0)
    cfg["datasets"]["sim"] = {**TINY["datasets"]["gauss9"]}
    cfg["experiments"]["sim"] = {"datasets": ["sim"], "mechanisms": {"zero": {"n": 300}}}
    write_config(wd, cfg)
    target = "results/ingest/gauss9/meta.json"  # a cheap target: the charge is made for the whole config
    proc = run_snakemake(wd, "--cores", "1", target)
    console = proc.stdout + proc.stderr
    assert "dataset 'sim': simulation (simulation: true), no privacy ledger kept" in console
    assert "dataset 'gauss9': not a simulation, ledger results/ledger/gauss9.json: 2 new release(s) charged" in console
    before = (wd / LEDGER).read_bytes()
    assert not (wd / "results/ledger/sim.json").exists()
    cfg["experiments"]["density"]["mechanisms"]["laplace_ldp"]["epsilon"] = [1, 2, 4]
    write_config(wd, cfg)
    proc = run_snakemake(wd, "--cores", "1", check=False)
    console = proc.stdout + proc.stderr
    lines = [line for line in console.splitlines() if "datasets.gauss9.budget" in line]
    assert proc.returncode != 0 and "Traceback" not in console and len(lines) == 1, console[-3000:]
    assert "epsilon 7" in lines[0] and "nothing was charged" in lines[0]
    assert (wd / LEDGER).read_bytes() == before and not (wd / "results/runs").exists()


def test_a_damaged_ledger_stops_with_one_line(tmp_path):
    charge(kept(), tmp_path)
    path = tmp_path / "ledger/gauss9.json"
    path.write_text(path.read_text()[:100])
    with pytest.raises(ledger.LedgerError, match=r"cannot be read.*delete it to start a new one"):
        charge(kept(), tmp_path)


def test_a_run_that_draws_nothing_charges_nothing(tmp_path):
    """--dry-run and the like check the budget and report, writing no ledger."""
    (line,) = charge(kept(epsilon=3.0), tmp_path, write=False)
    assert "2 new release(s) to charge (dry run)" in line and not (tmp_path / "ledger").exists()
    with pytest.raises(ledger.LedgerError):
        charge(kept(epsilon=2.0), tmp_path, write=False)
