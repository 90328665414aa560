"""Per-client and secure aggregation of the multi-location experiment ([DDP-Heatmaps] §5.7) against the
population-scale mode: same law, same bits, same recorded guarantee."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from locpriv import io
from locpriv.heatmaps import multi_location
from locpriv.heatmaps.multi_study import multi_stage
from locpriv.heatmaps.study import make_secagg

ALPHA = 1e-6
DRAWS = 2000
BITS = [6, 16]  # m = 64 wraps the noisy shard sums often (noise sd ~ 16 per shard); 2^16 never does


def users(n_users=12, dim=6, max_points=3, scale=20.0, seed=0):
    """Fixed weighted multisets (1-3 points each), encoded once: the draws differ only in deal and noise."""
    rng = np.random.default_rng(seed)
    points = rng.integers(1, max_points + 1, n_users)
    user = np.repeat(np.arange(n_users), points)
    index = np.concatenate([rng.choice(dim, k, replace=False) for k in points])
    contribution = multi_location.encode_users(user, rng.uniform(1, 5, len(user)), scale, rng)
    return user, index, contribution, dim, multi_location.sensitivity(scale, max_points)


def draws(mode, epsilon=2.0, n=DRAWS, seed=0, shard_size=5, **kw):
    """Per draw, the server's wrapped sums at every clip width: (n, len(BITS) * dim)."""
    user, index, contribution, dim, sens = users(**kw)
    config = make_secagg({"shard_size": shard_size, "dropout": 0.0}, mode, None, np.random.default_rng(seed + 99))
    rng = np.random.default_rng(seed)
    out = np.empty((n, len(BITS) * dim), dtype=np.int64)
    for i in range(n):
        sums = multi_location.modular_sums(user, index, contribution, dim, epsilon, sens, BITS, config, rng)
        out[i] = np.concatenate([sums.wrapped[b] for b in BITS])
    return out


def differ(a, b) -> bool:
    """Some cell's laws differ: two-sample KS per cell, Bonferroni over the cells at family level ALPHA."""
    return min(stats.ks_2samp(a[:, j], b[:, j]).pvalue for j in range(a.shape[1])) < ALPHA / a.shape[1]


def test_per_client_and_population_modes_agree_in_distribution_wrap_around_included():
    population, per_client = draws("population", seed=1), draws("per_client", seed=2)
    # m = 64 really wraps (else the test would only cover the ideal sum): some reads differ from the 2^16 ones
    assert (per_client[:, :6] != per_client[:, 6:]).any(axis=1).mean() > 0.5
    assert not differ(population, per_client)
    # power: the same test flags half the budget (twice the noise) and a shift of about half an sd in one cell
    assert differ(draws("population", epsilon=1.0, seed=3), per_client)
    shifted = population.copy()
    shifted[:, 6 + 2] += 15
    assert differ(shifted, per_client)


def test_secure_mode_gives_the_per_client_sums_bit_for_bit():
    user, index, contribution, dim, sens = users(n_users=40, dim=10)
    out = {}
    for mode in ("per_client", "secure"):
        config = make_secagg({"shard_size": 16, "dropout": 0.0}, mode, {"graph": "harary"}, np.random.default_rng(5))
        out[mode] = multi_location.modular_sums(
            user, index, contribution, dim, 1.0, sens, BITS, config, np.random.default_rng(4)
        )
    ideal, secure = out["per_client"], out["secure"]
    assert all(np.array_equal(ideal.wrapped[b], secure.wrapped[b]) for b in BITS)
    assert np.array_equal(ideal.noisy, secure.noisy) and np.array_equal(ideal.exact, secure.exact)
    assert ideal.client_bytes[6] is None
    assert secure.client_bytes[16] - secure.client_bytes[6] == dim  # masked vector: 2 bytes per entry against 1


def geolife_like(path, n_users, seed=0):
    rng = np.random.default_rng(seed)
    per_user = rng.integers(3, 30, n_users)
    frame = pd.DataFrame(
        {
            "user": np.repeat(np.arange(n_users), per_user),
            "lat": rng.uniform(39.8, 40.0, per_user.sum()),
            "lon": rng.uniform(116.2, 116.5, per_user.sum()),
        }
    )
    frame.to_csv(path, index=False)
    return str(path)


def stage(tmp_path, mode, path, shard_size, depth=3, bits=(8, 16)):
    multi = {
        "path": path,
        "lonlat_bbox": [116.15, 116.60, 39.75, 40.10],
        "depth": depth,
        "epsilon": 1.0,
        "scale": [10.0, 100.0],
        "bits": list(bits),
        "max_points": 4,
        "shard_size": shard_size,
    }
    out = tmp_path / f"{mode}.parquet"
    multi_stage(
        cfg={
            "multi_location": multi,
            "aggregation": mode,
            "secagg": {"graph": "harary", "degree": None, "threshold": 0.5, "bits": 32},
        },
        seed=7,
        out=str(out),
    )
    return pd.read_parquet(out), io.read_parquet_metadata(str(out))


@pytest.mark.parametrize(
    "n_users, shard_size",
    [
        (30, 8),
        pytest.param(2400, 1200, marks=pytest.mark.heavy),  # two shards of 1200 clients through the protocol
    ],
)
def test_every_mode_records_the_same_guarantee_and_secure_repeats_per_client(tmp_path, n_users, shard_size):
    path = geolife_like(tmp_path / "points.csv", n_users)
    runs = {mode: stage(tmp_path, mode, path, shard_size) for mode in ("population", "per_client", "secure")}
    guarantees = [meta["guarantee"] for _, meta in runs.values()]
    assert guarantees[0] == guarantees[1] == guarantees[2]
    assert guarantees[0]["epsilon"] == 1.0 and "s = 100: 104" in guarantees[0]["note"]
    assert all((table["sensitivity"] == runs["population"][0]["sensitivity"]).all() for table, _ in runs.values())
    assert [meta["aggregation"] for _, meta in runs.values()] == ["population", "per_client", "secure"]
    ideal, secure = runs["per_client"][0], runs["secure"][0]
    columns = [c for c in ideal.columns if c != "secagg_bytes_per_client"]
    pd.testing.assert_frame_equal(ideal[columns], secure[columns])
    assert ideal["secagg_bytes_per_client"].isna().all() and (secure["secagg_bytes_per_client"] > 0).all()
