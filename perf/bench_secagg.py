"""Cost of pairwise-masking secure aggregation (locpriv.secagg) against the papers' asymptotics.

Part 1 (``--part shard``): one shard of n clients with vectors of K entries, m = 2^32:
per-client bytes sent (from the server's transcript) and compute, server compute, for
n in {100, 1000, 5000}, K = 5000, the complete graph (Bonawitz et al. 2017) and the
random k-regular Harary graph (Bell et al. 2020), dropout 0 and 10 %.  Asymptotics:

* Bonawitz et al. (complete): client O(n + K) bytes, O(n^2 + n K) compute (the n^2 is
  Shamir sharing to n holders with t ~ n/2); server O(n^2 + K n) bytes, O(K n^2) compute
  in the dropout count (K n per dropped client's n masks).
* Bell et al. (k = O(log n)): client O(log n + K) bytes, O(log^2 n + K log n) compute;
  server O(n log n + K n) bytes, O(n log^2 n + K n log n) compute.

The slopes printed beside each row are d log(cost) / d log(n) against the previous n of
the same graph, K and dropout: with K = 5000 >= n the K terms dominate at small n, so the
complete graph's client compute tends to slope 1 (n K) and its server compute with a
fixed dropout fraction to 2 (ρ n dropped clients, each costing n masks of K), while the
Harary graph's per-client cost stays nearly flat (log n) and its server cost near 1.  The simulation computes
each pair's X25519 secret once for both ends; the "client" column adds the k exchanges a
real client would also do (k x the measured exchange time).

Part 2 (``--part complete``): the complete graph at n in {100, 300, 1000, 5000}, K = 5000,
dropout 0 and 10 %, where simulating a whole shard costs O(n^3) (every client Shamir-shares
to n holders) and at n = 5000 does not fit this machine.  Per-client cost is measured on a
sample of clients, each doing its whole own work against the other n − 1 clients' public
keys (``sampled_clients``; its bytes are checked against ``protocol.client_bytes``).
Server cost is measured in parts, each running the server's own code, whole where that is
cheap and on a sample scaled by the count it stands for where it is linear in that count
(``sampled_server``).  Where n <= --full-max the whole shard is also run, so the sampled
figures can be compared with the full simulation.  Slopes: least squares of log cost on
log n over the measured n.

Times are CPU seconds of this process (``time.process_time``), not wall time, so the load
of other jobs on a shared machine does not inflate them; "wall" columns are wall clock.

Part 3 (``--part adaptive``): the adaptive heatmap (Bagdasaryan et al. 2022 Alg. 2) in
secure mode with 10^5 users per sub-query, shards of 1000, against the per-client ideal
sum and the population-scale mode on the same population: wall time of each.

Run:  python perf/bench_secagg.py [--part shard|complete|adaptive|all] [--quick] [--complete-max N] [--full-max N]
"""

from __future__ import annotations

import argparse
import math
import time
from contextlib import contextmanager

import numpy as np

from locpriv.heatmaps.adaptive import AdaptiveParams, run_adaptive
from locpriv.heatmaps.study import _synthetic_population, make_secagg
from locpriv.secagg import ProtocolParams, aggregate, crypto, graph, protocol, shamir
from locpriv.seeding import rng as make_rng

CLIENT_METHODS = ("public_keys", "sealed_shares", "masked_input", "unmask_response")
SERVER_METHODS = ("receive_public_keys", "route", "receive_masked", "unmasking_request", "receive_shares", "finish")


@contextmanager
def timed_methods():
    """Wall time spent in the clients' and the server's methods (patched for the duration)."""
    spent = {"client": 0.0, "server": 0.0}
    saved = []
    for owner, names, side in ((protocol.Clients, CLIENT_METHODS, "client"),
                               (protocol.Server, SERVER_METHODS, "server")):
        for name in names:
            original = getattr(owner, name)

            def wrapper(*args, _original=original, _side=side, **kwargs):
                start = time.process_time()
                try:
                    return _original(*args, **kwargs)
                finally:
                    spent[_side] += time.process_time() - start

            saved.append((owner, name, original))
            setattr(owner, name, wrapper)
    try:
        yield spent
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def exchange_seconds(reps: int = 2000) -> float:
    key = crypto.private_key(bytes(range(32)))
    peer = crypto.public_bytes(crypto.private_key(bytes(range(1, 33))))
    start = time.process_time()
    for _ in range(reps):
        crypto.exchange(key, peer)
    return (time.process_time() - start) / reps


def shard_row(n: int, dim: int, graph: str, dropout: float, t_exchange: float, seed: int = 0) -> dict:
    rng = make_rng(seed, "bench-secagg", n, dim, graph, dropout)
    params = ProtocolParams(bits=32, graph=graph, planned_dropout=dropout)
    x = rng.integers(0, 1 << 32, (n, dim), dtype=np.uint64)
    survivors = np.sort(rng.permutation(n)[int(round(dropout * n)):])
    with timed_methods() as spent:
        start = time.perf_counter()
        total, log = aggregate(x[survivors], survivors, n, params, rng, b"bench")
        wall = time.perf_counter() - start
    expected = np.zeros(dim, dtype=np.uint64)
    for row in x[survivors]:          # uint64 wraps mod 2^64, a multiple of m
        expected += row
    assert np.array_equal(total, expected & np.uint64((1 << 32) - 1)), "secure sum differs from the plain sum"
    k = params.degree_for(n)
    sent = log.groupby("sender")["bytes"].sum()
    return {"graph": graph, "n": n, "K": dim, "dropout": dropout, "k": k, "wall_s": wall,
            "client_bytes": float(sent.mean()), "client_s": spent["client"] / n + k * t_exchange,
            "server_s": spent["server"], "server_bytes_in": float(log["bytes"].sum())}


def shard_part(sizes, dims, graphs, dropouts, complete_max: int) -> None:
    """One row per setting; "slope" columns: d log(cost) / d log(n) against the previous n of the same
    graph, K and dropout (the papers' exponents: module doc)."""
    t_exchange = exchange_seconds()
    print(f"X25519 exchange: {t_exchange * 1e6:.1f} us (measured here)")
    print(f"{'graph':9s} {'n':>5s} {'K':>5s} {'drop':>5s} {'k':>5s} {'client KB':>10s} {'client s':>9s} "
          f"{'server s':>9s} {'wall s':>8s}   slopes vs n (client B, client s, server s)")
    previous = {}
    for graph in graphs:
        for n in sizes:
            if graph == "complete" and n > complete_max:
                print(f"{graph:9s} {n:5d}  skipped (O(n^2) Shamir and masks; raise --complete-max to run it)")
                continue
            for dim in dims:
                for dropout in dropouts:
                    row = shard_row(n, dim, graph, dropout, t_exchange)
                    measured = (row["client_bytes"], row["client_s"], row["server_s"])
                    before = previous.get((graph, dim, dropout))
                    slopes = ("  ".join(f"{math.log(m / m0) / math.log(n / before[0]):5.2f}"
                                        for m, m0 in zip(measured, before[1])) if before else "")
                    previous[graph, dim, dropout] = (n, measured)
                    print(f"{graph:9s} {n:5d} {dim:5d} {dropout:5.2f} {row['k']:5d} {row['client_bytes'] / 1e3:10.1f} "
                          f"{row['client_s']:9.4f} {row['server_s']:9.2f} {row['wall_s']:8.2f}   {slopes}", flush=True)


@contextmanager
def clock(spent: dict, key: str):
    start = time.process_time()
    try:
        yield
    finally:
        spent[key] = spent.get(key, 0.0) + time.process_time() - start


def complete_keys(n: int, rng: np.random.Generator):
    """Every client's channel and masking key pairs (set-up shared by the sampled measurements)."""
    c_keys = [crypto.private_key(r.tobytes()) for r in crypto.random_bytes(rng, n)]
    s_keys = [crypto.private_key(r.tobytes()) for r in crypto.random_bytes(rng, n)]
    return c_keys, s_keys, [crypto.public_bytes(k) for k in c_keys], [crypto.public_bytes(k) for k in s_keys]


def sampled_clients(n: int, dim: int, params: ProtocolParams, keys, rng, sample: int, context=b"bench") -> dict:
    """One complete-graph client's whole work, timed per step on ``sample`` clients (mean), without the other
    n − 1: its own X25519 exchanges with all n − 1 peers, Shamir sharing of its two secrets to its n holders,
    n − 1 AES-GCM seals, the masked vector (n − 1 pairwise PRG masks + self-mask) and opening the n − 1
    sealed shares it holds.  What the peers send it is prepared outside the clock (their work)."""
    c_keys, s_keys, c_pub, s_pub = keys
    t = graph.threshold(n, params.threshold)
    xs = (np.arange(n) + 1)[None]                      # holders: every client (self included), x = id + 1
    spent, sent = {}, []

    def header(sender, recipient):
        return context + b"|share|" + sender.to_bytes(4, "little") + recipient.to_bytes(4, "little")

    for u in rng.choice(n, sample, replace=False).tolist():
        others = [v for v in range(n) if v != u]
        inbox = {v: crypto.seal(crypto.derive(crypto.exchange(c_keys[v], c_pub[u]), header(v, u)),
                                bytes(8 * shamir.n_limbs(crypto.KEY_BYTES)), header(v, u)) for v in others}
        x = rng.integers(0, 1 << params.bits, dim, dtype=np.uint64)
        with clock(spent, "advertise_keys"):
            public = crypto.public_bytes(c_keys[u]) + crypto.public_bytes(s_keys[u])
        with clock(spent, "share_keys"):
            channel = {}
            for v in others:
                shared = crypto.exchange(c_keys[u], c_pub[v])
                channel[v] = (crypto.derive(shared, header(u, v)), crypto.derive(shared, header(v, u)))
            b = crypto.random_bytes(rng, 1)
            secrets = (np.frombuffer(s_keys[u].private_bytes_raw(), np.uint8)[None], b)
            plain = np.concatenate([shamir.share(secret, xs, t, lambda shape: crypto.random_field(
                rng, shape, shamir.PRIME)).astype("<i4") for secret in secrets], axis=2)[0]
            sealed = [crypto.seal(channel[v][0], plain[v].tobytes(), header(u, v)) for v in others]
        with clock(spent, "masked_input"):
            y = x + crypto.expand(protocol.self_mask_seed(b.tobytes(), context), dim, params.bits)
            for v in others:
                mask = crypto.expand(protocol.pair_seed(s_keys[u], s_pub[v], u, v, context), dim, params.bits)
                y = y + mask if u < v else y - mask
            y &= np.uint64((1 << params.bits) - 1)
        with clock(spent, "unmasking"):
            held = [np.frombuffer(crypto.open_sealed(channel[v][1], inbox[v], header(v, u)), "<i4") for v in others]
        sent.append(len(public) + sum(map(len, sealed)) + y.size * ((params.bits + 7) // 8)
                    + (len(held) + 1) * protocol.SHARE_BYTES)
        assert sent[-1] == sum(protocol.client_bytes(n, dim, params).values()), "bytes differ from the model"
    return {**{k: v / sample for k, v in spent.items()}, "bytes": float(np.mean(sent))}


def sampled_server(n: int, dim: int, params: ProtocolParams, dropout: float, keys, rng, sample: int,
                   context=b"bench") -> dict:
    """The complete-graph server's work at shard size n, in parts, each running the server's own code.

    Run whole: public keys, the survivors' masked vectors, rebuilding every survivor's self-seed from t + 1
    shares (real shares of ``sample`` seeds, each reused by many owners: the cost does not depend on the
    value) and removing its self-mask.  Sampled and scaled by the count they stand for (linear in it):
    routing (``sample`` senders' n − 1 sealed shares), receiving unmasking shares (``sample`` holders'
    n answers), removing dropped clients' masks (``sample`` dropped clients, each rebuilt from real shares
    and checked against its public key; this over-counts the once-per-call O(t^2) Lagrange weights, which
    are under 5 % of one dropped client's n exchanges and PRG masks)."""
    _, s_keys, c_pub, s_pub = keys
    t = graph.threshold(n, params.threshold)
    survivors = np.sort(rng.permutation(n)[int(round(dropout * n)):])
    alive, dropped = set(survivors.tolist()), sorted(set(range(n)) - set(survivors.tolist()))
    server = protocol.Server(n, graph.neighbours(n, "complete", None, rng), t, params, context)
    spent, scaled = {}, {}
    with clock(spent, "receive_public_keys"):
        server.receive_public_keys(c_pub, s_pub)
    bundle = {v: bytes(2 * protocol.SHARE_BYTES + protocol.GCM_TAG_BYTES) for v in range(n - 1)}
    with clock(spent, "route"):
        server.route({u: bundle for u in range(sample)}, lambda v, u, c: None)
    scaled["route"] = n / sample
    with clock(spent, "receive_masked"):
        for u in survivors:
            server.receive_masked(int(u), rng.integers(0, 1 << params.bits, dim, dtype=np.uint64))
    server.unmasking_request()
    response = {(u, "self_seed" if u in alive else "mask_key"): np.zeros(protocol.SHARE_BYTES // 4, np.int64)
                for u in range(n)}
    probe = protocol.Server(n, server.neighbours, t, params, context)
    with clock(spent, "receive_shares"):
        for v in survivors[:sample]:
            probe.receive_shares(int(v), response)
    scaled["receive_shares"] = len(survivors) / sample
    holders = np.repeat((survivors + 1)[None], sample, 0)

    def held(secrets):
        shares = shamir.share(secrets, holders, t, lambda shape: crypto.random_field(rng, shape, shamir.PRIME))
        return [[(int(v), shares[i, j]) for j, v in enumerate(survivors)] for i in range(len(secrets))]

    seeds = held(crypto.random_bytes(rng, sample))
    server.shares["self_seed"] = {int(u): seeds[i % sample] for i, u in enumerate(survivors)}
    with clock(spent, "self_masks"):
        server.self_masks(survivors.tolist())
    if dropped:
        who = dropped[:sample]
        keys_held = held(np.stack([np.frombuffer(s_keys[d].private_bytes_raw(), np.uint8) for d in who]))
        server.shares["mask_key"] = dict(zip(who, keys_held))
        with clock(spent, "dropped_masks"):
            server.dropped_masks(who, alive)
        scaled["dropped_masks"] = len(dropped) / len(who)
    return {k: v * scaled.get(k, 1.0) for k, v in spent.items()}


def complete_part(sizes, dim: int, dropouts, sample: int, full_max: int) -> None:
    """The complete graph (Bonawitz et al.) at shard sizes too large to simulate whole: per-client cost on
    sampled clients, server cost in parts (``sampled_server``); where n <= full_max the whole shard is also
    run (``shard_row``) to check the sampled estimates.  Slopes: least-squares d log(cost) / d log(n)."""
    params = ProtocolParams(bits=32, graph="complete")
    t_exchange = exchange_seconds()
    print(f"complete graph, K = {dim}, m = 2^32, sample of {sample} clients / holders / owners per part; "
          f"X25519 exchange {t_exchange * 1e6:.1f} us")
    rows = []
    for n in sizes:
        rng = make_rng(0, "bench-secagg-complete", n, dim)
        keys = complete_keys(n, rng)
        client = sampled_clients(n, dim, params, keys, rng, sample)
        for dropout in dropouts:
            server = sampled_server(n, dim, params, dropout, keys, rng, sample)
            row = {"n": n, "dropout": dropout, "client_KB": client["bytes"] / 1e3,
                   "client_s": sum(v for k, v in client.items() if k != "bytes"), "server_s": sum(server.values()),
                   "client_parts": {k: round(v, 4) for k, v in client.items() if k != "bytes"},
                   "server_parts": {k: round(v, 3) for k, v in server.items()}}
            if n <= full_max:
                full = shard_row(n, dim, "complete", dropout, t_exchange)
                row.update(full_client_s=full["client_s"], full_server_s=full["server_s"],
                           full_client_KB=full["client_bytes"] / 1e3, full_wall_s=full["wall_s"])
            rows.append(row)
            print("  " + "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                  flush=True)
    for dropout in dropouts:
        mine = [r for r in rows if r["dropout"] == dropout]
        if len(mine) > 1:
            logn = np.log([r["n"] for r in mine])
            fit = {key: np.polyfit(logn, np.log([r[key] for r in mine]), 1)[0]
                   for key in ("client_KB", "client_s", "server_s")}
            print(f"  dropout {dropout:.2f}: fitted slopes d log / d log n over n = {[r['n'] for r in mine]}: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in fit.items())
                  + "  (Bonawitz et al.: client bytes O(n + K), client compute O(n^2 + n K), "
                    "server O(n^2 + n K) without and O(K n^2) with a fixed dropout fraction)", flush=True)


def adaptive_part(users: int, shard: int, seed: int = 1) -> None:
    pop = {"depth": 8, "users": 2_000_000, "hotspots": 12}
    image = _synthetic_population(pop, seed)
    run = {"shard_size": shard, "dropout": 0.0}
    print(f"adaptive heatmap, {users} users per sub-query, shards of {shard}, 256 x 256 synthetic population")
    for mode in ("population", "per_client", "secure"):
        secagg = make_secagg(run, mode, None, make_rng(seed, "bench-secagg-keys"))
        params = AdaptiveParams(epsilon=1.0, users_per_round=users, sampling="fixed", secagg=secagg)
        start = time.perf_counter()
        result = run_adaptive(image, params, make_rng(seed, "bench-secagg-dp"))
        wall = time.perf_counter() - start
        extra = ""
        if result.protocol_transcript is not None:
            log = result.protocol_transcript
            per_client = log.groupby(["round", "shard", "sender"])["bytes"].sum().groupby("round").mean()
            extra = f"  bytes per client per round: {', '.join(f'{b / 1e3:.1f} KB' for b in per_client)}"
        print(f"  {mode:10s} rounds {len(result.rounds)}  K per round {result.transcript['vector_length'].tolist()}"
              f"  wall {wall:8.1f} s  epsilon {result.epsilon_spent:.3f}{extra}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("shard", "complete", "adaptive", "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--complete-max", type=int, default=1000, help="largest n run on the complete graph")
    parser.add_argument("--full-max", type=int, default=1000,
                        help="largest n whose complete-graph shard is also run whole (--part complete)")
    args = parser.parse_args()
    if args.part in ("shard", "all"):
        if args.quick:
            shard_part([50, 100], [500], ("complete", "harary"), (0.0, 0.1), args.complete_max)
        else:
            shard_part([100, 1000, 5000], [5000], ("harary", "complete"), (0.0, 0.1), args.complete_max)
            shard_part([1000], [500, 20000], ("harary",), (0.1,), args.complete_max)
    if args.part in ("complete", "all"):
        if args.quick:
            complete_part([50, 100], 500, (0.0, 0.1), 2, 100)
        else:
            complete_part([100, 300, 1000, 5000], 5000, (0.0, 0.1), 3, args.full_max)
    if args.part in ("adaptive", "all"):
        adaptive_part(10_000 if args.quick else 100_000, 1000)


if __name__ == "__main__":
    main()
