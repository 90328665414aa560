"""Per-client and secure aggregation of the distributed heatmap against the population-scale mode,
and the achieved-epsilon bookkeeping of every method."""

import math

import numpy as np
import pytest
from scipy import stats

from locpriv.heatmaps import baselines, polya
from locpriv.heatmaps.adaptive import AdaptiveParams, run_adaptive
from locpriv.heatmaps.aggregation import SecAgg, UserPool, noisy_histogram, round_achieved_epsilon, survive
from locpriv.heatmaps.study import make_secagg
from locpriv.quadtree import interleave
from locpriv.secagg import ProtocolParams

ALPHA = 1e-6
DRAWS = 2000


def cell_sums(secagg, epsilon=0.5, draws=DRAWS, seed=0):
    """Noisy level-1 sums (4 cells) of 60 users in shards of 25, 25, 10 with 20 % dropout, per draw."""
    image = np.zeros((4, 4), dtype=np.int64)
    image[0, 0], image[1, 2], image[3, 3], image[2, 1] = 30, 15, 10, 5
    rng = np.random.default_rng(seed)
    out = np.empty((draws, 4), dtype=np.int64)
    for i in range(draws):
        survivors = survive(UserPool(image).draw(60, rng), 2, secagg, rng)
        out[i] = noisy_histogram(
            survivors, lambda x, y: interleave(x, y, 2) >> 2, 4, epsilon, 1, rng, secagg=secagg
        ).noisy
    return out


def differ(a, b) -> bool:
    """Some cell's laws differ: two-sample KS per cell, Bonferroni over the 4 cells at family level ALPHA."""
    return min(stats.ks_2samp(a[:, j], b[:, j]).pvalue for j in range(a.shape[1])) < ALPHA / a.shape[1]


def test_per_client_and_population_modes_agree_in_distribution():
    plan = dict(shard_size=25, dropout_rate=0.2, planned_dropout=0.1)
    population = cell_sums(SecAgg(**plan), seed=1)
    per_client = cell_sums(SecAgg(**plan, mode="per_client", protocol=ProtocolParams(bits=8)), seed=2)
    assert not differ(population, per_client)
    # power: the same test flags a scale change (half the budget: twice the noise) and a shift of one count
    assert differ(cell_sums(SecAgg(**plan), epsilon=0.25, seed=3), per_client)
    assert differ(population, per_client + np.array([0, 0, 1, 0]))


def test_shard_sums_wrap_mod_m_when_bits_are_too_few():
    # m = 16: each of the 3 shards' sums is read in [-8, 8), so a cell holding 30 users cannot show 30
    wrapped = cell_sums(SecAgg(shard_size=25, mode="per_client", protocol=ProtocolParams(bits=4)), draws=200)
    assert (wrapped >= -8 * 3).all() and (wrapped < 8 * 3).all()
    assert wrapped[:, 0].mean() < 15 < cell_sums(SecAgg(shard_size=25), draws=200)[:, 0].mean()


def blob(depth=5):
    side = 1 << depth
    image = np.full((side, side), 2, dtype=np.int64)
    image[4:10, 4:10] = 60
    return image


def test_secure_mode_gives_the_per_client_map_bit_for_bit_and_the_same_epsilon():
    run = {"shard_size": 150, "dropout": 0.1}
    results = {}
    for mode in ("per_client", "secure"):
        # epsilon 3 gives two sub-queries at 300 users whatever the tree options (one at epsilon 1)
        params = AdaptiveParams(
            epsilon=3.0,
            users_per_round=300,
            sampling="fixed",
            secagg=make_secagg(run, mode, {"degree": 12}, np.random.default_rng(9)),
        )
        results[mode] = run_adaptive(blob(), params, np.random.default_rng(4))
    ideal, secure = results["per_client"], results["secure"]
    assert len(ideal.rounds) == len(secure.rounds) > 1
    assert all((a.noisy == b.noisy).all() for a, b in zip(ideal.rounds, secure.rounds, strict=True))
    assert np.array_equal(ideal.heatmap(), secure.heatmap())
    assert ideal.epsilon_spent == secure.epsilon_spent and ideal.epsilon_achieved == secure.epsilon_achieved
    log = secure.protocol_transcript
    assert set(log["round"]) == set(range(len(secure.rounds))) and set(log["shard"]) == {0, 1}
    assert ideal.protocol_transcript is None


def test_tiny_round_budgets_get_a_finite_valid_achieved_epsilon():
    survivors = survive(np.array([0, 500, 300, 200]), 1, SecAgg(shard_size=1000, planned_dropout=0.0), None)
    short = type(survivors)(survivors.counts, 1, 1000, np.array([900]), np.array([1000]))
    tiny = round_achieved_epsilon(short, 1e-5, 1, max_support=20_000)
    assert math.isfinite(tiny) and 1e-5 < tiny <= polya.achieved_epsilon_bound(900, 1000, 1e-5, 1)
    # the closed-form bound is never below the exact level where both are computable
    for k, eps in [(900, 1.0), (500, 1.0), (100, 0.3), (990, 0.05)]:
        exact = polya.achieved_epsilon(k, 1000, eps, 1)
        assert eps <= exact <= polya.achieved_epsilon_bound(k, 1000, eps, 1) + 1e-12


@pytest.mark.parametrize("method", ["flat", "hierarchical", "count_min", "adaptive_grid", "psd"])
def test_every_baseline_reports_its_achieved_epsilon(method):
    fn = {"psd": baselines.private_spatial_decomposition}.get(method) or getattr(baselines, method)
    image = blob(5)
    kwargs = {"width": 64, "depth": 4} if method == "count_min" else {}
    planned = fn(image, 1500, 1.0, np.random.default_rng(0), SecAgg(shard_size=500), **kwargs)
    assert planned.achieved_epsilon == pytest.approx(planned.epsilon)
    short = fn(
        image,
        1500,
        1.0,
        np.random.default_rng(0),
        SecAgg(shard_size=500, dropout_rate=0.3, planned_dropout=0.0),
        **kwargs,
    )
    assert short.achieved_epsilon > short.epsilon
