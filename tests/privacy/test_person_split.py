"""``person_budget: split_epsilon`` (issue 28 item 8): each of a person's up to k reports at ε / k.

The record (``Guarantee.split_over``) states the configured ε for the whole person; the audit checks
each report against ε / k.  Statistical tests: the audit stage's Clopper–Pearson bound on a held-out
half, α = 0.05 per pair, fixed seed (deterministic); power: the same audit refutes reports drawn at
the whole ε (the fault a split that forgot to divide would make).
"""

import copy

import numpy as np
import pytest

from conftest import TINY
from locpriv import GeoInd, LaplaceLDP, OUEGrid, mechanisms
from locpriv import config as lpconfig
from locpriv.audit.stage import audit_setting, holds
from locpriv.config import ConfigError
from locpriv.datasets import ingest, persons
from locpriv.domain import Domain, Grid
from locpriv.dp import REPORT_PREFIX
from locpriv.stages.prepare import ingest_report

SEED = 20261126
UNIT = {"unit": Grid.regular(Domain(0, 1, 0, 1), 10, 10)}
DRAWS = 40_000
K = 4
EPS = 4.0  # per report 1.0: the audit's bounds reach ~0.8 of it at these draws

# mechanism, its parameters, the client sampler a faulty split would call with the whole epsilon,
# and epsilon's position among that sampler's positional arguments
SPLITTING = [
    ("laplace_ldp", {"h": 0.5}, "locpriv.laplace_ldp.randomize", 2),
    ("geoind", {"h": 0.5}, "locpriv.planar_laplace.perturb", 1),
    ("ldp_oue_grid", {"level": 2}, "locpriv.mechanisms.ldp_oue_grid.oue_bits", 2),
]


def test_split_record_states_the_configured_epsilon_for_the_person():
    one, split = LaplaceLDP(epsilon=0.5, h=1.0), LaplaceLDP(epsilon=2.0, h=1.0, person_reports=K)
    g = split.guarantee()
    assert split.report_epsilon == 0.5 and g.epsilon == 2.0 and g.delta == 0.0
    assert f"up to {K} locations" in g.relation and "their number is public" in g.relation
    assert g.other_relations == {REPORT_PREFIX + one.guarantee().relation: 0.5}
    assert g.model == one.guarantee().model and g.timing == one.guarantee().timing
    # the group map of the person-level record: two persons changed cost 2 epsilon
    assert g.map(2) == (4.0, 0.0)
    # (epsilon, delta) reports compose to k delta (the fixed-work sampler's delta)
    fixed, fixed_one = (
        LaplaceLDP(epsilon=2.0, h=1.0, timing="fixed_work", person_reports=K),
        LaplaceLDP(epsilon=0.5, h=1.0, timing="fixed_work"),
    )
    assert fixed.guarantee().delta == pytest.approx(K * fixed_one.guarantee().delta) and fixed_one.guarantee().delta > 0
    # metric DP: epsilon per unit of the person's largest move
    geo = GeoInd(epsilon=1.0, h=1.0, person_reports=K).guarantee()
    assert geo.metric and geo.epsilon == 1.0 and geo.map(3.0) == (3.0, 0.0)
    oue = OUEGrid(epsilon=1.0, person_reports=K).guarantee()
    assert oue.other_relations[REPORT_PREFIX + "any two inputs (local)"] == 0.25
    # k = 1 is the per-report record unchanged (the default runs' records keep their bytes)
    assert LaplaceLDP(epsilon=0.5, h=1.0, person_reports=1).guarantee() == one.guarantee()
    # the person-level epsilon of the summary: the record's for up to k rows, group privacy beyond
    assert persons.person_level_epsilon(2.0, K, rows_covered=K) == 2.0
    assert persons.person_level_epsilon(2.0, 2 * K, rows_covered=K) == 4.0
    assert persons.person_level_epsilon(0.5, K) == 2.0


def _audit(name, given):
    params = dict(mechanisms.get(name)(**given).settings)
    table = audit_setting(name, params, UNIT, DRAWS, SEED)
    table["holds"] = holds(table)
    return table


@pytest.mark.parametrize("name,given,target,where", SPLITTING, ids=[s[0] for s in SPLITTING])
def test_each_report_is_drawn_at_epsilon_over_k(monkeypatch, name, given, target, where):
    given = {**given, "epsilon": EPS, "person_reports": K}
    table = _audit(name, given)
    # every pair is one report, audited against epsilon / k (alpha = 0.05 per pair)
    assert table["relation"].str.startswith(REPORT_PREFIX).all() and (table["claimed_epsilon"] == EPS / K).all()
    assert (table["holds"] == "yes").all(), table.to_string()
    # power: the bound reaches half the per-report epsilon, so it is not vacuous
    assert table["epsilon_lb"].max() > 0.5 * EPS / K, table.to_string()
    # the fault: a client that draws its report at the whole epsilon (the record still split)
    module, attr = target.rsplit(".", 1)
    real = getattr(__import__(module, fromlist=[attr]), attr)

    def undivided(*args, **kwargs):
        args = list(args)
        args[where] = K * args[where]
        return real(*args, **kwargs)

    monkeypatch.setattr(target, undivided)
    faulty = _audit(name, given)
    assert (faulty["holds"] != "yes").any() and faulty["epsilon_lb"].max() > 1.5 * EPS / K, faulty.to_string()


def _config(**dataset) -> dict:
    cfg = copy.deepcopy(TINY)
    cfg["datasets"]["people"] = {
        "source": "points",
        "path": "p.csv",
        "lonlat_bbox": [116.15, 116.60, 39.75, 40.10],
        "user_column": "user",
        **dataset,
    }
    cfg["experiments"] = {
        "persons": {"datasets": ["people"], "mechanisms": {"laplace_ldp": {"h": 100.0, "epsilon": [1.0, 2.0]}}}
    }
    return cfg


def test_config_split_epsilon_sets_person_reports_to_the_cap_and_refuses_what_cannot_split():
    cfg = _config(person_budget="split_epsilon", max_points_per_person=5)
    lpconfig.check_values(cfg)
    runs = lpconfig.expand_runs(cfg)
    assert [r.params["person_reports"] for r in runs] == [5, 5]
    assert all("person_reports~5" in r.path for r in runs)
    # the cap is what the epsilon is divided by: required
    with pytest.raises(ConfigError, match=r"datasets\.people\.person_budget.*max_points_per_person"):
        lpconfig.check_values(_config(person_budget="split_epsilon"))
    # a mechanism whose reports do not compose per person cannot apply it
    central = _config(person_budget="split_epsilon", max_points_per_person=5)
    central["experiments"]["persons"]["mechanisms"] = {"privtree": {"epsilon": 1.0}}
    with pytest.raises(ConfigError, match=r"mechanisms\.privtree.*split_epsilon.*laplace_ldp"):
        lpconfig.expand_runs(central)
    # person_reports set by hand must agree with the ingest's cap
    clash = _config(person_budget="split_epsilon", max_points_per_person=5)
    clash["experiments"]["persons"]["mechanisms"]["laplace_ldp"]["person_reports"] = 3
    with pytest.raises(ConfigError, match=r"laplace_ldp\.person_reports.*max_points_per_person 5"):
        lpconfig.expand_runs(clash)
    # group and split keep their runs' parameters (and paths)
    assert "person_reports" not in lpconfig.expand_runs(_config(max_points_per_person=5))[0].params


def test_ingest_split_epsilon_keeps_up_to_the_cap_and_says_what_epsilon_means(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("user,lat,lon\n" + "".join(f"{i % 4},{39.9 + i * 1e-5},{116.3 + i * 1e-5}\n" for i in range(100)))
    spec = {
        "source": "points",
        "path": str(f),
        "lonlat_bbox": [116.15, 116.60, 39.75, 40.10],
        "user_column": "user",
        "person_budget": "split_epsilon",
        "max_points_per_person": 10,
    }
    pts, meta = ingest.real_points("d", spec, np.random.default_rng(0))
    assert len(pts) == 40 and meta["person_cap"] == 10 and meta["person_budget"] == "split_epsilon"
    assert "each randomised at epsilon / that cap" in meta["users"]
    assert "each row randomised at epsilon / 10, person-level epsilon = the configured" in ingest_report("d", meta)[1]
