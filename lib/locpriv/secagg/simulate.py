"""One shard of secure aggregation simulated in one process: n client objects and the server, in turn.

``aggregate`` runs the protocol of ``protocol`` with dropouts at any step (``Dropouts``) and
returns the server's output and transcript.  The clients are ``client.Client`` objects, each
with its own secrets and its own random stream (spawned from ``entropy``, or the OS), called
in the order of their ids; the server is ``server.Server``.  The PKI directory is public and
drawn first (or kept across runs); the Harary layout follows from the committed key set.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import pki
from .client import Client
from .protocol import ProtocolError, ProtocolParams
from .server import Server


@dataclass(frozen=True)
class Dropouts:
    """Client ids that go silent before each step (besides those not sending a masked input): a client
    listed for a step takes no part in it or any later one."""

    advertise_keys: frozenset = frozenset()
    share_keys: frozenset = frozenset()
    consistency: frozenset = frozenset()  # active variant: sent its masked input, never signs
    unmasking: frozenset = frozenset()  # sent its masked input (and signed), never answers

    def __post_init__(self):
        for name in ("advertise_keys", "share_keys", "consistency", "unmasking"):
            object.__setattr__(self, name, frozenset(int(u) for u in getattr(self, name)))


def _streams(entropy, n: int) -> list:
    """One random stream per client: spawned from a seeded Generator, or the OS for each (None)."""
    return entropy.spawn(n) if entropy is not None else [None] * n


def shard(
    n_clients: int,
    dim: int,
    params: ProtocolParams,
    entropy: np.random.Generator | None,
    context: bytes,
    beacon: bytes | None = None,
    directory: pki.Directory | None = None,
) -> tuple[list[Client], Server]:
    """The n clients and the server of one shard, before step 0 (``aggregate`` for the arguments)."""
    if n_clients < 2:
        raise ProtocolError(
            f"a shard of {n_clients} client cannot hide its input; choose users per round and "
            "shard size so that every shard has at least 2 clients"
        )
    if params.active and directory is None:
        directory = pki.Directory(n_clients, entropy)
    clients = [
        Client(
            u,
            n_clients,
            params,
            context,
            stream,
            directory.identities[u] if params.active else None,
            directory.public if params.active else None,
            beacon,
        )
        for u, stream in enumerate(_streams(entropy, n_clients))
    ]
    return clients, Server(n_clients, params, context, dim, beacon)


class CpuClock:
    """CPU seconds (``time.process_time``) spent in the clients' and in the server's code of a shard."""

    def __init__(self):
        self.client = self.server = 0.0

    def __call__(self, side: str, method, *args):
        start = time.process_time()
        try:
            return method(*args)
        finally:
            setattr(self, side, getattr(self, side) + time.process_time() - start)


def _untimed(side: str, method, *args):
    return method(*args)


def aggregate(
    vectors: np.ndarray,
    senders: np.ndarray,
    n_clients: int,
    params: ProtocolParams,
    entropy: np.random.Generator | None,
    context: bytes,
    dropouts: Dropouts | None = None,
    beacon: bytes | None = None,
    clock: CpuClock | None = None,
    directory: pki.Directory | None = None,
) -> tuple[np.ndarray, pd.DataFrame]:
    """Run the protocol on one shard: (Σ of the senders' vectors mod m, the server's transcript).

    vectors: (len(senders), K) integers in [0, m), the inputs of the clients that send a masked
    input (ids in [0, n_clients)), in the order of ``senders``; every other client takes part in
    the steps before and drops before step 2, and ``dropouts`` makes clients drop before any
    other step.  ``entropy``: a seeded Generator for a reproducible simulation, None for the OS
    (every secret); ``beacon``: public bytes that fix the Harary layout in place of the key set's root
    (a simulation that must replay its transcript; None: the deployment's rule, ``graph``).
    ``context`` (>= 16 bytes) binds every key to the round and shard and must be fresh per run; a
    ``directory`` of identities kept across runs (active) refuses a context used before.  ``clock``
    (optional) adds up the clients' and the server's CPU time.  Raises ``ProtocolError`` naming
    the client at fault (no output) when the shard cannot finish safely.
    """
    drop = dropouts or Dropouts()
    on = clock or _untimed
    vectors = np.asarray(vectors)
    senders = np.asarray(senders)
    if vectors.ndim != 2 or vectors.shape[0] != len(senders):
        raise ValueError(f"one vector per sender is needed: {vectors.shape} vectors for {len(senders)} senders")
    clients, server = on("client", shard, n_clients, vectors.shape[1], params, entropy, context, beacon, directory)
    keyed = [u for u in range(n_clients) if u not in drop.advertise_keys]
    for u in keyed:
        on("server", server.receive_keys, u, on("client", clients[u].advertise_keys))
    for u in keyed:
        if u not in drop.share_keys:
            keys = on("server", server.keys_for, u)
            on("server", server.receive_shares, u, on("client", clients[u].share_keys, keys))
    for u, x in zip(senders.tolist(), vectors, strict=True):
        u = server.check_id(u, "a masked input")
        inbox = on("server", server.inbox, u)
        on("server", server.receive_masked, u, *on("client", clients[u].masked_input, x, inbox))
    request = on("server", server.unmasking_request)
    alive = np.flatnonzero(request.alive).tolist()
    if params.active:
        for u in alive:
            if u not in drop.consistency:
                on("server", server.receive_signature, u, on("client", clients[u].consistency, request.alive))
    for u in alive:
        if u not in drop.consistency and u not in drop.unmasking:
            signatures = on("server", server.signatures_for, u) if params.active else None
            on("server", server.receive_unmasking, u, on("client", clients[u].unmasking, request, signatures))
    return on("server", server.finish), server.transcript.frame()
