"""Distributed discrete Laplace ([DDP-Heatmaps] §4): laws checked with chi-square at alpha = 1e-6."""

import math

import numpy as np
import pytest
from scipy import stats

from locpriv.heatmaps import polya

ALPHA_TEST = 1e-6


def discrete_laplace_pmf(z, a):
    return (1 - a) / (1 + a) * a ** np.abs(z)


def chi_square_pvalue(samples, pmf_of, width=2000):
    """Goodness of fit; bins are the values with expected count >= 5, tails pooled into the ends."""
    support = np.arange(-width, width + 1)
    expected = pmf_of(support) * len(samples)
    inner = support[expected >= 5]
    lo, hi = inner.min() + 1, inner.max() - 1
    values = np.arange(lo, hi + 1)
    z = np.clip(samples, lo, hi)
    observed = np.bincount(z - lo, minlength=len(values))
    exp = pmf_of(values) * len(samples)
    exp[0] = expected[support <= lo].sum()
    exp[-1] = expected[support >= hi].sum()
    return stats.chisquare(observed, exp * observed.sum() / exp.sum()).pvalue


@pytest.mark.parametrize("epsilon, sensitivity, n", [(1.0, 1, 50), (0.5, 2, 7)])
def test_sum_of_client_shares_is_discrete_laplace(epsilon, sensitivity, n):
    rng = np.random.default_rng(1)
    shares = polya.client_shares(n, 20000, epsilon, sensitivity, n, rng)
    total = shares.sum(axis=0)
    a = math.exp(-epsilon / sensitivity)
    assert chi_square_pvalue(total, lambda z: discrete_laplace_pmf(z, a)) > ALPHA_TEST


def test_aggregate_law_matches_per_client_sampling():
    """Exact aggregate sampler vs summed per-client shares, with 30 of 40 planned survivors."""
    rng = np.random.default_rng(2)
    per_client = polya.client_shares(30, 20000, 1.0, 1, 40, rng).sum(axis=0)
    exact = polya.aggregate_noise(30, 20000, 1.0, 1, 40, rng)
    lo, hi = -8, 8
    counts = [np.bincount(np.clip(x, lo, hi) - lo, minlength=hi - lo + 1) for x in (per_client, exact)]
    assert stats.chi2_contingency(np.array(counts)).pvalue > ALPHA_TEST
    # and both follow the difference of two Polya(30/40) laws
    pmf = polya.difference_pmf(30 / 40, math.exp(-1.0), 2000)
    assert chi_square_pvalue(exact, lambda z: pmf[z + 2000]) > ALPHA_TEST


def test_modular_reduction_commutes_with_the_sum():
    rng = np.random.default_rng(3)
    m = 2**8
    values = rng.integers(-1000, 1000, size=(500, 64))
    reduced = polya.reduce_mod(values, m)
    assert reduced.min() >= 0 and reduced.max() < m
    np.testing.assert_array_equal(np.mod(reduced.sum(0), m), np.mod(values.sum(0), m))
    small = rng.integers(-2, 3, size=(20, 64))  # |sum| <= 40 < m / 2: recovered exactly
    np.testing.assert_array_equal(polya.secure_sum(polya.reduce_mod(small, m), m), small.sum(0))


def test_achieved_epsilon_is_the_target_with_enough_survivors_and_weaker_below():
    n_dp = polya.dp_shard_size(1000, 0.2)
    assert n_dp == 800
    assert polya.achieved_epsilon(800, n_dp, 1.0, 1) == 1.0
    assert polya.achieved_epsilon(1000, n_dp, 1.0, 1) == 1.0
    weaker = [polya.achieved_epsilon(k, n_dp, 1.0, 1) for k in (600, 400, 100)]
    assert 1.0 < weaker[0] < weaker[1] < weaker[2]
    # Polya(r) ratio p(0)/p(1) = 1/(r a) bounds the loss from below at z = 0 side
    assert weaker[2] >= math.log(1 / ((100 / 800) * math.exp(-1.0))) - 1.0
    assert polya.achieved_epsilon(0, n_dp, 1.0, 1) == math.inf


def test_the_exact_loss_at_full_strength_is_epsilon():
    """The numerical loss of Polya(1) differences (discrete Laplace) equals epsilon."""
    a = math.exp(-0.7 / 2)
    pmf = polya.difference_pmf(1.0, a, 200)
    ratio = np.abs(np.log(pmf[:-2]) - np.log(pmf[2:]))
    assert ratio[pmf[:-2] > 1e-12].max() == pytest.approx(0.7, rel=1e-9)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 0.0, "sensitivity": 1}, "epsilon"),
        ({"epsilon": 1.0, "sensitivity": -1}, "sensitivity"),
    ],
)
def test_bad_parameters_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        polya.client_shares(2, 3, n_dp=2, rng=np.random.default_rng(0), **kwargs)
