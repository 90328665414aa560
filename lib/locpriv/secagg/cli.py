"""``locpriv-secagg``: the secure-aggregation service's commands (``service``), loopback only.

    locpriv-secagg certs  --out DIR                      a test CA and a 127.0.0.1 server certificate
    locpriv-secagg keys   --stores DIR --ids 0:N --out directory.json
                                                         each client's key store (identity created once) and
                                                         the public directory of their identity keys
    locpriv-secagg server --port P --clients N --dim K --certs DIR --out result.json [protocol options]
    locpriv-secagg client --port P --ids A:B --inputs x.npy --stores DIR --certs DIR [--directory F]

The server prints ``listening PORT`` and one line per step, and writes the survivors' sum mod 2^bits,
the survivor ids and its measurements as JSON.  A client process runs the clients ``A..B-1`` as asyncio
tasks, each with its own TLS connection and key store ``DIR/<id>``, row ``id`` of ``x.npy`` as its
input (``--drop`` ids leave before sending a masked input), and prints its measurements as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from . import service
from .protocol import ProtocolError, ProtocolParams
from .store import KeyStore


def _ids(text: str) -> range:
    start, stop = (int(v) for v in text.split(":"))
    return range(start, stop)


def _usage() -> dict:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return {"process_cpu_s": u.ru_utime + u.ru_stime, "peak_rss_mb": u.ru_maxrss / 1024}


def server(args) -> None:
    params = ProtocolParams(
        bits=args.bits,
        graph=args.graph,
        degree=args.degree,
        threshold=args.threshold,
        planned_dropout=args.planned_dropout,
        variant=args.variant,
    )
    context = os.urandom(16) + b"|locpriv-secagg|" + args.label.encode()
    certs = Path(args.certs)
    tls = service.server_tls(certs / "server.pem", certs / "server.key")

    def log(line):
        print(line, flush=True)

    rounds = service.RoundServer(
        args.clients, args.dim, params, context, args.deadline, args.grace, args.pause or (), log
    )
    total, alive, stats = asyncio.run(rounds.run(args.port, tls, lambda port: log(f"listening {port}")))
    result = {"sum": total.tolist(), "alive": alive.tolist(), **stats, **_usage()}
    Path(args.out).write_text(json.dumps(result))
    log(f"done: {len(alive)} survivors")


def client(args) -> None:
    x = np.load(args.inputs)
    certs, stores = Path(args.certs), Path(args.stores)
    tls = service.client_tls(certs / "ca.pem")
    directory = None
    if args.directory:
        table = json.loads(Path(args.directory).read_text())
        directory = [bytes.fromhex(table[str(u)]) for u in range(len(table))]
    drop = {int(u) for u in args.drop.split(",")} if args.drop else set()
    # The degree rule's first call imports scipy (≈ 1.4 s of CPU): done once here, not inside the first
    # client's protocol clock, where it was 14 of the 39.2 ms per client of a 1,000-client round in
    # 10 processes (2.8 of 25.6 ms at 10⁴ clients in 20).
    from scipy import stats  # noqa: F401

    async def main():
        gate = asyncio.Semaphore(64)  # connection attempts at once from this process
        jobs = [
            service.run_client(
                args.port, u, None if u in drop else x[u], KeyStore(stores / str(u)), tls, directory, gate
            )
            for u in _ids(args.ids)
        ]
        return await asyncio.gather(*jobs)

    start = time.perf_counter()
    results = asyncio.run(main())
    print(
        json.dumps(
            {
                "clients": len(results),
                "bytes_sent": sum(r[0] for r in results),
                "client_cpu_s": sum(r[1] for r in results),
                "wall_s": time.perf_counter() - start,
                **_usage(),
            }
        ),
        flush=True,
    )


def keys(args) -> None:
    stores = Path(args.stores)
    table = {str(u): KeyStore(stores / str(u)).public().hex() for u in _ids(args.ids)}
    Path(args.out).write_text(json.dumps(table))


def certs(args) -> None:
    service.make_certificates(args.out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="locpriv-secagg", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("server")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--clients", type=int, required=True)
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--certs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--label", default="round")
    p.add_argument("--bits", type=int, default=32)
    p.add_argument("--graph", default="harary")
    p.add_argument("--degree", type=int)
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--planned-dropout", type=float, default=0.0)
    p.add_argument("--variant", default="honest_but_curious")
    p.add_argument("--deadline", type=float, default=60.0, help="seconds per step")
    p.add_argument("--grace", type=float, default=1.0, help="seconds to wait for disconnected clients to return")
    p.add_argument("--pause", action="append", help="after this step, wait for a line on stdin (tests)")
    p.set_defaults(run=server)
    p = sub.add_parser("client")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--stores", required=True)
    p.add_argument("--certs", required=True)
    p.add_argument("--directory")
    p.add_argument("--drop", help="ids (comma-separated) that leave before sending a masked input")
    p.set_defaults(run=client)
    p = sub.add_parser("keys")
    p.add_argument("--stores", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=keys)
    p = sub.add_parser("certs")
    p.add_argument("--out", required=True)
    p.set_defaults(run=certs)
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (ValueError, OSError, ProtocolError) as exc:
        print(f"locpriv-secagg {args.command}: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
