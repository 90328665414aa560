"""Pairwise-masking secure aggregation (Bonawitz et al. 2017; Bell et al. 2020): exactness, masking,
what the server holds, and failure modes."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from locpriv.secagg import ProtocolError, ProtocolParams, aggregate, graph, protocol, shamir
from locpriv.secagg.crypto import random_field

ALPHA = 1e-6


def inputs(n, dim, bits, seed=0):
    return np.random.default_rng(seed).integers(0, 1 << bits, (n, dim))


def run(x, survivors, params, seed=1):
    return aggregate(x[survivors], survivors, len(x), params, np.random.default_rng(seed), b"test")


@pytest.mark.parametrize("params, n, dropped", [
    (ProtocolParams(bits=16, graph="complete"), 12, 0),
    (ProtocolParams(bits=16, graph="complete"), 12, 3),
    (ProtocolParams(bits=16, graph="complete"), 12, 5),     # t = 7 of 12 holders (self included): n - t dropped
    (ProtocolParams(bits=62, graph="complete"), 7, 2),
    (ProtocolParams(bits=20, graph="harary", degree=8), 60, 0),
    (ProtocolParams(bits=20, graph="harary", degree=8), 60, 5),
])
def test_exact_modular_sum_with_and_without_dropouts(params, n, dropped):
    x = inputs(n, 40, params.bits)
    survivors = np.sort(np.random.default_rng(n + dropped).permutation(n)[dropped:])
    total, transcript = run(x, survivors, params)
    assert total.dtype == np.uint64
    expected = np.array([sum(int(v) for v in col) % (1 << params.bits) for col in x[survivors].T], dtype=object)
    assert (total.astype(object) == expected).all()
    assert set(transcript.loc[transcript["kind"] == "masked_vector", "sender"]) == set(survivors.tolist())


@pytest.mark.parametrize("params, n", [(ProtocolParams(bits=20, graph="harary", degree=8), 60),
                                       (ProtocolParams(bits=12, graph="complete"), 15)])
def test_client_bytes_are_what_the_transcript_counts(params, n):
    survivors = np.arange(3, n)
    _, transcript = run(inputs(n, 33, params.bits), survivors, params)
    sent = transcript.groupby(["sender", "step"])["bytes"].sum().unstack(fill_value=0)
    expected = protocol.client_bytes(n, 33, params)
    assert (sent.loc[survivors, list(expected)] == pd.Series(expected)).all().all()
    # a client that drops before step 2 sends its keys and sealed shares only
    assert sent.loc[0, ["masked_input", "unmasking"]].sum() == 0
    assert sent.loc[0, "share_keys"] == expected["share_keys"]


def test_n_minus_t_is_the_most_dropouts_a_complete_graph_survives():
    params = ProtocolParams(bits=16, graph="complete")
    x = inputs(12, 5, 16)
    t = graph.threshold(12, params.threshold)
    with pytest.raises(ProtocolError, match="fewer than the threshold"):
        run(x, np.arange(t - 1), params)
    total, _ = run(x, np.arange(t), params)
    assert (total.astype(np.int64) == x[:t].sum(axis=0) % (1 << 16)).all()


def test_a_client_with_too_few_surviving_neighbours_stops_the_shard():
    params = ProtocolParams(bits=16, graph="harary", degree=4)      # t = 3 of 5 holders (4 neighbours + self)
    x = inputs(30, 5, 16)
    survivors = np.arange(0, 30, 2)                                 # half drop: someone keeps < 3
    with pytest.raises(ProtocolError, match="fewer than t = 3 surviving holders"):
        run(x, survivors, params)


def masked_vectors(monkeypatch, x, survivors, params):
    seen = {}
    original = protocol.Server.receive_masked

    def spy(self, u, y):
        seen[u] = y.copy()
        original(self, u, y)

    monkeypatch.setattr(protocol.Server, "receive_masked", spy)
    run(x, survivors, params)
    return seen


def test_one_masked_vector_is_uniform_on_z_m(monkeypatch):
    # a client whose input is all zeros: what the server receives must still look uniform on Z_16
    bits, dim = 4, 40_000
    params = ProtocolParams(bits=bits, graph="complete")
    x = np.zeros((5, dim), dtype=np.int64)
    seen = masked_vectors(monkeypatch, x, np.arange(5), params)
    counts = np.bincount(seen[0].astype(np.int64), minlength=1 << bits)
    assert stats.chisquare(counts).pvalue > ALPHA
    # power: the unmasked vector of a heatmap client (one-hot plus a Polya share, mod 16) is far from uniform
    from locpriv.heatmaps.clients import client_vectors
    plain = client_vectors(np.array([3]), dim, 1.0, 1, 100, bits, np.random.default_rng(0))[0]
    assert stats.chisquare(np.bincount(plain.astype(np.int64), minlength=1 << bits)).pvalue < ALPHA


def test_server_never_holds_t_shares_of_both_secrets_of_a_client():
    params = ProtocolParams(bits=16, graph="harary", degree=10)
    n = 50
    survivors = np.sort(np.random.default_rng(3).permutation(n)[4:])
    _, transcript = run(inputs(n, 8, 16), survivors, params)
    t = graph.threshold(11, params.threshold)
    shares = transcript[transcript["step"] == "unmasking"]
    held = shares.groupby(["owner", "kind"]).size().unstack(fill_value=0).reindex(range(n), fill_value=0)
    alive = np.isin(np.arange(n), survivors)
    assert (held.loc[alive, "mask_key"] == 0).all() and (held.loc[alive, "self_seed"] >= t).all()
    assert (held.loc[~alive, "self_seed"] == 0).all() and (held.loc[~alive, "mask_key"] >= t).all()
    assert ((held["mask_key"] >= t) & (held["self_seed"] >= t)).sum() == 0
    # shares in the key-sharing step reach the server sealed (one bundle per client, nothing in the clear)
    sealed = transcript[transcript["step"] == "share_keys"]
    assert (sealed["kind"] == "sealed_shares").all() and len(sealed) == n


def corrupt(monkeypatch, kind):
    original = protocol.Clients.unmask_response

    def lying(self, v, survivors):
        out = original(self, v, survivors)
        if v == min(survivors):   # the first survivor hands in one wrong share
            key = next(k for k in sorted(out) if k[1] == kind)
            out[key] = (out[key] + 1) % shamir.PRIME
        return out

    monkeypatch.setattr(protocol.Clients, "unmask_response", lying)


@pytest.mark.parametrize("kind, survivors", [("self_seed", np.arange(12)), ("mask_key", np.arange(2, 12))])
def test_an_inconsistent_share_is_detected(monkeypatch, kind, survivors):
    corrupt(monkeypatch, kind)
    with pytest.raises(ProtocolError, match="inconsistent"):
        run(inputs(12, 4, 16), survivors, ProtocolParams(bits=16, graph="complete"))


def test_shamir_reconstructs_from_any_t_shares_and_checks_spares():
    rng = np.random.default_rng(5)
    secrets = rng.integers(0, 256, (6, 32), dtype=np.uint8)
    xs = np.tile(np.arange(1, 10), (6, 1))
    shares = shamir.share(secrets, xs, 4, lambda shape: random_field(rng, shape, shamir.PRIME))
    pick = rng.permutation(9)[:4]
    assert (shamir.reconstruct(xs[:, pick], shares[:, pick], 4, 32) == secrets).all()
    assert (shamir.reconstruct(xs, shares, 4, 32, verify=True) == secrets).all()
    shares[2, 7, 0] = (shares[2, 7, 0] + 1) % shamir.PRIME
    with pytest.raises(shamir.ShareError, match="off their polynomial"):
        shamir.reconstruct(xs, shares, 4, 32, verify=True)


def test_fewer_than_t_shares_say_nothing_about_a_limb():
    # t - 1 = 2 of 3 shares are uniform whatever the secret: compare the share laws of two secrets
    rng = np.random.default_rng(6)
    draws = 20_000
    xs = np.tile([1, 2, 3], (draws, 1))

    def first_shares(value, threshold):
        secrets = np.full((draws, 3), value, dtype=np.uint8)
        out = shamir.share(secrets, xs, threshold, lambda shape: random_field(rng, shape, shamir.PRIME))
        return out[:, :threshold - 1 or 1, 0] % 64

    low, high = first_shares(0, 3), first_shares(255, 3)
    assert stats.chisquare(np.bincount(low[:, 0], minlength=64)).pvalue > ALPHA
    assert all(stats.ks_2samp(low[:, j], high[:, j]).pvalue > ALPHA for j in range(2))
    # power: with t = 1 a single share is the secret itself, and the same test tells the secrets apart
    assert stats.ks_2samp(first_shares(0, 1)[:, 0], first_shares(255, 1)[:, 0]).pvalue < ALPHA


def test_harary_graph_is_k_regular_and_symmetric():
    nb = graph.neighbours(40, "harary", 6, np.random.default_rng(2))
    assert nb.shape == (40, 6)
    pairs = {(u, int(v)) for u in range(40) for v in nb[u]}
    assert all((v, u) in pairs for u, v in pairs) and all(u != v for u, v in pairs)
    assert graph.auto_degree(1000, 0.0, 0.5) == 10 and graph.auto_degree(1000, 0.2, 0.5) > 10


def test_os_entropy_gives_the_same_exact_sum():
    # entropy=None draws keys, seeds and Shamir coefficients from os.urandom (the deployment setting)
    x = inputs(10, 5, 16)
    total, _ = aggregate(x[1:], np.arange(1, 10), 10, ProtocolParams(bits=16, graph="complete"), None, b"os")
    assert (total.astype(np.int64) == x[1:].sum(axis=0) % (1 << 16)).all()
