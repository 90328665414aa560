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

Part 7 (``--part flower-service --nodes N ... [--flower-env VENV]``): Flower's own deployment beside the
service at the same n, K, k and t, no dropout: a SuperLink and N SuperNodes from VENV (a virtual environment
with ``pip install flwr==1.42.0 numpy``, never this one; the part is skipped with a message without it) on
127.0.0.1, the round started with ``flwr run`` on the Flower App ``perf/flower_secagg.py``.  Bytes between the
SuperNodes and the SuperLink through a counting relay (``ByteCounter``); CPU from ``/proc`` for the long-lived
processes and from the ServerApp's and ClientApps' own ``getrusage`` (docs/results/secagg_vs_flower_service.md).

Run:  python perf/bench_secagg.py [--part shard|variants|flower|flower-service|adaptive|scale|service|all] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import itertools
import json
import math
import os
import signal
import statistics
import tempfile
import threading
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

        from flwr.app import Context, Message, RecordDict
        from flwr.client.mod.secure_aggregation.secaggplus_mod import secaggplus_mod
        from flwr.serverapp.grid import Grid
        from flwr.supercore.task_identity import TaskIdentity

        from flower_secagg import fit_reply, mean_error, secagg_round, vectors

        logging.getLogger("flwr").setLevel(logging.ERROR)
        TaskIdentity.run_id, TaskIdentity.task_id, TaskIdentity.node_id = 1, 1, 0
        x = vectors(n, dim, seed)
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
                    start = time.process_time()
                    reply = secaggplus_mod(msg, shard.nodes[node], lambda m, ctxt, node=node: fit_reply(m, x[node - 1]))
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
        start = time.process_time()
        mean = secagg_round(grid, grid.get_node_ids(), dim, k, t, BITS)
        self.server_s = time.process_time() - start - self.client_s - self.copy_s
        # within a quantisation step of the true mean (measured: < 1e-3 at n = 100 and 1000)
        assert mean_error(mean, x) < 1e-3, "Flower's SecAgg+ did not return the mean"
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


def service_part(n: int, dim: int, processes: int, killed: int, planned: float) -> dict:
    """One round of the service with ``killed`` of ``processes`` client processes killed after the key shares;
    prints and returns its measurements."""
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
    return {
        "k": params.degree_for(n),
        "t": params.t_for(n),
        "client_protocol_s": sum(r["client_cpu_s"] for r in reports) / served,
        "client_process_s": sum(r["process_cpu_s"] for r in reports) / served,
        "server_protocol_s": result["server_cpu_s"],
        "server_process_s": result["process_cpu_s"],
        "up_bytes": result["bytes_in"] / n,
        "down_bytes": result["bytes_out"],
        "wall_s": result["wall_s"],
    }


FLOWER_APP = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "secaggbench"
version = "1.0.0"
dependencies = ["flwr", "numpy"]

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "locpriv"

[tool.flwr.app.components]
serverapp = "flower_secagg:server_app"
clientapp = "flower_secagg:client_app"

[tool.flwr.app.config]
n = {n}
dim = {dim}
k = {k}
t = {t}
bits = {bits}
seed = 0
out = "{out}"
"""


class ByteCounter(threading.Thread):
    """A TCP relay 127.0.0.1:``port`` -> 127.0.0.1:``target`` counting the bytes each way (``up``: to the target)."""

    def __init__(self, target: int):
        super().__init__(daemon=True)
        self.target, self.up, self.down, self.port = target, 0, 0, None
        self.ready = threading.Event()
        self.start()
        self.ready.wait()

    def run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        server = await asyncio.start_server(self._relay, service.LOOPBACK, 0)
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        async with server:
            await server.serve_forever()

    async def _relay(self, reader, writer) -> None:
        try:
            target_reader, target_writer = await asyncio.open_connection(service.LOOPBACK, self.target)
        except OSError:  # the SuperLink not listening yet: the SuperNode retries
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, target_writer, "up"), self._pipe(target_reader, writer, "down"))

    async def _pipe(self, reader, writer, way: str) -> None:
        try:
            while data := await reader.read(1 << 16):
                setattr(self, way, getattr(self, way) + len(data))
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


def _proc_cpu(pids) -> float:
    """utime + stime of the live processes ``pids`` (their own, not their children's), seconds."""
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _children(pids) -> list[int]:
    """The live child processes of ``pids`` (a SuperLink's or SuperNode's SuperExec)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) in pids:
                found.append(int(stat.parent.name))
    return found


def flower_deployment(n: int, dim: int, k: int, t: int, env: Path) -> dict:
    """One SecAgg+ round of a Flower deployment on 127.0.0.1: a SuperLink and n SuperNodes, each its own process
    tree from ``env`` (SuperExec, ServerApp or ClientApp processes), the run started with ``flwr run``.  CPU of the
    round: the long-lived processes' CPU during the run plus the ServerApp's and ClientApps' whole CPU (they start
    with the run); bytes: SuperNodes <-> SuperLink during the run, through ``ByteCounter``."""
    import socket
    import subprocess

    with tempfile.TemporaryDirectory(prefix="bench-flower-") as tmp:
        folder = Path(tmp)
        (folder / "app").mkdir()
        (folder / "home").mkdir()
        (folder / "out").mkdir()
        (folder / "app" / "pyproject.toml").write_text(
            FLOWER_APP.format(n=n, dim=dim, k=k, t=t, bits=BITS, out=folder / "out")
        )
        (folder / "app" / "flower_secagg.py").write_text((Path(__file__).parent / "flower_secagg.py").read_text())
        with socket.socket() as sock:  # a free port for the SuperLink (its APIs share one HTTP port)
            sock.bind((service.LOOPBACK, 0))
            port = sock.getsockname()[1]
        (folder / "home" / "config.toml").write_text(
            f'[superlink]\ndefault = "bench"\n\n[superlink.bench]\naddress = "{service.LOOPBACK}:{port}"\n'
            "insecure = true\n"
        )
        environ = {
            **os.environ,
            "PATH": f"{env / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "FLWR_HOME": str(folder / "home"),
            "FLWR_DISABLE_UPDATE_CHECK": "1",
        }
        log = (folder / "flower.log").open("w")

        def spawn(*cmd):
            return subprocess.Popen(cmd, env=environ, stdout=log, stderr=subprocess.STDOUT)

        link = spawn("flower-superlink", "--insecure", "--port", str(port), "--disable-runtime-dependency-installation")
        procs = [link]
        try:
            time.sleep(5)
            relay = ByteCounter(port)
            nodes = []
            for i in range(n):
                with socket.socket() as sock:
                    sock.bind((service.LOOPBACK, 0))
                    node_port = sock.getsockname()[1]
                nodes.append(
                    spawn(
                        "flower-supernode",
                        "--insecure",
                        "--superlink",
                        f"{service.LOOPBACK}:{relay.port}",
                        "--port",
                        str(node_port),
                        "--node-config",
                        f"partition-id={i} num-partitions={n}",
                    )
                )
            procs += nodes
            node_pids = {p.pid for p in nodes}
            while len(_children(node_pids)) < n:  # every SuperNode has started its SuperExec
                time.sleep(2)
            time.sleep(10)
            server_side = [link.pid, *_children({link.pid})]
            client_side = [*node_pids, *_children(node_pids)]
            before = _proc_cpu(server_side), _proc_cpu(client_side), relay.up, relay.down
            start = time.perf_counter()
            run = subprocess.run(
                ["flwr", "run", str(folder / "app"), "bench", "--stream"],
                env=environ,
                capture_output=True,
                text=True,
                timeout=3600,
            )
            wall = time.perf_counter() - start
            after = _proc_cpu(server_side), _proc_cpu(client_side), relay.up, relay.down
            report = folder / "out" / "serverapp.json"
            if not report.exists():
                raise RuntimeError(f"the Flower run failed: {run.stdout[-2000:]}")
            serverapp = json.loads(report.read_text())
            clientapps = [
                json.loads(line)
                for path in (folder / "out").glob("clientapp-*.jsonl")
                for line in path.read_text().splitlines()
            ]
            peak = {}
            for line in clientapps:  # each ClientApp process's CPU at its last message
                peak[line["pid"]] = max(peak.get(line["pid"], 0.0), line["process_cpu_s"])
        finally:
            for proc in reversed(procs):
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            log.close()
    return {
        "k": k,
        "t": t,
        "client_protocol_s": sum(line["protocol_cpu_s"] for line in clientapps) / n,
        "client_process_s": (after[1] - before[1] + sum(peak.values())) / n,
        "server_protocol_s": serverapp["protocol_cpu_s"],
        "server_process_s": after[0] - before[0] + serverapp["process_cpu_s"],
        "up_bytes": (after[2] - before[2]) / n,
        "down_bytes": after[3] - before[3],
        "wall_s": wall,
        "clientapp_processes": len(peak),
        "mean_error": serverapp["mean_error"],
    }


def flower_service_part(sizes, dim: int, env: str) -> None:
    """Flower's own deployment (``flower_deployment``) beside this package's service at the same n, K, k, t."""
    env = Path(env)
    if not (env / "bin" / "flower-superlink").exists():
        print(
            f"flower-service part skipped: no {env}/bin/flower-superlink (`python -m venv {env} && "
            f"{env}/bin/pip install flwr==1.42.0 numpy`, never in this environment)"
        )
        return
    for n in sizes:
        print(f"n = {n}: locpriv-secagg service (2 client processes, no dropout)", flush=True)
        ours = service_part(n, dim, 2, 0, 0.0)
        print(f"n = {n}: Flower deployment (SuperLink + {n} SuperNodes), k = {ours['k']}, t = {ours['t']}", flush=True)
        flower = flower_deployment(n, dim, ours["k"], ours["t"], env)
        print(
            f"  {flower['clientapp_processes']} ClientApp processes; largest error of Flower's mean "
            f"{flower['mean_error']:.2e} (entries in [-1, 1))"
        )
        print(f"  {'':26s} {'locpriv':>12s} {'Flower':>12s} {'ratio':>7s}")
        for key, unit, scale in (
            ("client_protocol_s", "ms", 1e3),
            ("client_process_s", "ms", 1e3),
            ("server_protocol_s", "s", 1),
            ("server_process_s", "s", 1),
            ("up_bytes", "KB", 1e-3),
            ("down_bytes", "KB", 1e-3),
            ("wall_s", "s", 1),
        ):
            print(
                f"  {key + ' (' + unit + ')':26s} {ours[key] * scale:12.2f} {flower[key] * scale:12.2f} "
                f"{flower[key] / ours[key]:7.1f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part",
        choices=("shard", "variants", "flower", "flower-service", "adaptive", "scale", "service", "all"),
        default="all",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--complete-max", type=int, default=1000, help="largest n run on the complete graph")
    parser.add_argument("--reps", type=int, default=3, help="alternating runs per system in the Flower part")
    parser.add_argument("--results", default="results", help="results folder of the scale run (--part scale)")
    parser.add_argument("--clients", type=int, default=10_000, help="clients of the service round (--part service)")
    parser.add_argument("--processes", type=int, default=10, help="client processes (--part service)")
    parser.add_argument("--killed", type=int, default=1, help="client processes killed mid-round (--part service)")
    parser.add_argument("--dim", type=int, default=1024, help="vector entries K (--part service, flower-service)")
    parser.add_argument("--flower-env", default="/tmp/flwr-venv", help="venv with flwr (--part flower-service)")
    parser.add_argument(
        "--nodes", type=int, nargs="+", default=[20], help="clients of each round (--part flower-service)"
    )
    args = parser.parse_args()
    if args.part == "flower-service":
        flower_service_part(args.nodes, args.dim, args.flower_env)
        return
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
