"""Pairwise-masking secure aggregation (Bonawitz et al. 2017; Bell et al. 2020): exactness, masking, what the
server holds, the clients' and the server's checks, dropouts at every step, and the attacks of issue 31."""

import contextlib
import dataclasses
import math

import numpy as np
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from scipy import stats
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from locpriv.secagg import Dropouts, ProtocolError, ProtocolParams, aggregate, crypto, graph, pki, protocol, shamir
from locpriv.secagg.client import Client
from locpriv.secagg.graph import Graph
from locpriv.secagg.protocol import UnmaskingRequest
from locpriv.secagg.simulate import shard

ALPHA = 1e-6
CONTEXT = b"test-session-context"
HBC = ProtocolParams(bits=20, degree=8)
ACTIVE = ProtocolParams(bits=20, degree=8, variant="active")


def inputs(n, dim, bits, seed=0):
    return np.random.default_rng(seed).integers(0, 1 << bits, (n, dim))


def run(x, senders, params, seed=1, dropouts=None):
    return aggregate(x[senders], senders, len(x), params, np.random.default_rng(seed), CONTEXT, dropouts)


def plain_sum(x, senders, bits):
    return np.array([sum(int(v) for v in col) % (1 << bits) for col in x[senders].T], dtype=object)


def public_graph(n, params, seed=1):
    """The layout ``run`` gets with the same seed: the key set every client advertises, committed."""
    clients, server = shard(n, 1, params, np.random.default_rng(seed), CONTEXT)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    server.commit_keys()
    return server.graph


def keyed_and_masked(n, params, x, seed=1, inbox=None, context=CONTEXT):
    """Steps 0-2 run by every client: (clients, server), every masked input received; ``inbox(server, v)`` is
    the server's routing of the bundles to v (default: honest)."""
    clients, server = shard(n, x.shape[1], params, np.random.default_rng(seed), context)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    for c in clients:
        server.receive_shares(c.id, c.share_keys(server.keys_for(c.id)))
    for c in clients:
        got = inbox(server, c.id) if inbox else server.inbox(c.id)
        server.delivered[c.id] = set(got)
        server.receive_masked(c.id, *c.masked_input(x[c.id], got))
    return clients, server


def request_for(server, alive_ids):
    alive = np.zeros(server.n, dtype=bool)
    alive[list(alive_ids)] = True
    dropped = np.zeros(server.n, dtype=bool)
    dropped[[u for u in server.bundles if not alive[u]]] = True
    return UnmaskingRequest(alive, dropped)


def shares_held(server, owner, kind):
    return len(server.shares[kind].get(owner, []))


# ---- exactness and what crosses the wire -------------------------------------------------------------


@pytest.mark.parametrize(
    "params, n, dropped",
    [
        (ProtocolParams(bits=16, graph="complete"), 12, 0),
        (ProtocolParams(bits=16, graph="complete"), 12, 5),  # t = 7 of 12 holders (self included): n - t dropped
        (ProtocolParams(bits=62, graph="complete"), 7, 2),
        (HBC, 60, 0),
        (HBC, 60, 5),
        (ACTIVE, 60, 5),
        (ProtocolParams(bits=16, graph="complete", variant="active"), 12, 3),
    ],
)
def test_exact_modular_sum_with_and_without_dropouts(params, n, dropped):
    x = inputs(n, 40, params.bits)
    senders = np.sort(np.random.default_rng(n + dropped).permutation(n)[dropped:])
    total, transcript = run(x, senders, params)
    assert total.dtype == np.uint64
    assert (total.astype(object) == plain_sum(x, senders, params.bits)).all()
    assert set(transcript.loc[transcript["kind"] == "masked_vector", "sender"]) == set(senders.tolist())


@pytest.mark.parametrize("params, n", [(HBC, 60), (ACTIVE, 60), (ProtocolParams(bits=12, graph="complete"), 15)])
def test_client_bytes_are_what_the_transcript_counts(params, n):
    senders = np.arange(n)
    _, transcript = run(inputs(n, 33, params.bits), senders, params)
    sent = transcript.groupby(["sender", "step"])["bytes"].sum().unstack(fill_value=0)
    expected = protocol.client_bytes(n, 33, params)
    assert list(sent.columns.sort_values()) == sorted(expected)
    assert (sent.loc[senders, list(expected)] == np.array(list(expected.values()))).all().all()


def test_n_minus_t_is_the_most_dropouts_a_complete_graph_survives():
    params = ProtocolParams(bits=16, graph="complete")
    x = inputs(12, 5, 16)
    t = graph.threshold(12, params.threshold)
    with pytest.raises(ProtocolError, match="fewer than the threshold"):
        run(x, np.arange(t - 1), params)
    total, _ = run(x, np.arange(t), params)
    assert (total.astype(np.int64) == x[:t].sum(axis=0) % (1 << 16)).all()


def test_a_client_with_too_few_surviving_holders_stops_the_shard():
    params = ProtocolParams(bits=16, degree=4)  # t = 3 of 5 holders (4 neighbours + self)
    x = inputs(30, 5, 16)
    order = public_graph(30, params).position
    # positions 1-4 drop: one cut only, so the survivors stay connected, but the dropped client at position 2
    # keeps 2 surviving holders (positions 0 and 4 are out of reach... 0 only) of the 3 needed
    senders = np.sort(np.setdiff1d(np.arange(30), order[[1, 2, 3, 4]]))
    with pytest.raises(ProtocolError, match="fewer than t = 3 surviving holders"):
        run(x, senders, params)


def test_one_masked_vector_is_uniform_on_z_m():
    # a client whose input is all zeros: what the server receives must still look uniform on Z_16
    bits, dim = 4, 40_000
    clients, server = shard(5, dim, ProtocolParams(bits=bits, graph="complete"), np.random.default_rng(3), CONTEXT)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    for c in clients:
        server.receive_shares(c.id, c.share_keys(server.keys_for(c.id)))
    y, _ = clients[0].masked_input(np.zeros(dim, dtype=np.int64), server.inbox(0))
    assert stats.chisquare(np.bincount(y.astype(np.int64), minlength=1 << bits)).pvalue > ALPHA
    # power: the unmasked vector of a heatmap client (one-hot plus a Polya share, mod 16) is far from uniform
    from locpriv.heatmaps.clients import client_vectors

    plain = client_vectors(np.array([3]), dim, 1.0, 1, 100, bits, np.random.default_rng(0))[0]
    assert stats.chisquare(np.bincount(plain.astype(np.int64), minlength=1 << bits)).pvalue < ALPHA


def test_server_never_holds_t_shares_of_both_secrets_of_a_client():
    params = ProtocolParams(bits=16, degree=10)
    n = 50
    senders = np.sort(np.random.default_rng(3).permutation(n)[4:])
    _, transcript = run(inputs(n, 8, 16), senders, params)
    t = graph.threshold(11, params.threshold)
    shares = transcript[transcript["step"] == "unmasking"]
    held = shares.groupby(["owner", "kind"]).size().unstack(fill_value=0).reindex(range(n), fill_value=0)
    alive = np.isin(np.arange(n), senders)
    assert (held.loc[alive, "mask_key"] == 0).all() and (held.loc[alive, "self_seed"] >= t).all()
    assert (held.loc[~alive, "self_seed"] == 0).all() and (held.loc[~alive, "mask_key"] >= t).all()
    sealed = transcript[transcript["step"] == "share_keys"]  # key sharing reaches the server sealed only
    assert (sealed["kind"] == "sealed_shares").all() and len(sealed) == n


# ---- issue 31: the honest-but-curious leak, closed ---------------------------------------------------------


def two_runs_dropped(order, n, r):
    """Client ids at two runs of r consecutive cycle positions, half the cycle apart: they cut H(2r, n) in two."""
    return np.concatenate([order[:r], order[n // 2 : n // 2 + r]])


@pytest.mark.parametrize("n, k", [(100, 8), (1000, 10)])
def test_dropping_chosen_clients_that_disconnect_the_survivors_is_refused(monkeypatch, n, k):
    # issue 31: dropping k chosen clients of n (two runs of k/2 on the cycle) used to finish and let the
    # server compute the exact sum of each half from its own view; now nobody is even asked for a share
    params = ProtocolParams(bits=16, degree=k)
    answered = []
    original = Client.unmasking
    monkeypatch.setattr(
        Client, "unmasking", lambda self, *a, **kw: answered.append(self.id) or original(self, *a, **kw)
    )
    x = inputs(n, 3, 16)
    order = public_graph(n, params).position
    senders = np.setdiff1d(np.arange(n), two_runs_dropped(order, n, k // 2))
    with pytest.raises(ProtocolError, match="2 connected components"):
        run(x, senders, params)
    assert answered == []
    # power: as many dropouts at positions that do not cut the cycle twice finish with the exact sum
    senders = np.setdiff1d(np.arange(n), order[np.arange(k) * (n // k)])
    assert (run(x, senders, params)[0].astype(object) == plain_sum(x, senders, 16)).all()


class _Blind(Graph):
    """A server that skips its connectivity check (the clients still have theirs)."""

    def components(self, alive):
        return 1


def test_clients_refuse_a_disconnected_survivor_set_when_the_server_does_not():
    n, params = 60, ProtocolParams(bits=16, degree=6)
    x = inputs(n, 3, 16)
    clients, server = keyed_and_masked(n, params, x)
    g = server.graph
    server.graph = _Blind(g.n, g.degree, g.position)
    alive_ids = np.setdiff1d(np.arange(n), two_runs_dropped(g.position, n, 3))
    request = request_for(server, alive_ids)
    for u in alive_ids:
        with pytest.raises(ProtocolError, match=f"client {u}: the survivors' graph has 2 connected components"):
            clients[u].unmasking(request)


def test_components_match_a_graph_search():
    rng = np.random.default_rng(4)
    for n, k in [(30, 2), (40, 4), (64, 8), (25, 24)]:
        g = Graph.build(n, "harary", k, rng)
        table = g.neighbour_table()
        adjacency = csr_matrix(
            (np.ones(table.size), (np.repeat(np.arange(n), table.shape[1]), table.ravel())), shape=(n, n)
        )
        for p in (0.3, 0.5, 0.7, 0.9):
            for _ in range(40):
                alive = rng.random(n) < p
                if not alive.any():
                    continue
                expected = connected_components(adjacency[alive][:, alive], directed=False)[0]
                assert g.components(alive) == expected


def test_degree_rule_meets_the_disconnection_and_correctness_targets_with_the_smallest_k():
    for n in (100, 1000, 10_000):
        for rho in (0.0, 0.05, 0.1, 0.3):
            k = graph.auto_degree(n, rho, 0.5)
            dropped = math.floor(rho * n)
            assert graph.log_p_disconnected(n, k, dropped) < -40 * math.log(2)
            if k < n - 1:  # else no Harary degree qualifies and the shard falls back to the complete graph
                assert n * stats.binom.cdf(graph.threshold(k + 1, 0.5) - 1, k, 1 - rho) <= graph.CORRECTNESS_FAILURE
            smaller = k - 2 if k < n - 1 else k - 1 - (k - 1) % 2
            if smaller >= max(2, math.ceil(math.log2(n))):
                assert (
                    graph.log_p_disconnected(n, smaller, dropped) >= -40 * math.log(2)
                    or n * stats.binom.cdf(graph.threshold(smaller + 1, 0.5) - 1, smaller, 1 - rho) > 1e-6
                )
    assert graph.auto_degree(1000, 0.0, 0.5) == 10 and graph.auto_degree(1000, 0.2, 0.5) > 10
    # power: the disconnection target alone rejects small degrees at this dropout
    assert graph.log_p_disconnected(10_000, 18, 1000) > -40 * math.log(2)


def test_disconnection_bound_holds_empirically():
    # n = 100, k = 8, 25 dropouts: the union bound (module doc, 0.026) against the frequency over random dropouts
    n, k, d, draws = 100, 8, 25, 20_000
    bound = math.exp(graph.log_p_disconnected(n, k, d))
    rng = np.random.default_rng(7)
    g = Graph.build(n, "harary", k, rng)
    hits = 0
    for _ in range(draws):
        alive = np.ones(n, dtype=bool)
        alive[rng.choice(n, d, replace=False)] = False
        hits += g.components(alive) > 1
    # one-sided binomial test at alpha = 1e-6 that the true rate exceeds the bound
    assert stats.binomtest(hits, draws, min(bound, 1.0), alternative="greater").pvalue > ALPHA
    assert hits > 0  # power: the event is frequent enough here for the comparison to mean something


def test_threshold_below_one_half_is_refused_in_the_config_and_the_library():
    from locpriv.config import ConfigError
    from locpriv.heatmaps.study import STUDY

    for fraction in (0.1, 0.4):
        with pytest.raises(ConfigError, match=r"studies\.heatmaps\.secagg\.threshold.*minimum of 0\.5"):
            STUDY.validate({"aggregation": "secure", "secagg": {"threshold": fraction}})
        with pytest.raises(ValueError, match=r"\[0\.5, 1\)"):
            ProtocolParams(threshold=fraction)
    with pytest.raises(ConfigError, match="shard of 1 client"):
        STUDY.validate({"aggregation": "secure", "base": {"users_per_round": 1001, "shard_size": 1000}})
    assert all(graph.threshold(h, 0.5) >= 2 and 2 * graph.threshold(h, 0.5) > h for h in range(2, 200))


# ---- clients as state machines, dropouts at every step --------------------------------------------------------


def test_a_client_answers_each_step_once_and_in_order():
    x = inputs(20, 4, 16)
    clients, server = shard(20, 4, ProtocolParams(bits=16, degree=4), np.random.default_rng(1), CONTEXT)
    with pytest.raises(ProtocolError, match="client 3: asked for step 'masked_input' before step 'advertise_keys'"):
        clients[3].masked_input(x[3], {})
    clients, server = keyed_and_masked(20, ProtocolParams(bits=16, degree=4), x)
    with pytest.raises(ProtocolError, match="client 5: asked for step 'share_keys' a second time"):
        clients[5].share_keys(server.keys_for(5))
    request = server.unmasking_request()
    clients[5].unmasking(request)
    with pytest.raises(ProtocolError, match="client 5: asked for step 'unmasking' a second time"):
        clients[5].unmasking(request)


@pytest.mark.parametrize(
    "change, message",
    [
        ("overlap", "listed both as a survivor and as dropped"),
        ("few", "2 survivors of 20, fewer than"),
        ("self_dropped", "lists it as dropped"),
    ],
)
def test_a_client_checks_the_unmasking_request(change, message):
    n = 20
    clients, server = keyed_and_masked(n, ProtocolParams(bits=16, degree=4), inputs(n, 4, 16))
    request = server.unmasking_request()
    alive, dropped = request.alive.copy(), request.dropped.copy()
    if change == "overlap":
        dropped[7] = True
    elif change == "few":
        alive[:] = False
        alive[[0, 1]] = True
    else:
        alive[0] = False
    with pytest.raises(ProtocolError, match=f"client 0: .*{message}"):
        clients[0].unmasking(UnmaskingRequest(alive, dropped))


STEPS = [
    ("advertise_keys", HBC),
    ("share_keys", HBC),
    ("masked_input", HBC),
    ("unmasking", HBC),
    ("share_keys", ACTIVE),
    ("consistency", ACTIVE),
    ("unmasking", ACTIVE),
]


@pytest.mark.parametrize("step, params", STEPS)
def test_dropouts_at_every_step_give_the_survivors_exact_sum(step, params):
    # dropout during key sharing raised KeyError before issue 31; clients now mask only with the neighbours
    # whose shares arrived
    n = 48
    x = inputs(n, 6, params.bits)
    gone = [3, 17, 30]
    senders = (
        np.setdiff1d(np.arange(n), gone) if step in ("advertise_keys", "share_keys", "masked_input") else np.arange(n)
    )
    dropouts = Dropouts(**{step: gone}) if step != "masked_input" else None
    total, transcript = run(x, senders, params, dropouts=dropouts)
    assert (total.astype(object) == plain_sum(x, senders, params.bits)).all()
    assert not set(transcript.loc[transcript["step"] == "unmasking", "sender"]) & (
        set(gone) if step != "masked_input" else set()
    )


# ---- issue 31: an active server ---------------------------------------------------------------------------


def substitute_keys(server, victim, fake_id):
    """A keys_for that hands ``victim`` a forged advertisement for its neighbour ``fake_id``."""
    original = server.keys_for

    def forged(u):
        keys = original(u)
        adverts = keys.adverts
        if u == victim:
            fake = crypto.random_bytes(None, 1, 3 * crypto.KEY_BYTES)[0].tobytes()
            if server.params.active:  # signed with a key the server owns, not the client's identity
                fake += crypto.sign(
                    crypto.identity_key(bytes(32)), protocol.keys_message(server.context, fake_id, fake)
                )
            adverts = {**adverts, fake_id: fake}
        return dataclasses.replace(keys, adverts=adverts)

    return forged


def test_key_substitution_is_refused_in_the_active_variant():
    n = 30
    clients, server = shard(n, 4, ACTIVE, np.random.default_rng(1), CONTEXT)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    server.commit_keys()
    victim, neighbour = 0, int(server.neighbours[0][0])
    server.keys_for = substitute_keys(server, victim, neighbour)
    with pytest.raises(ProtocolError, match=f"client 0: the keys of client {neighbour} are not signed"):
        clients[victim].share_keys(server.keys_for(victim))
    assert server.arrived == set() and not server.bundles  # nothing of the victim's left it


def mitm_input(clients, server, victim, x):
    """The key-substitution attack on ``victim``: the server hands it keys of its own for every neighbour
    (active variant: signed with an identity key of its own, in a Merkle tree of its own), opens the shares
    it seals for them, forges their bundles, and unmasks its input from y alone."""
    client = clients[victim]
    server.commit_keys()
    fake_c = {int(v): crypto.private_key(crypto.random_bytes(None, 1)[0].tobytes()) for v in server.neighbours[victim]}
    fake_s = {v: crypto.private_key(crypto.random_bytes(None, 1)[0].tobytes()) for v in fake_c}
    adverts = {v: crypto.public_bytes(fake_c[v]) + crypto.public_bytes(fake_s[v]) + bytes(32) for v in fake_c}
    advert = server.adverts[victim]
    keys = protocol.KeysMessage(adverts, server.keyset.root)
    if server.params.active:
        forger = crypto.identity_key(bytes(32))
        adverts = {v: a + crypto.sign(forger, protocol.keys_message(server.context, v, a)) for v, a in adverts.items()}
        tree = pki.KeySet([adverts.get(v, server.adverts.get(v)) for v in range(server.n)])
        keys = protocol.KeysMessage(adverts, tree.root, {v: tree.proof(v) for v in [victim, *adverts]}, advert)
    sealed = client.share_keys(keys)
    xs, ys = [], []
    for v, ciphertext in sealed.items():
        header = protocol.share_header(server.context, victim, v)
        key = crypto.derive(crypto.exchange(fake_c[v], advert[:32]), header)
        xs.append(v + 1)
        ys.append(np.frombuffer(crypto.open_sealed(key, ciphertext, header), "<i4").astype(np.int64).reshape(2, -1))
    secrets = shamir.reconstruct(np.tile(xs, (2, 1)), np.stack(ys, axis=1), client.t, crypto.KEY_BYTES)
    inbox = {}
    for v in fake_c:
        header = protocol.share_header(server.context, v, victim)
        inbox[v] = crypto.seal(
            crypto.derive(crypto.exchange(fake_c[v], advert[:32]), header), bytes(8 * protocol.SHARE_LIMBS), header
        )
    y, _ = client.masked_input(x, inbox)
    bits = server.params.bits
    recovered = y - crypto.expand(protocol.self_mask_seed(secrets[1].tobytes(), server.context), len(x), bits)
    for v in fake_s:
        exchanged = crypto.exchange(fake_s[v], advert[32:64])
        mask = crypto.expand(protocol.pair_seed(exchanged, victim, v, server.context), len(x), bits)
        recovered = recovered - mask if victim < v else recovered + mask
    return recovered & np.uint64((1 << bits) - 1)


def test_key_substitution_reads_an_input_in_the_honest_but_curious_variant_only():
    # the threat model stated in docs/studies.md: the honest-but-curious variant assumes the server follows the
    # protocol; a server that substitutes keys reads any input there, and the active variant refuses it
    n, x = 30, inputs(30, 16, HBC.bits)
    clients, server = shard(n, 16, HBC, np.random.default_rng(1), CONTEXT)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    assert (mitm_input(clients, server, 4, x[4]).astype(np.int64) == x[4]).all()
    clients, server = shard(n, 16, ACTIVE, np.random.default_rng(1), CONTEXT)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    with pytest.raises(ProtocolError, match=r"client 4: the keys of client .* are not signed by its identity key"):
        mitm_input(clients, server, 4, x[4])


@pytest.mark.parametrize("params", [HBC, ACTIVE])
def test_a_double_unmasking_request_is_refused(params):
    # issue 31: clients kept no round state, so a server asking each holder twice (once with the victim alive,
    # once with it dropped) got both its self-mask seed and its masking key
    n, victim = 40, 9
    clients, server = keyed_and_masked(n, params, inputs(n, 4, params.bits))
    first = server.unmasking_request()
    second = request_for(server, np.setdiff1d(np.arange(n), [victim]))
    holders = server.graph.holders(victim).tolist()
    if params.active:
        for u in range(n):
            server.receive_signature(u, clients[u].consistency(first.alive))
    for v in holders:
        server.receive_unmasking(v, clients[v].unmasking(first, server.signatures_for(v) if params.active else None))
        with pytest.raises(ProtocolError, match=f"client {v}: asked for step 'unmasking' a second time"):
            clients[v].unmasking(second)
    assert shares_held(server, victim, "self_seed") == len(holders) and shares_held(server, victim, "mask_key") == 0


def split_lists(clients, server, victim, shown_alive):
    """Unmasking requests telling the victim and ``shown_alive`` of its neighbours that it survived and its other
    neighbours that it dropped (everyone else: that it survived)."""
    n = server.n
    with_victim = request_for(server, np.arange(n))
    without = request_for(server, np.setdiff1d(np.arange(n), [victim]))
    holders = [h for h in server.graph.holders(victim).tolist() if h != victim]
    return {v: (without if v in holders[shown_alive:] else with_victim) for v in range(n)}


@pytest.mark.parametrize("shown_alive", [2, 3, 4])
def test_inconsistent_survivor_lists_never_yield_both_secrets_of_a_client(shown_alive):
    # honest-but-curious variant, no consistency round: the threshold >= 1/2 alone keeps the server from t shares
    # of both secrets whatever the split (issue 31: threshold 0.4 was accepted and the attack succeeded)
    n, victim, params = 30, 5, ProtocolParams(bits=16, degree=4)  # t = 3 of the victim's 5 holders
    clients, server = keyed_and_masked(n, params, inputs(n, 4, 16))
    server.request = request_for(server, np.arange(n))
    for v, request in split_lists(clients, server, victim, shown_alive).items():
        server.request = request
        with contextlib.suppress(ProtocolError):
            server.receive_unmasking(v, clients[v].unmasking(request))
    got = [shares_held(server, victim, kind) for kind in protocol.SECRETS]
    assert min(got) < clients[victim].t and max(got) >= 1


def test_inconsistent_survivor_lists_are_refused_in_the_active_variant():
    n, victim = 30, 5
    clients, server = keyed_and_masked(n, ACTIVE, inputs(n, 4, ACTIVE.bits))
    t = clients[victim].t
    lists = split_lists(clients, server, victim, t - 1)
    server.request = request_for(server, np.arange(n))
    for v, request in lists.items():
        server.signatures[v] = clients[v].consistency(request.alive)
    refused = {}
    for v, request in lists.items():
        server.request = request
        try:
            server.receive_unmasking(v, clients[v].unmasking(request, server.signatures_for(v)))
        except ProtocolError as exc:
            refused[v] = str(exc)
    told_dropped = [v for v, r in lists.items() if not r.alive[victim]]
    assert told_dropped and all("holders signed the survivor set" in refused[v] for v in told_dropped)
    assert shares_held(server, victim, "mask_key") == 0


@pytest.mark.parametrize("pattern", ["arc", "blocks"])
def test_an_active_server_cannot_unmask_a_small_set(pattern):
    # the |L| >= t n / (k + 1) bound of protocol's doc: claiming that most clients dropped to unmask the sum of a
    # small connected set fails, the boundary's dropped clients have fewer than t holders in the set
    n = 48
    clients, server = keyed_and_masked(n, ACTIVE, inputs(n, 4, ACTIVE.bits))
    order = server.graph.position
    small = order[: n // 4] if pattern == "arc" else order[np.arange(n) % 3 == 0]
    t, k = clients[0].t, server.graph.degree
    assert len(small) < t * n / (k + 1)
    request = request_for(server, small)
    server.request = request
    for v in small:
        with contextlib.suppress(ProtocolError):
            server.receive_signature(v, clients[v].consistency(request.alive))
    for v in small:
        with contextlib.suppress(ProtocolError):
            server.receive_unmasking(v, clients[v].unmasking(request, server.signatures_for(v)))
    with pytest.raises(ProtocolError, match="fewer than t"):
        server.finish()


# ---- issue 31: validation, no silent wrong sum -------------------------------------------------------------


def test_a_replayed_masked_input_is_refused():
    n = 20
    clients, server = shard(n, 4, ProtocolParams(bits=16, degree=4), np.random.default_rng(1), CONTEXT)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    for c in clients:
        server.receive_shares(c.id, c.share_keys(server.keys_for(c.id)))
    y = clients[2].masked_input(inputs(n, 4, 16)[2], server.inbox(2))
    server.receive_masked(2, *y)
    with pytest.raises(ProtocolError, match="client 2 sent its masked input twice"):
        server.receive_masked(2, *y)


@pytest.mark.parametrize(
    "vector, message",
    [
        (np.array([5]), r"shape \(1,\)"),  # a length-1 vector used to broadcast into the sum
        (np.full(4, 1 << 16), "outside Z_m"),
        (np.full(4, 0.5), "type float64"),
    ],
)
def test_a_malformed_masked_vector_is_refused(vector, message):
    clients, server = shard(20, 4, ProtocolParams(bits=16, degree=4), np.random.default_rng(1), CONTEXT)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    for c in clients:
        server.receive_shares(c.id, c.share_keys(server.keys_for(c.id)))
    server.inbox(6)
    with pytest.raises(ProtocolError, match=f"client 6 sent a masked vector .*{message}"):
        server.receive_masked(6, vector, bytes(1))


def test_unknown_and_duplicated_ids_are_refused():
    x = inputs(10, 3, 16)
    params = ProtocolParams(bits=16, graph="complete")
    with pytest.raises(ProtocolError, match="unknown client id 10"):
        aggregate(x[:3], np.array([0, 1, 10]), 10, params, np.random.default_rng(1), CONTEXT)
    with pytest.raises(ProtocolError, match="client 1: asked for step 'masked_input' a second time"):
        aggregate(x[:3], np.array([0, 1, 1]), 10, params, np.random.default_rng(1), CONTEXT)
    clients, server = keyed_and_masked(10, params, x)
    with pytest.raises(ProtocolError, match="client 4 advertised keys twice"):
        server.receive_keys(4, clients[4]._advert)
    server.unmasking_request()
    with pytest.raises(ProtocolError, match="client 3's unmasking response names unknown client id 12"):
        server.receive_unmasking(3, {(12, "self_seed"): np.zeros(protocol.SHARE_LIMBS, np.int64)})


def test_a_share_from_a_non_holder_is_refused():
    n = 30
    clients, server = keyed_and_masked(n, ProtocolParams(bits=16, degree=4), inputs(n, 4, 16))
    request = server.unmasking_request()
    stranger = int(np.setdiff1d(np.arange(n), server.graph.holders(0))[0])
    response = clients[0].unmasking(request)
    response[stranger, "self_seed"] = response[0, "self_seed"]
    with pytest.raises(
        ProtocolError, match=f"client 0 sent a share of client {stranger}'s secret but is not its holder"
    ):
        server.receive_unmasking(0, response)


@pytest.mark.parametrize("kind", ["self_seed", "mask_key"])
def test_a_crafted_share_with_exactly_t_holders_is_detected(monkeypatch, kind):
    # complete graph of 12, t = 7: the 7 answering clients are each owner's only holders, so no spare share
    # can expose a wrong one; the rebuilt seed is checked against its commitment (the key against its public key)
    n, t = 12, 7
    original = Client.unmasking

    def lying(self, request, signatures=None):
        out = original(self, request, signatures)
        if self.id == 1:
            key = next(k for k in sorted(out) if k[1] == kind)
            out[key] = (out[key] + 1) % shamir.PRIME
        return out

    monkeypatch.setattr(Client, "unmasking", lying)
    x = inputs(n, 4, 16)
    senders = np.arange(n) if kind == "self_seed" else np.arange(1, n)
    quiet = Dropouts(unmasking=set(range(t, n)) if kind == "self_seed" else set(range(t + 1, n)))
    with pytest.raises(ProtocolError, match=r"does not match its (commitment|advertised public key)"):
        run(x, senders, ProtocolParams(bits=16, graph="complete"), dropouts=quiet)


def test_an_inconsistent_spare_share_is_detected(monkeypatch):
    original = Client.unmasking

    def lying(self, request, signatures=None):
        out = original(self, request, signatures)
        if self.id == 0:
            key = next(k for k in sorted(out) if k[1] == "self_seed")
            out[key] = (out[key] + 1) % shamir.PRIME
        return out

    monkeypatch.setattr(Client, "unmasking", lying)
    with pytest.raises(ProtocolError, match="inconsistent self_seed shares"):
        run(inputs(12, 4, 16), np.arange(12), ProtocolParams(bits=16, graph="complete"))


# ---- Shamir, primitives, randomness ------------------------------------------------------------------------


def test_shamir_reconstructs_from_any_t_shares_and_checks_spares():
    rng = np.random.default_rng(5)
    secrets = rng.integers(0, 256, (6, 32), dtype=np.uint8)
    xs = np.tile(np.arange(1, 10), (6, 1))
    shares = shamir.share(secrets, xs, 4, lambda shape: crypto.random_field(rng, shape, shamir.PRIME))
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
        out = shamir.share(secrets, xs, threshold, lambda shape: crypto.random_field(rng, shape, shamir.PRIME))
        return out[:, : threshold - 1 or 1, 0] % 64

    low, high = first_shares(0, 3), first_shares(255, 3)
    assert stats.chisquare(np.bincount(low[:, 0], minlength=64)).pvalue > ALPHA
    assert all(stats.ks_2samp(low[:, j], high[:, j]).pvalue > ALPHA for j in range(2))
    # power: with t = 1 a single share is the secret itself, and the same test tells the secrets apart
    assert stats.ks_2samp(first_shares(0, 1)[:, 0], first_shares(255, 1)[:, 0]).pvalue < ALPHA


def test_harary_graph_is_k_regular_and_symmetric():
    nb = Graph.build(40, "harary", 6, np.random.default_rng(2)).neighbour_table()
    assert nb.shape == (40, 6)
    pairs = {(u, int(v)) for u in range(40) for v in nb[u]}
    assert all((v, u) in pairs for u, v in pairs) and all(u != v for u, v in pairs)


def test_coefficient_bias_is_below_two_to_the_minus_62():
    # 64 uniform bits mod p: statistical distance r (p - r) / (p 2^64), r = 2^64 mod p (crypto's module doc)
    p = shamir.PRIME
    r = (1 << 64) % p
    distance = r * (p - r) / (p * 2.0**64)
    assert r == 4 and 2.0**-63 < distance < 2.0**-62


def test_hkdf_is_rfc_5869():
    rng = np.random.default_rng(8)
    for _ in range(20):
        secret, info = rng.bytes(32), rng.bytes(int(rng.integers(0, 40)))
        assert crypto.derive(secret, info) == HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(
            secret
        )


def test_os_entropy_gives_the_same_exact_sum(monkeypatch):
    # entropy=None draws keys, seeds and Shamir coefficients from os.urandom (the deployment setting)
    calls = []
    urandom = crypto.os.urandom
    monkeypatch.setattr(crypto.os, "urandom", lambda k: calls.append(k) or urandom(k))
    x = inputs(10, 5, 16)
    total, _ = aggregate(x[1:], np.arange(1, 10), 10, ProtocolParams(bits=16, graph="complete"), None, CONTEXT)
    assert (total.astype(np.int64) == x[1:].sum(axis=0) % (1 << 16)).all()
    assert len(calls) >= 3 * 10  # every client's keys, seed and Shamir coefficients


def test_secure_heatmap_draws_its_secrets_from_the_os_and_leaves_the_dp_stream_alone(monkeypatch):
    from locpriv.heatmaps import clients as heat_clients
    from locpriv.heatmaps.study import make_secagg
    from locpriv.mechanisms.heatmap import secagg as mechanism_secagg

    calls = []
    urandom = crypto.os.urandom
    monkeypatch.setattr(crypto.os, "urandom", lambda k: calls.append(k) or urandom(k))
    run_ = {"shard_size": 40, "dropout": 0.0}
    dealt = heat_clients.deal(np.array([30, 50, 20, 0]), 40, 0.0, np.random.default_rng(0))
    index = dealt.pixel
    out, states = {}, {}
    for mode in ("per_client", "secure"):
        rng = np.random.default_rng(11)
        config = make_secagg(run_, mode, {"degree": 8}, layout=np.random.default_rng(12))
        out[mode] = heat_clients.client_sum(dealt, index, 4, 1.0, 1, np.array([40, 40, 20]), config, rng)[0]
        states[mode] = rng.bit_generator.state
    assert (out["secure"] == out["per_client"]).all() and states["secure"] == states["per_client"]
    assert calls and make_secagg(run_, "secure").entropy is None
    assert mechanism_secagg({"shard_size": 10, "aggregation": "secure"}).entropy is None
