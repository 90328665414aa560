"""The timing model on the public API (issue 28 item 4): ``timing: fixed_work`` draws every report's
noise with the same work whatever the noise, and every location mechanism's record states its model.

Work is measured without a clock: the 64-bit words the report consumed (an SFC64 generator counts
them) and the exact sequence of Python and C function calls the report made (``sys.setprofile``).
"""

import sys

import numpy as np
import pytest

from locpriv import LaplaceLDP, laplace_ldp, mechanisms
from locpriv.dp import TIMING_BATCH, TIMING_FIXED_WORK, sampling

REPORTS = 200


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
