"""Issue 41: the deviating server's attacks a review of 7b42c39 found, each now refused.

Every attack is run twice: against today's clients (it must fail: a ``ProtocolError`` and no
secret learnt) and, as a power check, against clients that keep only 7b42c39's checks
(``checks_of_7b42c39``), where the same script recovers what it was after — so a test that
passes is not passing because the attack script is broken."""

import contextlib

import numpy as np
import pytest

from locpriv.secagg import Dropouts, ProtocolError, ProtocolParams, aggregate, crypto, graph, pki, protocol
from locpriv.secagg.client import Client
from locpriv.secagg.protocol import UnmaskingRequest
from locpriv.secagg.simulate import shard
from test_secagg import keyed_and_masked

CONTEXT = b"attack-session-context"
HBC = ProtocolParams(bits=20, degree=8)  # t = 5 of 9 holders
ACTIVE = ProtocolParams(bits=20, degree=8, variant="active")


def checks_of_7b42c39(self, alive, dropped=None):
    """What a client checked of a survivor set at 7b42c39: disjoint sets, itself alive, >= t survivors
    shard-wide, the public graph of survivors connected."""
    if dropped is not None and (alive & dropped).any():
        raise self._error("listed both as a survivor and as dropped")
    if not alive[self.id]:
        raise self._error("lists it as dropped")
    if int(alive.sum()) < self.t:
        raise self._error("fewer than t")
    if self.graph.components(alive) > 1:
        raise self._error("connected components")


@contextlib.contextmanager
def old_clients(enabled, monkeypatch):
    if enabled:
        monkeypatch.setattr(Client, "_check_survivors", checks_of_7b42c39)
    yield


def keyed(n, params, x, seed=1, inbox=None):
    return keyed_and_masked(n, params, x, seed, inbox, CONTEXT)


def ask(clients, server, requests):
    """A deviating server's unmasking: ``requests[v]`` to client v (signatures first, active); refusals
    are collected, the shares that do arrive are kept."""
    refused = {}
    if server.params.active:
        for v, request in requests.items():
            try:
                server.signatures[v] = clients[v].consistency(request.alive)
            except ProtocolError as exc:
                refused[v] = str(exc)
    for v, request in requests.items():
        if v in refused:
            continue
        try:
            response = clients[v].unmasking(request, server.signatures_for(v) if server.params.active else None)
        except ProtocolError as exc:
            refused[v] = str(exc)
            continue
        server.request = request
        server.answered.discard(v)
        server.receive_unmasking(v, response)
    return refused


def everyone(server, alive_ids):
    alive = np.zeros(server.n, dtype=bool)
    alive[list(alive_ids)] = True
    return UnmaskingRequest(alive, np.zeros(server.n, dtype=bool))


def self_masks(server, owners):
    """Σ PRG(b_u) over ``owners`` from the shares the server holds (ProtocolError if too few)."""
    seeds = server._rebuild("self_seed", list(owners))
    out = np.zeros(server.dim, dtype=np.uint64)
    for seed in seeds:
        out += crypto.expand(protocol.self_mask_seed(seed.tobytes(), server.session), server.dim, server.params.bits)
    return out


# ---- withheld share bundles across a cut: the sum of an arc ---------------------------------------------------


@pytest.mark.parametrize("rest", ["alive", "dropped"])
@pytest.mark.parametrize("params", [HBC, ACTIVE])
@pytest.mark.parametrize("old", [False, True], ids=["today", "7b42c39"])
def test_withheld_bundles_across_a_cut_do_not_give_an_arc_sum(monkeypatch, params, old, rest):
    # the review: route every bundle except those crossing a cut around an arc of t clients; the clients mask
    # only with the neighbours whose bundles arrived, so the arc's pairwise masks cancel inside it and its
    # self-masks are all that hide its sum.  rest "alive": everyone is told all survived; today the clients
    # next to the cut refuse (a survivor neighbour they never masked with), the arc's boundary owners keep
    # fewer than t answering holders.  rest "dropped": the arc is told it alone survived (every local check
    # passes: the arc is connected and its boundary owners have exactly t holders in it); today refused by
    # the survivor count, > threshold n.
    n = 100
    x = np.random.default_rng(0).integers(0, 1 << params.bits, (n, 5))
    with old_clients(old, monkeypatch):
        order = {}

        def cut(server, v):
            got = server.inbox(v)
            if not order:
                order["arc"] = set(server.graph.position[: server.t].tolist())
            arc = order["arc"]
            return {u: b for u, b in got.items() if (u in arc) == (v in arc)}

        clients, server = keyed(n, params, x, inbox=cut)
        arc = sorted(order["arc"])
        with pytest.raises(ProtocolError, match="did not mask with each other"):
            server.unmasking_request()  # the honest server's own check
        if rest == "alive":
            refused = ask(clients, server, {v: everyone(server, range(n)) for v in range(n)})
        else:
            request = everyone(server, arc)
            request = UnmaskingRequest(request.alive, ~request.alive)
            refused = ask(clients, server, {v: request for v in arc})
        masked_sum = sum(server.inputs[u] for u in arc)
        if old:
            got = (masked_sum - self_masks(server, arc)) & np.uint64((1 << params.bits) - 1)
            assert not refused and (got == x[arc].sum(axis=0) % (1 << params.bits)).all()  # power: the arc's sum
            return
        if rest == "dropped":
            assert sorted(refused) == arc and all("survivors of 100, fewer than" in m for m in refused.values())
        # next to the cut: a survivor neighbour it never masked with; active, further in: too few holders signed
        else:
            assert any("never got (or rejected)" in m for m in refused.values())
            assert all("never got (or rejected)" in m or "signed the survivor set" in m for m in refused.values())
        with pytest.raises(ProtocolError, match="fewer than t"):
            self_masks(server, arc)


# ---- different survivor lists per client: one client's input ---------------------------------------------------


def pairwise_masks(server, victim, rebuilt):
    """Σ ±PRG(pair seed) of the victim's masks with its neighbours, from their rebuilt masking keys."""
    out = np.zeros(server.dim, dtype=np.uint64)
    public = server.adverts[victim][crypto.KEY_BYTES : 2 * crypto.KEY_BYTES]
    for v, raw in rebuilt.items():
        seed = protocol.pair_seed(crypto.exchange(crypto.private_key(raw.tobytes()), public), victim, v, server.session)
        mask = crypto.expand(seed, server.dim, server.params.bits)
        out = out + mask if victim < v else out - mask
    return out


def split_lists(server, victim):
    """The review's lists: client w is told that the victim survived and that the victim's neighbours it
    holds shares of dropped, so it reveals b_victim and their masking keys s_v."""
    near = set(server.neighbours[victim].tolist())
    requests = {}
    for w in range(server.n):
        gone = (near & set(server.graph.holders(w).tolist())) - {w}
        alive = np.ones(server.n, dtype=bool)
        alive[list(gone)] = False
        requests[w] = UnmaskingRequest(alive, ~alive)
    return requests


@pytest.mark.parametrize("old", [False, True], ids=["today", "7b42c39"])
def test_different_survivor_lists_do_not_reveal_an_input(monkeypatch, old):
    n, victim, params = 100, 7, HBC
    x = np.random.default_rng(0).integers(0, 1 << params.bits, (n, 5))
    with old_clients(old, monkeypatch):
        clients, server = keyed(n, params, x)
        refused = ask(clients, server, split_lists(server, victim))
        near = server.neighbours[victim].tolist()

        def recover():
            keys = dict(zip(near, server._rebuild("mask_key", near), strict=True))
            y = server.inputs[victim] - self_masks(server, [victim]) - pairwise_masks(server, victim, keys)
            return y & np.uint64((1 << params.bits) - 1)

        if old:
            assert (recover() == x[victim]).all()  # power: 7b42c39's clients gave the victim's input away
            return
        assert any("fewer than t" in m for m in refused.values())
        with pytest.raises(ProtocolError, match="fewer than t"):
            recover()


def greedy_lists(clients, server, victim):
    """A smarter split than the review's: each client w is told that the few of the victim's neighbours it
    holds shares of and that have the fewest shares so far dropped — as many as w's own checks allow
    (``Client._check_survivors`` is public knowledge: the server can run it)."""
    near = set(server.neighbours[victim].tolist())
    count = dict.fromkeys(near, 0)
    requests = {}
    for w in sorted(range(server.n), key=lambda w: -len(near & set(server.graph.holders(w).tolist()))):
        candidates = sorted((near & set(server.graph.holders(w).tolist())) - {w}, key=count.get)
        for size in range(len(candidates), -1, -1):
            alive = np.ones(server.n, dtype=bool)
            alive[candidates[:size]] = False
            try:
                clients[w]._check_survivors(alive, ~alive)
            except ProtocolError:
                continue
            break
        for v in candidates[:size]:
            count[v] += 1
        requests[w] = UnmaskingRequest(alive, ~alive)
    return requests


@pytest.mark.parametrize("params", [HBC, ACTIVE])
def test_only_the_active_variant_holds_against_different_survivor_lists(params):
    # the honest-but-curious variant's model is a server that follows the protocol (docs/studies.md): its
    # clients' local checks stop the review's lists, not a server that tailors each list to pass them —
    # here it still reads one input.  The active variant's consistency round refuses it.
    n, victim = 100, 7
    x = np.random.default_rng(0).integers(0, 1 << params.bits, (n, 5))
    clients, server = keyed(n, params, x)
    clients_again, _ = keyed(n, params, x)  # same seeds: the same keys, graph and shares
    refused = ask(clients, server, greedy_lists(clients_again, server, victim))
    near = server.neighbours[victim].tolist()
    if params.active:
        assert refused and all("holders signed the survivor set" in m for m in refused.values())
        with pytest.raises(ProtocolError, match="fewer than t"):
            server._rebuild("mask_key", near)
        return
    keys = dict(zip(near, server._rebuild("mask_key", near), strict=True))
    y = server.inputs[victim] - self_masks(server, [victim]) - pairwise_masks(server, victim, keys)
    assert not refused and ((y & np.uint64((1 << params.bits) - 1)) == x[victim]).all()


# ---- late and dropped-id masked inputs, garbage bundles ----------------------------------------------------------


@pytest.mark.parametrize("params", [HBC, ACTIVE])
def test_masked_inputs_after_the_request_are_refused(params):
    # the review: accepted, a silent wrong sum.  Client 4 dropped before step 2; its (or an impostor's) masked
    # vector arrives after the request, and one more under the dropped id of client 9
    n = 40
    x = np.random.default_rng(0).integers(0, 1 << params.bits, (n, 5))
    senders = np.setdiff1d(np.arange(n), [4, 9])
    clients, server = shard(n, 5, params, np.random.default_rng(1), CONTEXT)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    for c in clients:
        server.receive_shares(c.id, c.share_keys(server.keys_for(c.id)))
    late = {u: clients[u].masked_input(x[u], server.inbox(u)) for u in (4, 9)}
    for u in senders:
        server.receive_masked(u, *clients[u].masked_input(x[u], server.inbox(u)))
    request = server.unmasking_request()
    for u, message in late.items():
        with pytest.raises(ProtocolError, match=f"client {u} sent a masked input after the unmasking request"):
            server.receive_masked(u, *message)
    if params.active:
        for u in senders:
            server.receive_signature(u, clients[u].consistency(request.alive))
    for u in senders:
        server.receive_unmasking(u, clients[u].unmasking(request, server.signatures_for(u) if params.active else None))
    assert (server.finish() == x[senders].sum(axis=0) % (1 << params.bits)).all()


@pytest.mark.parametrize("params", [HBC, ACTIVE])
def test_a_garbage_bundle_drops_its_sender_not_the_shard(monkeypatch, params):
    # the review: one garbage bundle to one neighbour aborted the whole shard (denial of service by one client)
    n, bad = 40, 11
    x = np.random.default_rng(0).integers(0, 1 << params.bits, (n, 5))
    original = Client.share_keys

    def garbage(self, keys):
        out = original(self, keys)
        if self.id == bad:
            v = min(out)
            out[v] = bytes(len(out[v]))
        return out

    monkeypatch.setattr(Client, "share_keys", garbage)
    total, transcript = aggregate(x, np.arange(n), n, params, np.random.default_rng(1), CONTEXT)
    others = np.setdiff1d(np.arange(n), [bad])
    assert (total == x[others].sum(axis=0) % (1 << params.bits)).all()
    unmasking = transcript[transcript["step"] == "unmasking"]
    assert set(unmasking.loc[unmasking["owner"] == bad, "kind"]) == {"mask_key"}  # dropped: its masks removed


# ---- sessions: fresh contexts, enforced --------------------------------------------------------------------------


def test_aggregate_needs_a_context_of_at_least_16_bytes():
    x = np.zeros((10, 2), dtype=np.int64)
    params = ProtocolParams(bits=16, graph="complete")
    with pytest.raises(TypeError, match="context"):
        aggregate(x, np.arange(10), 10, params, None)  # no default any more (it was b"")
    for context in (b"", b"short"):
        with pytest.raises(ProtocolError, match="at least 16 bytes"):
            aggregate(x, np.arange(10), 10, params, None, context)


def test_a_replayed_advertisement_and_a_reused_context_are_refused():
    # the review: long-lived identity keys (a directory kept across rounds) and a context reused by default
    # (b""): a signed advertisement of an earlier round was accepted in the active variant
    n = 20
    x = np.random.default_rng(0).integers(0, 1 << 16, (n, 3))
    params = ProtocolParams(bits=16, degree=4, variant="active")
    directory = pki.Directory(n, np.random.default_rng(5))
    first = b"round-0000000001"
    clients, server = shard(n, 3, params, np.random.default_rng(1), first, directory=directory)
    old_advert = clients[3].advertise_keys()
    with pytest.raises(ProtocolError, match="already used"):
        shard(n, 3, params, np.random.default_rng(2), first, directory=directory)
    with pytest.raises(ProtocolError, match="already used"):
        aggregate(x, np.arange(n), n, params, None, first, directory=directory)
    # a fresh context: the old advertisement's signature covers the old context, and the neighbours refuse it
    second = b"round-0000000002"
    clients, server = shard(n, 3, params, np.random.default_rng(2), second, directory=directory)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys() if c.id != 3 else old_advert)
    refused = []
    for c in clients:
        with contextlib.suppress(ProtocolError):
            server.receive_shares(c.id, c.share_keys(server.keys_for(c.id)))
            continue
        refused.append(c.id)
    assert sorted(refused) == sorted(set(server.neighbours[3].tolist()) | {3})


# ---- the layout: public randomness the server cannot choose --------------------------------------------------------


def test_the_layout_follows_from_the_committed_key_set():
    n = 60
    clients, server = shard(n, 2, ACTIVE, np.random.default_rng(1), CONTEXT)
    for c in clients:
        server.receive_keys(c.id, c.advertise_keys())
    server.commit_keys()
    seed = graph.layout_seed(CONTEXT, server.keyset.root)
    assert (server.graph.position == graph.for_round(n, "harary", 8, seed).position).all()
    # a server that places the clients as it likes (here: its chosen cycle, e.g. sybils around a victim)
    # hands every client neighbours that the root it verified does not give: refused by each
    server.graph = graph.Graph(n, 8, np.arange(n))
    server.neighbours = server.graph.neighbour_table()
    refused = 0
    for c in clients:
        try:
            c.share_keys(server.keys_for(c.id))
        except ProtocolError as exc:
            assert "not its neighbour" in str(exc)
            refused += 1
    assert refused >= n - 2  # at most a client whose neighbours happen to coincide


def test_the_degree_rule_for_a_corrupted_fraction(monkeypatch):
    # Bell et al. 2020: with a fraction gamma of clients colluding with the server no honest client may have t
    # corrupted holders; the rule makes n P(Bin(k + 1, gamma) >= t) < 2^-40, and dropped-or-corrupted ρ + γ for
    # connectivity and correctness
    for n in (100, 1000, 10_000):
        k = graph.auto_degree(n, 0.1, 0.5, 0.2)
        assert k == n - 1 or graph.log_p_corrupted_holders(n, k, 0.5, 0.2) < -40 * np.log(2)
        assert graph.log_p_corrupted_holders(n, graph.auto_degree(n, 0.1, 0.5), 0.5, 0.2) > -40 * np.log(2)
    # empirically: 20 % sybils at uniformly random slots of a 10^4-client shard
    n, gamma, rng = 10_000, 0.2, np.random.default_rng(3)

    def exposed(k):
        g = graph.Graph.build(n, "harary", k, rng)
        corrupt = rng.random(n) < gamma
        t = graph.threshold(k + 1, 0.5)
        held = corrupt[g.position[(g.where[:, None] + np.arange(-(k // 2), k // 2 + 1)) % n]].sum(axis=1)
        return int((~corrupt & (held >= t)).sum())

    # power: the rule without corruption (k = 14, t = 8) leaves 10^4 * 0.8 * P(Bin(15, 0.2) >= 8) = 34 exposed on
    # average; P(none) = exp(-34)
    assert exposed(graph.auto_degree(n, 0.0, 0.5)) > 0
    assert exposed(graph.auto_degree(n, 0.0, 0.5, gamma)) == 0  # k = 152, t = 77: P(any) < 2^-40


# ---- the dropouts an honest run has still finish -------------------------------------------------------------------


@pytest.mark.parametrize("params", [HBC, ACTIVE])
def test_honest_runs_with_dropouts_at_every_step_still_finish(params):
    n = 60
    x = np.random.default_rng(0).integers(0, 1 << params.bits, (n, 4))
    drop = Dropouts(advertise_keys={1}, share_keys={2}, unmasking={5}, consistency={6} if params.active else set())
    senders = np.setdiff1d(np.arange(n), [1, 2, 3])
    total, _ = aggregate(x[senders], senders, n, params, np.random.default_rng(1), CONTEXT, drop)
    assert (total == x[senders].sum(axis=0) % (1 << params.bits)).all()
