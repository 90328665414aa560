"""Cost of pairwise-masking secure aggregation (locpriv.secagg) against the papers' asymptotics and Flower's SecAgg+.

Part 1 (``--part shard``): one shard of n clients with vectors of K entries, m = 2^32, run whole
(``secagg.aggregate``, every client an object doing its own work, its X25519 exchanges included):
bytes one client sends (from the server's transcript), CPU seconds per client and of the server
(``secagg.CpuClock``: ``time.process_time`` inside the clients' and the server's methods, so other
jobs' load inflates them less than wall time), for the random k-regular Harary graph (Bell et al.
2020) and the complete graph (Bonawitz et al. 2017), dropout 0 and 10 %.  Asymptotics:

* Bonawitz et al. (complete): client O(n + K) bytes, O(n^2 + n K) compute; server O(n^2 + K n)
  without and O(K n^2) compute with a fixed dropout fraction.
* Bell et al. (k = O(log n)): client O(log n + K) bytes, O(log^2 n + K log n) compute;
  server O(n log^2 n + K n log n) compute.

"slope" columns: d log(cost) / d log(n) against the previous n of the same graph, K and dropout.

Part 2 (``--part variants``): the honest-but-curious against the active variant (signed keys,
Merkle session id, consistency round with 2-hop signature checks) on the same shard.

Part 3 (``--part flower``): Flower's SecAgg+ (``flwr``: its client mod and its server workflow,
run in this process through an in-memory grid, ``FlowerShard``) beside this package on the
same n, K, Harary degree k (Flower's ``num_shares`` = k + 1) and threshold t, no dropout, n = 100
and 1000, alternating the two systems ``--reps`` times and reporting medians: per-client and
server CPU seconds and payload bytes one client sends (keys, ciphertexts, masked vector, shares;
ids and framing counted for neither), and Flower / locpriv ratios.  Each Flower message is
deep-copied before delivery (what serialisation does; its cost is not billed to either side).
Needs ``pip install flwr`` in the benchmark environment only (the ``bench`` extra; never a
runtime dependency of locpriv); the part is skipped with a message without it.

Part 4 (``--part adaptive``): the adaptive heatmap (Bagdasaryan et al. 2022 Alg. 2) in secure mode
with 10^5 users per sub-query, shards of 1000, against the per-client ideal sum and the
population mode on the same population: wall time of each.

Part 5 (``--part scale --results DIR``): the summary of a finished 10^6-client sub-query of the
workflow (``studies.heatmaps.secagg_scale``, workflow/configs/heatmaps_secagg_scale.yaml): wall time and
peak memory per shard job from DIR/studies/heatmaps/secagg_scale/shards.csv.

Part 6 (``--part service``): the service (``locpriv.secagg.service``) on this machine: a server process and
``--processes`` client processes running ``--clients`` asyncio clients over TLS on 127.0.0.1; after the key
shares, ``--kill`` of the client processes are killed (SIGKILL: their clients drop before sending a masked
input, so their masks are removed from the survivors' sum).  Checks the exact sum of the survivors and
reports the bytes on the wire (framed messages, TLS records not included), the protocol code's CPU per
client and of the server (``time.process_time`` around the protocol calls) and each process's whole CPU
(``getrusage``: TLS, asyncio, wire format and start-up included), and wall time.

Run:  python perf/bench_secagg.py [--part shard|variants|flower|adaptive|scale|service|all] [--quick]
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import math
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from locpriv.heatmaps.adaptive import AdaptiveParams, run_adaptive
from locpriv.heatmaps.study import make_secagg, synthetic_population
from locpriv.secagg import CpuClock, ProtocolParams, aggregate, service
from locpriv.seeding import rng as make_rng

BITS = 32


def locpriv_row(n: int, dim: int, params: ProtocolParams, dropout: float = 0.0, seed: int = 0) -> dict:
    """One whole shard: per-client and server CPU seconds, mean bytes a client sends; checked exact."""
    rng = make_rng(seed, "bench-secagg", n, dim, params.graph, dropout)
    x = rng.integers(0, 1 << BITS, (n, dim), dtype=np.uint64)
    senders = np.sort(rng.permutation(n)[int(round(dropout * n)) :])
    params.degree_for(n)  # the degree rule's scipy import and cache, outside the clock
    clock = CpuClock()
    start = time.perf_counter()
    total, log = aggregate(x[senders], senders, n, params, None, os.urandom(16) + b"|bench", clock=clock)
    wall = time.perf_counter() - start
    expected = x[senders].sum(axis=0, dtype=np.uint64) & np.uint64((1 << BITS) - 1)  # wraps mod 2^64, m | 2^64
    assert np.array_equal(total, expected), "secure sum differs from the plain sum"
    return {
        "n": n,
        "K": dim,
        "dropout": dropout,
        "k": params.degree_for(n),
        "t": params.t_for(n),
        "client_s": clock.client / n,
        "server_s": clock.server,
        "wall_s": wall,
        "client_bytes": float(log.groupby("sender")["bytes"].sum().mean()),
    }


def shard_part(sizes, dims, graphs, dropouts, complete_max: int) -> None:
    print(
        f"{'graph':9s} {'n':>5s} {'K':>5s} {'drop':>5s} {'k':>5s} {'client KB':>10s} {'client s':>9s} "
        f"{'server s':>9s} {'wall s':>8s}   slopes vs n (client B, client s, server s)"
    )
    previous = {}
    for kind in graphs:
        for n in sizes:
            if kind == "complete" and n > complete_max:
                print(f"{kind:9s} {n:5d}  skipped (O(n^2) shares and masks; raise --complete-max to run it)")
                continue
            for dim in dims:
                for dropout in dropouts:
                    params = ProtocolParams(bits=BITS, graph=kind, planned_dropout=dropout)
                    row = locpriv_row(n, dim, params, dropout)
                    measured = (row["client_bytes"], row["client_s"], row["server_s"])
                    before = previous.get((kind, dim, dropout))
                    slopes = (
                        "  ".join(
                            f"{math.log(m / m0) / math.log(n / before[0]):5.2f}"
                            for m, m0 in zip(measured, before[1], strict=True)
                        )
                        if before
                        else ""
                    )
                    previous[kind, dim, dropout] = (n, measured)
                    print(
                        f"{kind:9s} {n:5d} {dim:5d} {dropout:5.2f} {row['k']:5d} {row['client_bytes'] / 1e3:10.1f} "
                        f"{row['client_s']:9.4f} {row['server_s']:9.2f} {row['wall_s']:8.2f}   {slopes}",
                        flush=True,
                    )


def variants_part(sizes, dim: int) -> None:
    print(f"honest_but_curious against active, Harary, K = {dim}, no dropout")
    for n in sizes:
        rows = {v: locpriv_row(n, dim, ProtocolParams(bits=BITS, variant=v)) for v in ("honest_but_curious", "active")}
        hbc, act = rows["honest_but_curious"], rows["active"]
        print(
            f"  n = {n:5d} k = {hbc['k']:3d}: client {hbc['client_s'] * 1e3:.2f} -> {act['client_s'] * 1e3:.2f} ms "
            f"(x{act['client_s'] / hbc['client_s']:.2f}), server {hbc['server_s']:.2f} -> {act['server_s']:.2f} s, "
            f"client bytes {hbc['client_bytes']:.0f} -> {act['client_bytes']:.0f}",
            flush=True,
        )


class FlowerShard:
    """Flower's SecAgg+ (client mod + server workflow) on n in-process nodes: CPU per side, payload bytes sent."""

    def __init__(self, n: int, dim: int, k: int, t: int, seed: int = 0):
        import logging

        from flwr.app import ConfigRecord, Context, Message, RecordDict
        from flwr.client.mod.secure_aggregation.secaggplus_mod import secaggplus_mod
        from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
        from flwr.compat.common import recorddict_compat as compat
        from flwr.server.compat.grid_client_proxy import GridClientProxy
        from flwr.server.compat.legacy_context import LegacyContext
        from flwr.server.strategy import FedAvg
        from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
        from flwr.server.workflow.constant import Key as WorkflowKey
        from flwr.server.workflow.secure_aggregation.secaggplus_workflow import SecAggPlusWorkflow
        from flwr.serverapp.grid import Grid
        from flwr.supercore.task_identity import TaskIdentity

        logging.getLogger("flwr").setLevel(logging.ERROR)
        TaskIdentity.run_id, TaskIdentity.task_id, TaskIdentity.node_id = 1, 1, 0
        vectors = np.random.default_rng(seed).uniform(-1, 1, (n, dim)).astype(np.float32)
        shard = self

        class InProcessGrid(Grid):
            def set_run(self, run):
                pass

            @property
            def run(self):
                return None

            def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
                return Message(content=content, dst_node_id=dst_node_id, message_type=message_type, group_id=group_id)

            def get_node_ids(self):
                return list(range(1, n + 1))

            def push_messages(self, messages):
                raise NotImplementedError("in-process grid: send_and_receive only")

            def pull_messages(self, message_ids):
                raise NotImplementedError("in-process grid: send_and_receive only")

            def send_and_receive(self, messages, *, timeout=None):
                replies = []
                for msg in messages:
                    node = msg.metadata.dst_node_id
                    start = time.process_time()
                    msg = copy.deepcopy(msg)  # each node gets its own message, as after serialisation
                    shard.copy_s += time.process_time() - start

                    def train(m, ctxt, node=node):
                        fit = FitRes(Status(Code.OK, ""), ndarrays_to_parameters([vectors[node - 1]]), 1, {})
                        return Message(compat.fitres_to_recorddict(fit, False), reply_to=m)

                    start = time.process_time()
                    reply = secaggplus_mod(msg, shard.nodes[node], train)
                    shard.client_s += time.process_time() - start
                    shard.sent[node] = shard.sent.get(node, 0) + _payload_bytes(reply)
                    replies.append(reply)
                return replies

        self.client_s = self.copy_s = 0.0
        self.sent: dict[int, int] = {}
        self.nodes = {
            node: Context(run_id=1, node_id=node, node_config={}, state=RecordDict(), run_config={})
            for node in range(1, n + 1)
        }
        grid = InProcessGrid()
        context = LegacyContext(
            Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}),
            strategy=FedAvg(fraction_fit=1.0, min_fit_clients=n, min_available_clients=n),
        )
        for node in grid.get_node_ids():
            context.client_manager.register(GridClientProxy(node, grid, 1))
        context.state.config_records[MAIN_CONFIGS_RECORD] = ConfigRecord({WorkflowKey.CURRENT_ROUND: 1})
        context.state.array_records[MAIN_PARAMS_RECORD] = compat.parameters_to_arrayrecord(
            ndarrays_to_parameters([np.zeros(dim, np.float32)]), True
        )
        workflow = SecAggPlusWorkflow(num_shares=k + 1, reconstruction_threshold=t, modulus_range=1 << BITS)
        start = time.process_time()
        workflow(grid, context)
        self.server_s = time.process_time() - start - self.client_s - self.copy_s
        mean = parameters_to_ndarrays(
            compat.arrayrecord_to_parameters(context.state.array_records[MAIN_PARAMS_RECORD], True)
        )[0]
        # Flower releases the mean of the quantised vectors: within a quantisation step of the true mean
        assert np.abs(mean - vectors.mean(axis=0)).max() < 1e-3, "Flower's SecAgg+ did not return the mean"
        self.n = n


def _payload_bytes(msg) -> int:
    total = 0
    for record in msg.content.config_records.values():
        for value in record.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, bytes):
                    total += len(item)
    return total


def flower_part(sizes, dim: int, reps: int) -> None:
    try:
        import flwr
    except ImportError:
        print("flower part skipped: `pip install flwr` in the benchmark environment (never a runtime dependency)")
        return
    print(
        f"Flower {flwr.__version__} SecAgg+ beside locpriv.secagg (honest_but_curious), Harary graph, K = {dim}, "
        f"m = 2^{BITS}, no dropout; medians of {reps} alternating runs; ratios = Flower / locpriv"
    )
    print(
        f"{'n':>5s} {'k':>3s} {'t':>3s} | {'client ms':>19s} {'ratio':>6s} | {'server s':>15s} {'ratio':>6s} | "
        f"{'client KB sent':>15s} {'ratio':>6s}"
    )
    for n in sizes:
        params = ProtocolParams(bits=BITS)
        k, t = params.degree_for(n), params.t_for(n)
        ours, theirs = [], []
        for rep in range(reps):
            ours.append(locpriv_row(n, dim, params, seed=rep))
            flower = FlowerShard(n, dim, k, t, seed=rep)
            theirs.append(
                {
                    "client_s": flower.client_s / n,
                    "server_s": flower.server_s,
                    "client_bytes": float(np.mean(list(flower.sent.values()))),
                }
            )
        med = {
            side: {key: statistics.median(r[key] for r in rows) for key in ("client_s", "server_s", "client_bytes")}
            for side, rows in (("ours", ours), ("flower", theirs))
        }
        o, f = med["ours"], med["flower"]
        print(
            f"{n:5d} {k:3d} {t:3d} | {o['client_s'] * 1e3:8.2f} {f['client_s'] * 1e3:10.2f} "
            f"{f['client_s'] / o['client_s']:6.1f} | {o['server_s']:6.2f} {f['server_s']:8.2f} "
            f"{f['server_s'] / o['server_s']:6.1f} | {o['client_bytes'] / 1e3:6.1f} {f['client_bytes'] / 1e3:8.1f} "
            f"{f['client_bytes'] / o['client_bytes']:6.1f}",
            flush=True,
        )


def adaptive_part(users: int, shard: int, seed: int = 1) -> None:
    pop = {"depth": 8, "users": 2_000_000, "hotspots": 12}
    image = synthetic_population(pop, seed)
    run = {"shard_size": shard, "dropout": 0.0}
    print(f"adaptive heatmap, {users} users per sub-query, shards of {shard}, 256 x 256 synthetic population")
    for mode in ("population", "per_client", "secure"):
        secagg = make_secagg(run, mode, None, layout=make_rng(seed, "bench-secagg-layout"))
        params = AdaptiveParams(epsilon=1.0, users_per_round=users, sampling="fixed", secagg=secagg)
        start = time.perf_counter()
        result = run_adaptive(image, params, make_rng(seed, "bench-secagg-dp"))
        wall = time.perf_counter() - start
        extra = ""
        if result.protocol_transcript is not None:
            log = result.protocol_transcript
            per_client = log.groupby(["round", "shard", "sender"])["bytes"].sum().groupby("round").mean()
            extra = f"  bytes per client per round: {', '.join(f'{b / 1e3:.1f} KB' for b in per_client)}"
        print(
            f"  {mode:10s} rounds {len(result.rounds)}  K per round {result.transcript['vector_length'].tolist()}"
            f"  wall {wall:8.1f} s  epsilon {result.epsilon_spent:.3f}{extra}",
            flush=True,
        )


def scale_part(results: str) -> None:
    table = pd.read_csv(f"{results}/studies/heatmaps/secagg_scale/shards.csv")
    jobs = -(-len(table) // int(table["job_shards"].iloc[0]))
    print(
        f"{len(table)} shards of {int(table['clients'].iloc[0])} clients "
        f"({int(table['survivors'].sum())} survivors), "
        f"K = {int(table['K'].iloc[0])}, k = {sorted(map(int, table['k'].unique()))}, "
        f"t = {sorted(map(int, table['t'].unique()))}, "
        f"{jobs} jobs; CPU of all jobs / 2 cores = "
        f"{table.drop_duplicates('job_wall_s')['job_cpu_s'].sum() / 2 / 60:.1f} "
        "min (the wall time of an idle 2-core machine, job start-up included)"
    )
    for key in ("benchmark_wall_s", "job_cpu_s", "job_peak_rss_mb", "client_cpu_s", "server_cpu_s", "client_kb_sent"):
        values = table[key]
        print(f"  {key:18s} median {values.median():9.2f}  max {values.max():9.2f}  sum {values.sum():10.1f}")


def service_part(n: int, dim: int, processes: int, killed: int, planned: float) -> None:
    """One round of the service with ``killed`` of ``processes`` client processes killed after the key shares."""
    with tempfile.TemporaryDirectory(prefix="bench-secagg-") as tmp:
        folder = Path(tmp)
        service.make_certificates(folder / "certs")
        x = np.random.default_rng(0).integers(0, 1 << BITS, (n, dim), dtype=np.uint64)
        np.save(folder / "x.npy", x)
        options = ["--bits", str(BITS), "--planned-dropout", str(planned), "--deadline", "3600", "--grace", "2"]
        server, port = service.spawn_server(folder, n, dim, "--pause", "shares", *options)
        bounds = np.linspace(0, n, processes + 1).astype(int)
        clients = [service.spawn_clients(folder, port, range(a, b)) for a, b in itertools.pairwise(bounds)]
        for line in server.stdout:
            print("  server:", line.strip(), flush=True)
            if "paused after shares" in line:
                break
        dead = list(range(processes - killed, processes))
        for i in dead:
            clients[i].send_signal(signal.SIGKILL)
            clients[i].wait()
        server.stdin.write("\n")
        server.stdin.flush()
        for line in server.stdout:
            print("  server:", line.strip(), flush=True)
        server.wait()
        reports = [json.loads(c.communicate()[0]) for i, c in enumerate(clients) if i not in dead]
        result = json.loads((folder / "result.json").read_text())
    alive = np.array(result["alive"])
    expected = x[alive].sum(axis=0, dtype=np.uint64) & np.uint64((1 << BITS) - 1)
    assert np.array_equal(np.array(result["sum"], dtype=np.uint64), expected), "the service's sum differs"
    served = sum(r["clients"] for r in reports)
    params = ProtocolParams(bits=BITS, planned_dropout=planned)
    print(
        f"n = {n} in {processes} processes, K = {dim}, k = {params.degree_for(n)}, t = {params.t_for(n)}; "
        f"{n - len(alive)} killed after the key shares; exact sum of the {len(alive)} survivors: yes\n"
        f"  bytes on the wire: client -> server {result['bytes_in'] / 1e6:.1f} MB "
        f"({result['bytes_in'] / n / 1e3:.1f} KB per client), server -> clients {result['bytes_out'] / 1e6:.1f} MB\n"
        f"  protocol CPU: per client {sum(r['client_cpu_s'] for r in reports) / served * 1e3:.2f} ms, "
        f"server {result['server_cpu_s']:.1f} s\n"
        f"  process CPU: per client {sum(r['process_cpu_s'] for r in reports) / served * 1e3:.2f} ms "
        f"(start-up, TLS, asyncio included), server {result['process_cpu_s']:.1f} s; "
        f"peak RSS server {result['peak_rss_mb']:.0f} MB, client process max "
        f"{max(r['peak_rss_mb'] for r in reports):.0f} MB\n"
        f"  wall: server {result['wall_s']:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part", choices=("shard", "variants", "flower", "adaptive", "scale", "service", "all"), default="all"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--complete-max", type=int, default=1000, help="largest n run on the complete graph")
    parser.add_argument("--reps", type=int, default=3, help="alternating runs per system in the Flower part")
    parser.add_argument("--results", default="results", help="results folder of the scale run (--part scale)")
    parser.add_argument("--clients", type=int, default=10_000, help="clients of the service round (--part service)")
    parser.add_argument("--processes", type=int, default=10, help="client processes (--part service)")
    parser.add_argument("--killed", type=int, default=1, help="client processes killed mid-round (--part service)")
    parser.add_argument("--dim", type=int, default=1024, help="vector entries K (--part service)")
    args = parser.parse_args()
    if args.part == "service":
        service_part(args.clients, args.dim, args.processes, args.killed, args.killed / args.processes)
        return
    locpriv_row(20, 10, ProtocolParams(bits=BITS, variant="active"))  # warm-up: imports, first-call set-up
    if args.part in ("shard", "all"):
        if args.quick:
            shard_part([50, 100], [500], ("harary", "complete"), (0.0, 0.1), args.complete_max)
        else:
            shard_part([100, 1000, 5000], [5000], ("harary", "complete"), (0.0, 0.1), args.complete_max)
    if args.part in ("variants", "all"):
        variants_part([100] if args.quick else [100, 1000], 500 if args.quick else 5000)
    if args.part in ("flower", "all"):
        flower_part(
            [50, 100] if args.quick else [100, 1000], 200 if args.quick else 1000, 1 if args.quick else args.reps
        )
    if args.part in ("adaptive", "all"):
        adaptive_part(10_000 if args.quick else 100_000, 1000)
    if args.part == "scale":
        scale_part(args.results)


if __name__ == "__main__":
    main()
