"""The timing model on the public API (issue 28 item 4): ``timing: fixed_work`` draws every report's
noise with the same work whatever the noise, and every location mechanism's record states its model.

Work is measured without a clock: the 64-bit words the report consumed (an SFC64 generator counts
them) and the exact sequence of Python and C function calls the report made (``sys.setprofile``).

The test with power: the statistic is Spearman's rho between the words one report consumed and the
report's |noise|, over REPORTS reports on fresh streams; under independence sqrt(n - 1) rho is
approximately N(0, 1), so |sqrt(n - 1) rho| > Z_CRIT = 3.29 refutes independence at two-sided
alpha = 1e-3 (constant work: rho = 0).  The same statistic on the batch Pólya share (numpy's
Gamma–Poisson, a rejection/multiplication sampler: one word per unit of the draw) is above 10 at
n = 400 (test_the_statistic_detects_the_batch_share_sampler), so a pass is not vacuous.
"""

import dataclasses
import sys

import numpy as np
import pytest
from scipy import stats

from locpriv import GeoInd, LaplaceLDP, laplace_ldp, mechanisms, planar_laplace
from locpriv.dp import TIMING_BATCH, TIMING_FIXED_WORK, sampling
from locpriv.heatmaps import polya
from locpriv.mechanisms.base import as_grid
from locpriv.sldp import protocol as sldp_protocol

REPORTS = 200
DEPENDENCE_REPORTS = 400
Z_CRIT = 3.29  # two-sided alpha = 1e-3 for N(0, 1)


def _work(draw, seed):
    """(words consumed, call sequence, output) of ``draw(rng)`` on a fresh SFC64 stream."""
    rng = np.random.Generator(np.random.SFC64(seed))
    before = int(rng.bit_generator.state["state"]["state"][3])  # SFC64's output counter
    calls = []

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            calls.append(arg.__qualname__ if event == "c_call" else frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        out = draw(rng)
    finally:
        sys.setprofile(None)
    return int(rng.bit_generator.state["state"]["state"][3]) - before, tuple(calls), out


def _work_of_one_report(mech, seed):
    """(words consumed, call sequence, report) of one user's report at a fixed location."""
    return _work(
        lambda rng: mech.randomize(np.array([[0.3, 0.7]]), rng=rng, domain=[0, 1, 0, 1])[["x", "y"]].to_numpy()[0], seed
    )


def test_the_work_measure_sees_a_noise_dependent_loop():
    # power of the instrument: a geometric drawn by a rejection loop (the pre-issue-28 samplers'
    # shape) does work proportional to its value, and both measures show it (numpy's own methods raise
    # no profile event, so the call sequence sees the Python-level work, the words the draws)
    def coin(rng):
        return rng.random() < 0.5

    def loop(rng):
        k = 0
        while coin(rng):
            k += 1
        return k

    runs = [_work(loop, seed) for seed in range(REPORTS)]
    assert len({words for words, _, _ in runs}) > 3 and len({calls for _, calls, _ in runs}) > 3


def test_fixed_work_reports_do_the_same_work_whatever_the_noise():
    mech = LaplaceLDP(epsilon=1.0, h=0.5, timing="fixed_work")
    _work_of_one_report(mech, -1 % 2**32)  # warm caches (imports, lru_cache)
    runs = [_work_of_one_report(mech, seed) for seed in range(REPORTS)]
    noise = np.array([np.abs(report - [0.3, 0.7]).sum() for _, _, report in runs])
    # power: the noise did vary over a wide range (else equal work would prove nothing)
    # (|noise| summed over x, y: Laplace of scale 4 each; its median is about 5.4)
    assert np.unique(noise).size > REPORTS // 2
    assert noise.max() > 4 * np.median(noise) and noise.min() < np.median(noise) / 4
    assert {words for words, _, _ in runs} == {runs[0][0]}
    assert {calls for _, calls, _ in runs} == {runs[0][1]}


def test_fixed_work_record_states_its_model_and_delta():
    batch, fixed = (LaplaceLDP(epsilon=1.0, h=0.5, timing=t).guarantee() for t in ("batch", "fixed_work"))
    assert batch.timing == TIMING_BATCH and batch.delta == 0.0
    assert fixed.timing == TIMING_FIXED_WORK and 0.0 < fixed.delta < 1e-6 and fixed.epsilon == batch.epsilon
    # the recorded delta covers every box: it is at least the delta of the scales an actual box gives
    for side in (1.0, 1.9, 1000.0, 3e-3):
        bounds = np.array([[0.0, side], [5.0, 5.0 + side]])
        step = laplace_ldp.grid_steps(bounds)
        scales = laplace_ldp.scales(bounds, 1.0) / step
        assert fixed.delta >= sampling.timing_safe_delta(scales, 1.0)


@pytest.mark.parametrize("name", mechanisms.names())
def test_every_location_record_states_its_timing_model(name):
    cls = mechanisms.get(name)
    required = {"h": 0.5, "epsilon": 2.0, "B": 2}
    mech = cls(**{k: required.get(k, 1) for k, p in cls.params.items() if p.default is None})
    assert mech.guarantee().timing in (TIMING_BATCH, TIMING_FIXED_WORK)
    assert "timing" in mech.guarantee().as_dict()


def _dependence(runs, noise) -> float:
    """sqrt(n - 1) x Spearman's rho between the words each run consumed and |noise| (0 for constant work)."""
    words = np.array([w for w, _, _ in runs])
    if np.ptp(words) == 0:
        return 0.0
    return float(stats.spearmanr(words, np.abs(noise)).statistic * np.sqrt(len(runs) - 1))


def _share_runs(timing_safe: bool):
    draw = lambda rng: polya.client_shares(1, 1, 1.0, 1.0, 1, rng, timing_safe=timing_safe)[0, 0]  # noqa: E731
    runs = [_work(draw, seed) for seed in range(DEPENDENCE_REPORTS)]
    return runs, np.array([out for _, _, out in runs])


def test_the_statistic_detects_the_batch_share_sampler():
    # power check: a client's Pólya share as every heatmap mode but fixed_work draws it; its |share|
    # takes many values (else no statistic could see anything)
    runs, noise = _share_runs(False)
    assert np.unique(np.abs(noise)).size > 5
    assert _dependence(runs, noise) > Z_CRIT


def test_fixed_work_share_does_the_same_work_and_has_the_law():
    runs, noise = _share_runs(True)
    assert np.unique(np.abs(noise)).size > 5
    assert {w for w, _, _ in runs} == {2} and _dependence(runs, noise) == 0.0
    # the law: X - Y with X, Y ~ Pólya(1, a) is discrete Laplace P(z) ∝ a^|z|; chi-square at alpha 1e-3
    a = np.exp(-1.0)
    z = polya.client_shares(200_000, 1, 1.0, 1.0, 1, np.random.default_rng(5), timing_safe=True).ravel()
    support = np.arange(-6, 7)
    pmf = (1 - a) / (1 + a) * a ** np.abs(support)
    observed = np.array([(z == k).sum() for k in support] + [(np.abs(z) > 6).sum()])
    expected = z.size * np.append(pmf, 1 - pmf.sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    assert 0 < polya.polya_timing_tv(1.0, a) < 1e-15


def test_fixed_work_geoind_and_sldp_work_is_independent_of_the_noise():
    # geoind: rejection rounds vary, but in exact rejection sampling their number is independent of
    # the accepted noise; each round is fixed work, so the words must not depend on |noise|
    geo = GeoInd(epsilon=1.0, h=0.5, timing="fixed_work")
    runs = [_work_of_one_report(geo, seed) for seed in range(DEPENDENCE_REPORTS)]
    noise = np.array([np.hypot(*(report - [0.3, 0.7])) for _, _, report in runs])
    assert np.unique(noise).size > DEPENDENCE_REPORTS // 2
    assert abs(_dependence(runs, noise)) < Z_CRIT
    sldp = mechanisms.get("sldp")(epsilon=1.0, split_rule="all_children", timing="fixed_work")
    grid = as_grid([0, 1, 0, 1])

    def one_user(rng):
        return sldp.protocol(np.array([[0.3, 0.7]]), grid, rng, keep_user_reports=True).user_reports.steps

    runs = [_work(one_user, seed) for seed in range(REPORTS)]
    # the user answers one round (Q = 20 > 1 user); its one-hot is the same in every run, so this is
    # a fixed shift of the noise: its spread shows the noise varied
    noise = np.array([np.abs(out - 256 * (np.arange(out.size) % 4 == 0)).sum() for _, _, out in runs])
    assert np.unique(noise).size > REPORTS // 2
    assert len({w for w, _, _ in runs}) == 1 and _dependence(runs, noise) == 0.0


def test_geoind_and_sldp_records_state_the_fixed_work_delta():
    batch, fixed = (GeoInd(epsilon=0.5, h=1.0, timing=t).guarantee() for t in ("batch", "fixed_work"))
    assert batch.timing == TIMING_BATCH and batch.delta == 0.0 and batch.map(2.0) == (1.0, 0.0)
    tv = planar_laplace.timing_safe_tv(0.5)
    assert fixed.timing == TIMING_FIXED_WORK and fixed.delta == tv
    # metric DP with a sampler tv from exact: (eps d, (1 + e^(eps d)) tv), growing with the distance
    assert fixed.map(2.0) == (1.0, pytest.approx((1 + np.e) * tv))
    assert fixed.map(200.0)[1] > fixed.map(2.0)[1] and fixed.map(1e4)[1] == 1.0
    sldp = mechanisms.get("sldp")
    base, safe = (sldp(epsilon=1.0, split_rule="all_children", timing=t).guarantee() for t in ("batch", "fixed_work"))
    assert safe.timing == TIMING_FIXED_WORK and safe.epsilon == base.epsilon
    extra = (1 + np.exp(base.epsilon)) * sldp_protocol.timing_tv(1.0, 8)
    assert safe.delta == pytest.approx(base.delta + extra) and 0 < extra < 1e-6


def test_per_client_heatmap_vectors_draw_their_shares_with_fixed_work():
    # the per-client modes' client code (``clients.client_vectors``) with SecAgg(timing_safe=True)'s flag:
    # two words per entry (X and Y of the share) whatever the shares are
    from locpriv.heatmaps import clients

    def vectors(rng):
        return clients.client_vectors(np.array([0, 3, 5]), 8, 1.0, 1.0, 3, 20, rng, timing_safe=True)

    runs = [_work(vectors, seed) for seed in range(50)]
    assert {w for w, _, _ in runs} == {2 * 3 * 8}
    assert len({out.tobytes() for _, _, out in runs}) > 40  # the shares did vary


HEATMAPS = ("heatmap_flat", "heatmap_hierarchical", "dp_heatmap")
HEATMAP_RUNS = 150


def _heatmap_runs(name, timing):
    """Whole runs of a heatmap mechanism on one user (its own shard, per-client shares): the words each run
    consumed, the |noisy sums| the server saw and the public vector lengths (sum over sub-queries)."""
    mech = mechanisms.get(name)(epsilon=1.0, depth=1, shard_size=1, aggregation="per_client", timing=timing)

    def run(rng):
        rounds = mech.randomize(np.array([[0.1, 0.1]]), rng=rng, domain=[0, 1, 0, 1]).attrs["server_rounds"]
        return np.array([sum(np.abs(r["sums"]).sum() for r in rounds), sum(len(r["sums"][0]) for r in rounds)])

    runs = [_work(run, seed) for seed in range(HEATMAP_RUNS)]
    out = np.array([o for _, _, o in runs])
    return runs, out[:, 0], out[:, 1]


@pytest.mark.parametrize("name", HEATMAPS)
def test_fixed_work_heatmap_run_work_is_set_by_the_public_vector_lengths(name):
    # issue 28 item 4 for the heatmaps: with timing fixed_work a client's work is 2 words per entry of
    # the sub-query's (public) vector whatever its shares; the batch sampler's work follows |noise|
    # (power: sqrt(n - 1) rho > Z_CRIT at two-sided alpha = 1e-3; it measured 13 at 400 runs)
    runs, noise, length = _heatmap_runs(name, "fixed_work")
    assert np.unique(noise).size > 5  # the noise varied
    words = np.array([w for w, _, _ in runs])
    assert (words == 2 * length).all() and _dependence(runs, noise) == 0.0
    runs, noise, _ = _heatmap_runs(name, "batch")
    assert _dependence(runs, noise) > Z_CRIT


def test_heatmap_records_state_the_timing_model_and_the_fixed_work_delta():
    from locpriv.heatmaps.adaptive import AdaptiveParams

    for name in HEATMAPS:
        cls = mechanisms.get(name)
        batch, fixed = (cls(epsilon=1.0, aggregation="secure", timing=t) for t in ("batch", "fixed_work"))
        assert batch.guarantee().timing == TIMING_BATCH and fixed.guarantee().timing == TIMING_FIXED_WORK
        rounds, least = fixed.timing_schedule()
        s = fixed.settings
        expected = polya.fixed_work_delta(2.0, least, rounds, s["shard_size"], 4 ** s["depth"])
        if fixed.guarantee().epsilon is not None:  # heatmap_hierarchical's level choice voids its record
            assert batch.guarantee().delta == 0.0 and fixed.guarantee().delta == expected
            assert 0 < expected < 1e-5 and "(epsilon, delta)-DP" in fixed.guarantee().model
        # the population mode runs no client code: nothing to time
        with pytest.raises(ValueError, match=r"timing.*aggregation 'population'"):
            cls(epsilon=1.0, timing="fixed_work")
    # the delta's premise: with a floor every sub-query spends at least it (here many rounds, small targets)
    rng = np.random.default_rng(0)
    from locpriv.heatmaps.adaptive import run_adaptive

    image = rng.poisson(50, size=(8, 8))
    floor = 1.0 / 20
    params = AdaptiveParams(epsilon=1.0, users_per_round=int(image.sum()), sampling="fixed", min_round_epsilon=floor)
    spent = run_adaptive(image, params, np.random.default_rng(1)).transcript["epsilon"]
    assert len(spent) > 1 and (spent >= floor).all() and spent.sum() == pytest.approx(1.0)
    # power: without the floor this schedule's first sub-query spends less
    free = run_adaptive(image, dataclasses.replace(params, min_round_epsilon=0.0), np.random.default_rng(1))
    assert free.transcript["epsilon"].min() < floor
