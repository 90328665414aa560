"""Composition (dp.composition) and the API's budget accountant (locpriv.accountant), which share one rule."""

import inspect
import math

import numpy as np
import pytest

from locpriv import api, dp
from locpriv.accountant import BudgetAccountant, BudgetError
from locpriv.audit.estimator import audit_samples
from locpriv.datasets.persons import person_level_epsilon
from locpriv.dp import composition as comp
from locpriv.dp.sampling import discrete_laplace
from locpriv.seeding import rng


def count_record(eps: float, delta: float = 0.0) -> dp.Guarantee:
    """The record of one count released with discrete Laplace noise of scale 1 / eps (sensitivity 1)."""
    return dp.Guarantee(
        model="epsilon-DP", epsilon=eps, delta=delta, relation=dp.ADD_REMOVE, covers="one count", trust_model="central"
    )


def test_basic_adds_epsilon_and_delta():
    records = [count_record(0.5, 1e-7), count_record(1.0), count_record(0.25, 1e-8)]
    assert comp.total(records) == (1.75, pytest.approx(1.1e-7, rel=1e-12))
    g = comp.compose(records)
    assert (g.epsilon, g.relation, g.trust_model) == (1.75, dp.ADD_REMOVE, "central")
    assert "basic composition of 3 records" in g.note


def test_zcdp_is_bun_steinke_and_never_above_basic():
    k, eps, slack = 100, 0.1, 1e-6
    rho = k * eps**2 / 2  # Prop. 3.3 per record, Lemma 2.3 over the k
    expected = rho + 2 * math.sqrt(rho * math.log(1 / slack))  # Prop. 1.3
    assert comp.total([count_record(eps)] * k, rule=comp.ZCDP, slack=slack) == (pytest.approx(expected), slack)
    assert expected < k * eps / 1.7  # 5.76 against 10: the tighter rule pays off here
    # one release: the conversion is looser than the record itself, so the basic total is reported
    assert comp.total([count_record(1.0)], rule=comp.ZCDP, slack=slack)[0] == 1.0
    # records with delta > 0 are added by the basic rule on top of the pure ones' zCDP total
    mixed = [count_record(eps)] * k + [count_record(0.5, 1e-9)]
    assert comp.total(mixed, rule=comp.ZCDP, slack=slack) == (
        pytest.approx(expected + 0.5),
        pytest.approx(slack + 1e-9),
    )


@pytest.mark.parametrize(
    "records, rule, match",
    [
        ([], comp.BASIC, "no records"),
        ([count_record(1.0), dp.no_guarantee("no noise")], comp.BASIC, "without a formal guarantee"),
        ([count_record(1.0), api.LaplaceLDP(epsilon=1.0, h=0.1).guarantee()], comp.BASIC, "different relations"),
        ([count_record(1.0)], "advanced", "must be one of"),
        ([count_record(1.0)], comp.ZCDP, "slack delta' > 0"),
        ([api.GeoInd(epsilon=1.0, h=0.05).guarantee()], comp.ZCDP, "metric"),
    ],
)
def test_compose_refuses(records, rule, match):
    with pytest.raises(ValueError, match=match):
        comp.total(records, rule=rule)


def test_restate_under_replace_one():
    local = api.LaplaceLDP(epsilon=2.0, h=0.1).guarantee()
    assert comp.restate(local, dp.REPLACE_ONE).epsilon == 2.0  # one user's input changed
    central = api.PrivTree(epsilon=1.0).guarantee()  # replace-one 2 eps stated beside add/remove eps
    assert comp.restate(central, dp.ADD_REMOVE).epsilon == 1.0
    assert comp.restate(count_record(1.0, 1e-6), dp.REPLACE_ONE).delta == pytest.approx(2 * math.e * 1e-6)
    geo = api.GeoInd(epsilon=0.5, h=0.05).guarantee()
    assert comp.restate(geo, dp.REPLACE_ONE, diameter=math.hypot(1, 1)).epsilon == pytest.approx(0.5 * math.sqrt(2))
    with pytest.raises(ValueError, match="needs the domain's diameter"):
        comp.restate(geo, dp.REPLACE_ONE)


@pytest.mark.parametrize("name, params", [("laplace_ldp", dict(epsilon=2.0, h=0.1)), ("privtree", dict(epsilon=1.0))])
@pytest.mark.parametrize("rows", [1, 3, 8])
def test_person_level_is_the_workflows_person_epsilon(name, params, rows):
    g = api.CLASSES[next(c for c in api.CLASSES if api.CLASSES[c].name == name)](**params).guarantee()
    person = comp.person_level(g, rows)
    assert person.relation == comp.PERSON_REPLACE
    assert person.epsilon == person_level_epsilon(comp.restate(g, dp.REPLACE_ONE).epsilon, rows)


def test_accountant_is_keyword_only_and_validated():
    assert all(p.kind == p.KEYWORD_ONLY for p in inspect.signature(BudgetAccountant).parameters.values())
    with pytest.raises(TypeError):
        BudgetAccountant(1.0)
    for bad in (dict(epsilon=-1), dict(epsilon=float("nan")), dict(epsilon=True), dict(delta=2.0), dict(rule="x")):
        with pytest.raises(ValueError):
            BudgetAccountant(**bad)
    with pytest.raises(ValueError, match="slack in"):
        BudgetAccountant(epsilon=1.0, delta=1e-6, rule=comp.ZCDP)
    acc = BudgetAccountant(epsilon=np.float32(2.0), delta=np.float64(1e-6))  # numpy scalars, as diffprivlib's
    assert (acc.epsilon, acc.delta, acc.remaining()) == (2.0, 1e-6, (2.0, 1e-6))
    assert BudgetAccountant().remaining() == (math.inf, 0.0)
    assert api.BudgetAccountant is BudgetAccountant and "BudgetAccountant" in api.__all__


def test_accountant_spends_refuses_and_stays_unchanged():
    acc = BudgetAccountant(epsilon=1.0)
    for _ in range(3):  # three thirds fill the budget exactly, float rounding notwithstanding
        acc.spend(count_record(1 / 3, 0.0))
    assert acc.remaining() == (pytest.approx(0.0, abs=1e-15), 0.0)
    before = acc.spent
    with pytest.raises(BudgetError, match=r"over budget.*Nothing was spent"):
        acc.spend(count_record(0.01))
    assert acc.spent == before
    with pytest.raises(BudgetError, match="no formal guarantee"):
        BudgetAccountant(epsilon=1.0).spend(api.RFF(h=0.05, B=2))
    # the first record fixes the relation; another relation is restated or refused with the way out
    acc = BudgetAccountant(epsilon=10.0).spend(api.LaplaceLDP(epsilon=1.0, h=0.1))
    with pytest.raises(BudgetError, match=r"relation=locpriv\.dp\.REPLACE_ONE"):
        acc.spend(api.PrivTree(epsilon=1.0))
    acc = BudgetAccountant(epsilon=10.0, relation=dp.REPLACE_ONE)
    acc.spend(api.LaplaceLDP(epsilon=1.0, h=0.1)).spend(api.PrivTree(epsilon=1.0))
    assert acc.total() == (3.0, 0.0) and acc.remaining(2) == (3.5, 0.0)
    with pytest.raises(BudgetError, match="diameter="):
        acc.spend(api.GeoInd(epsilon=1.0, h=0.05))
    acc = BudgetAccountant(epsilon=10.0, relation=dp.REPLACE_ONE, diameter=math.sqrt(2))
    assert acc.spend(api.GeoInd(epsilon=1.0, h=0.05)).total()[0] == pytest.approx(math.sqrt(2))


def test_zcdp_accountant_remaining_is_the_largest_that_fits():
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5, rule=comp.ZCDP, slack=1e-6)
    for _ in range(50):
        acc.spend(count_record(0.1))
    eps, delta = acc.remaining(5)
    assert delta == pytest.approx((1e-5 - 1e-6) / 5)
    acc.check(count_record(eps))  # fits ...
    more = [count_record(eps * (1 + 1e-9))] * 5
    assert comp.total([*acc.spent, *more], rule=comp.ZCDP, slack=1e-6)[0] > 5.0  # ... and a hair more does not


def test_composed_releases_audited_below_total_with_a_planted_fault_refuted():
    """T releases of one person's count (discrete Laplace, eps each): the joint output's empirical lower
    bound stays below the accountant's total T eps, and exceeds the total of a ledger that charged one
    of the releases at eps / 2.  The event "every window's count >= its value with the person" has
    probability ratio exactly e^(T eps) (P(Y >= 0) / P(Y >= 1) = e^eps per window), so the audit has the
    power to see the whole total (alpha = 0.05, Clopper-Pearson, audit.estimator)."""
    T, eps, n = 4, 0.5, 200_000
    acc = BudgetAccountant(epsilon=T * eps)
    for _ in range(T):
        acc.spend(count_record(eps))
    faulty = comp.total([count_record(eps)] * (T - 1) + [count_record(eps / 2)])[0]

    def releases(count: int, key: str) -> np.ndarray:
        return count + discrete_laplace(1 / eps, rng(42, "composition audit", key), size=(n, T))

    with_person, without = releases(1, "with"), releases(0, "without")

    def llr(y):  # the log-likelihood ratio statistic, / eps: public post-processing of the outputs
        return np.clip(2 * y - 1, -1, 1).sum(axis=1, keepdims=True)

    result = audit_samples(with_person, without, stat_x=llr(with_person), stat_xp=llr(without))
    assert faulty < result.epsilon_lb <= acc.total()[0], (result, faulty)
