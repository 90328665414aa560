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

Part 2 (``--part adaptive``): the adaptive heatmap (Bagdasaryan et al. 2022 Alg. 2) in
secure mode with 10^5 users per sub-query, shards of 1000, against the per-client ideal
sum and the population-scale mode on the same population: wall time of each.

Run:  python benchmarks/bench_secagg.py [--part shard|adaptive|all] [--quick] [--complete-max N]
"""

from __future__ import annotations

import argparse
import math
import time
from contextlib import contextmanager

import numpy as np

from locpriv.heatmaps.adaptive import AdaptiveParams, run_adaptive
from locpriv.heatmaps.study import _synthetic_population, make_secagg
from locpriv.secagg import ProtocolParams, aggregate, crypto, protocol
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
                start = time.perf_counter()
                try:
                    return _original(*args, **kwargs)
                finally:
                    spent[_side] += time.perf_counter() - start

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
    start = time.perf_counter()
    for _ in range(reps):
        crypto.exchange(key, peer)
    return (time.perf_counter() - start) / reps


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
    parser.add_argument("--part", choices=("shard", "adaptive", "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--complete-max", type=int, default=1000, help="largest n run on the complete graph")
    args = parser.parse_args()
    if args.part in ("shard", "all"):
        if args.quick:
            shard_part([50, 100], [500], ("complete", "harary"), (0.0, 0.1), args.complete_max)
        else:
            shard_part([100, 1000, 5000], [5000], ("harary", "complete"), (0.0, 0.1), args.complete_max)
            shard_part([1000], [500, 20000], ("harary",), (0.1,), args.complete_max)
    if args.part in ("adaptive", "all"):
        adaptive_part(10_000 if args.quick else 100_000, 1000)


if __name__ == "__main__":
    main()
