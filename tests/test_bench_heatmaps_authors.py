"""The harness that runs the authors' heatmap code beside dp_heatmap (perf/bench_heatmaps.py --authors).

Their code itself is never part of this repository, so these tests cover what the harness adds:
the noise class standing in for theirs at 10^6 users, the per-user records fed to their run, and
the paired summary.  Statistical test: chi-square at alpha = 1e-6 (``test_heatmaps_polya``), with
a power check.
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from test_heatmaps_polya import ALPHA_TEST, chi_square_pvalue, discrete_laplace_pmf

_SPEC = importlib.util.spec_from_file_location(
    "bench_heatmaps", Path(__file__).resolve().parents[1] / "perf" / "bench_heatmaps.py"
)
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


def _shard_sum(num_clients, epsilon, entries, rng):
    """Their run's sum over one shard: batches of 100 clients through the noise class (as make_step does)."""
    bench.PolyaSum.rng = rng
    noiser = bench.PolyaSum(num_clients, 1, epsilon)
    return sum(noiser.apply_noise(np.zeros([100, entries])).sum(axis=0) for _ in range(10_000 // 100)).astype(int)


@pytest.mark.parametrize("epsilon", [0.05, 1.0])
def test_polya_sum_over_a_shard_is_discrete_laplace(epsilon):
    total = _shard_sum(10_000, epsilon, 5_000, np.random.default_rng(3))
    a = math.exp(-epsilon)
    assert chi_square_pvalue(total, lambda z: discrete_laplace_pmf(z, a)) > ALPHA_TEST


def test_polya_sum_check_has_power():
    # noise provisioned for half the clients (variance x2) must be rejected by the same test
    total = _shard_sum(5_000, 1.0, 5_000, np.random.default_rng(4))
    assert chi_square_pvalue(total, lambda z: discrete_laplace_pmf(z, math.exp(-1.0))) < ALPHA_TEST


def test_user_records_follow_the_image_row_major_with_repeats():
    records = bench.user_records(np.array([[1, 0], [2, 1]]))
    assert records.dtype.names == ("x", "y") and records["x"].dtype == np.int16
    assert records.tolist() == [(0, 0), (1, 0), (1, 0), (1, 1)]


def test_summary_pairs_each_rep_with_the_authors_own_noise_where_it_ran():
    rows = []
    for rep, scale in enumerate((1.0, 2.0)):
        for n, methods in ((100_000, (bench.AUTHORS, bench.AUTHORS_LAW)), (1_000_000, (bench.AUTHORS_LAW,))):
            for method in methods:
                rows.append(
                    dict(
                        input="m",
                        users_per_round=n,
                        rep=rep,
                        method=method,
                        map=bench.THEIR_MAP,
                        mse=4.0 * scale * (1.1 if method == bench.AUTHORS else 1.0),
                        l1=2.0,
                        communication=10,
                        rounds=3,
                        epsilon=1.0,
                        seconds=1.0,
                        their_mse=0.0,
                        deepest=5,
                    )
                )
            rows.append(
                dict(
                    input="m",
                    users_per_round=n,
                    rep=rep,
                    method=bench.LOCPRIV_DEFAULTS,
                    map=bench.SMOOTH,
                    mse=scale * (1.0 if rep == 0 else 6.0),
                    l1=1.0,
                    communication=12,
                    rounds=4,
                    epsilon=1.0,
                    seconds=1.0,
                    their_mse=np.nan,
                    deepest=6,
                )
            )
    out = bench.authors_summary(pd.DataFrame(rows))
    small = out.loc[("m", 100_000, bench.LOCPRIV_DEFAULTS, bench.SMOOTH)]
    assert small["reference"] == bench.AUTHORS
    # rep 0: 1 / 4.4 - 1, rep 1: 12 / 8.8 - 1 (per-rep ratios, then the mean)
    changes = [100 * (1 / 4.4 - 1), 100 * (12 / 8.8 - 1)]
    assert small["MSE vs authors (%)"] == pytest.approx(np.mean(changes))
    assert small["± s.e. (%)"] == pytest.approx(np.std(changes, ddof=1) / math.sqrt(2))
    assert small["reps lower"] == "1 / 2" and small["L1 vs authors (%)"] == pytest.approx(-50)
    assert out.loc[("m", 100_000, bench.AUTHORS_LAW, bench.THEIR_MAP), "MSE vs authors (%)"] == pytest.approx(
        100 * (1 / 1.1 - 1)
    )
    large = out.loc[("m", 1_000_000, bench.LOCPRIV_DEFAULTS, bench.SMOOTH)]
    assert large["reference"] == bench.AUTHORS_LAW
    assert large["MSE vs authors (%)"] == pytest.approx(np.mean([100 * (1 / 4 - 1), 100 * (12 / 8 - 1)]))
