"""The audit's estimator: Clopper–Pearson bounds, soundness on correct mechanisms, power on broken ones.

Every bound below is the audit's one-sided 95 % statement (α = 0.05): for a correct
mechanism ε_lb <= ε except with probability <= α; the seeds are fixed, so each
assertion is deterministic.  Power checks make sure no test passes vacuously.
"""

import numpy as np
import pytest

from locpriv.audit.estimator import ALPHA, audit, audit_samples, cp_lower, cp_upper, granularity
from locpriv.dp.sampling import discrete_laplace

DRAWS = 100_000


def _dlap(scale, shift=0):
    return lambda n, rng: (shift + discrete_laplace(scale, rng, size=n)).astype(float)


def test_clopper_pearson_edges_are_exact():
    m, beta = 1000, 0.025
    assert cp_upper(0, m, beta) == pytest.approx(1 - beta ** (1 / m), rel=1e-9)
    assert cp_lower(m, m, beta) == pytest.approx(beta ** (1 / m), rel=1e-9)
    assert cp_lower(0, m, beta) == 0.0 and cp_upper(m, m, beta) == 1.0


def test_clopper_pearson_covers_at_its_level():
    # 4000 binomial experiments: the lower bound misses p w.p. <= beta = 0.05 each, so the
    # miss count is stochastically below Binomial(4000, 0.05) (mean 200, sd 13.8); allow mean + 4 sd
    rng = np.random.default_rng(7)
    p, m, beta = 0.03, 500, 0.05
    k = rng.binomial(m, p, size=4000)
    assert (cp_lower(k, m, beta) > p).sum() <= 200 + 4 * 13.8
    assert (cp_upper(k, m, beta) < p).sum() <= 200 + 4 * 13.8
    # and not vacuous: the bounds are within a few standard errors of p
    assert np.median(p - cp_lower(k, m, beta)) < 4 * np.sqrt(p * (1 - p) / m)


def test_granularity_is_the_lowest_set_bit():
    values = np.array([1.0, 0.5, 3.0, 6.0, 0.1, 2.0**-60, -0.75, 0.0])
    g = granularity(values)
    assert g[:7].tolist() == [0, -1, 0, 1, -55, -60, -2]  # 0.1 = 0x3FB999999999999A: last bit 2^-55
    assert g[7] > 1000


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_correct_discrete_laplace_stays_below_epsilon_and_close_to_it(epsilon):
    # sensitivity-1 integer report with discrete Laplace(1/ε): exactly ε-DP
    res = audit(_dlap(1 / epsilon), _dlap(1 / epsilon, 1), DRAWS, np.random.default_rng(1), np.random.default_rng(2))
    assert res.epsilon_lb <= epsilon
    assert res.epsilon_lb >= 0.8 * epsilon  # power: the audit is tight on this law
    assert res.confidence == 1 - ALPHA


def test_power_laplace_one_over_epsilon_on_a_sensitivity_two_report():
    # the SLDP slip: Laplace(1/ε) per indicator, and a move changes two indicators (true cost 2ε)
    epsilon = 1.0
    res = audit(_dlap(1 / epsilon), _dlap(1 / epsilon, 2), DRAWS, np.random.default_rng(3), np.random.default_rng(4))
    assert res.epsilon_lb > 1.5 * epsilon


def test_power_floating_point_attack_on_the_continuous_sampler():
    # the old laplace_ldp client: y = x + Laplace(0, 1) * b on doubles (Mironov 2012); box [-3, 3],
    # epsilon 4 per 2-D location -> b = 2 * 6 / 4 per coordinate; centre vs corner
    b = 2 * 6 / 4.0

    def old(x):
        return lambda n, rng: x + rng.laplace(0.0, 1.0, n) * b

    res = audit(old(0.0), old(3.0), DRAWS, np.random.default_rng(5), np.random.default_rng(6))
    # an output set with P(S | x') = 0 exactly (no test draw under x') but P(S | x) > 5 %: the
    # true ε is infinite; the bound is capped only by the draws, log(m P(S | x) / 3.7)
    assert res.k_xp == 0 and res.k_x > 0.05 * res.m
    assert "granularity" in res.event
    assert res.epsilon_lb > 1.5 * 4.0
    more = audit(old(0.0), old(3.0), 4 * DRAWS, np.random.default_rng(5), np.random.default_rng(6))
    assert more.k_xp == 0 and more.epsilon_lb > res.epsilon_lb + 1.0  # grows like log(draws)


def test_delta_and_distance_weaken_the_bound():
    out_x = discrete_laplace(1.0, np.random.default_rng(8), size=40_000).astype(float)
    out_xp = 1 + discrete_laplace(1.0, np.random.default_rng(9), size=40_000).astype(float)
    pure = audit_samples(out_x, out_xp).epsilon_lb
    assert 0.5 < pure <= 1.0
    assert audit_samples(out_x, out_xp, delta=0.05).epsilon_lb < pure
    assert audit_samples(out_x, out_xp, distance=2.0).epsilon_lb == pytest.approx(pure / 2)


def test_same_seed_same_bound_and_bad_input():
    args = (_dlap(1.0), _dlap(1.0, 1), 20_000)
    a = audit(*args, np.random.default_rng(1), np.random.default_rng(2))
    b = audit(*args, np.random.default_rng(1), np.random.default_rng(2))
    assert a == b
    with pytest.raises(ValueError, match="same number"):
        audit_samples(np.zeros(10), np.zeros(11))
    with pytest.raises(ValueError, match="distance"):
        audit(*args, np.random.default_rng(1), np.random.default_rng(2), distance=0.0)
