"""Pairwise-masking secure aggregation for an honest-but-curious server (Bonawitz et al. 2017, Bell et al. 2020).

One shard of n clients, client u holding x_u in Z_m^K (m = 2^bits).  Messages follow
Bonawitz et al.'s rounds (semi-honest variant, no signatures):

0. *AdvertiseKeys*: u sends two X25519 public keys, c_u (channel) and s_u (masking).
1. *ShareKeys*: u draws a self-mask seed b_u and Shamir-shares (t of its k neighbours,
   ``shamir``) both b_u and its masking secret s_u^SK; the share for neighbour v is
   sealed with AES-GCM under HKDF(X25519(c_u, c_v), u→v) and routed by the server,
   which cannot open it.
2. *MaskedInputCollection*: survivor u sends
   y_u = x_u + PRG(b_u) + Σ_{v∈N(u)} ±PRG(HKDF(X25519(s_u, s_v))) mod m,
   + when u < v, − when u > v, so the pairwise masks cancel in the sum over a pair.
   Clients that drop out before this step never send y.
3. *Unmasking*: each survivor v opens the sealed shares it holds and answers, for each
   neighbour u, the share of b_u if u's y arrived, else the share of s_u^SK — never
   both for one client.  With >= t shares per client the server rebuilds the
   survivors' b_u (removing their self-masks) and the dropped clients' s_u^SK (removing
   the masks their surviving neighbours added for them) and outputs Σ_{u survives} x_u mod m.

Privacy against the server (honest-but-curious, no collusion with clients): for a
survivor it sees y_u, t or more shares of b_u and fewer than t (none) of s_u^SK, so
the pairwise masks with u's surviving neighbours stay pseudorandom and y_u is uniform
given everything but the sum (Bonawitz et al. Thm 6.2; Bell et al. Thm 3.6 for the
k-regular graph).  A coalition of the server and t − 1 or more of u's neighbours is
out of scope (that is what t protects up to).  ``Transcript`` records every message
the server received, so tests assert this on what actually crossed the wire.

Integrity (threat model stated, not a malicious-security protocol): a reconstructed
s_u^SK is checked against the public key u advertised, and when a client has more
than t responding holders the (t+1)-th share is checked against the polynomial of the
first t; either mismatch is a ``ProtocolError``.  A wrong b_u share with exactly t
responding holders is not detectable and corrupts the output (Bonawitz et al.'s
malicious variant adds signatures and consistency checks; not built here).
Dropping below t surviving holders for any client is a ``ProtocolError`` and nothing
is output.

Simulation shortcuts that change no output: a pair's X25519 secret is computed once
for both ends (each client would compute the same value), and clients are arrays,
not processes.  ``client_bytes`` gives what one surviving client sends (exactly the
transcript's bytes, tested); compute is measured by perf/bench_secagg.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import crypto, graph, shamir

SECRETS = ("mask_key", "self_seed")


class ProtocolError(RuntimeError):
    """The shard cannot be unmasked safely; nothing is output."""


@dataclass(frozen=True)
class ProtocolParams:
    """bits: m = 2^bits; graph "complete" or "harary" (random k-regular, Bell et al.);
    degree None = ``graph.auto_degree`` for the planned dropout; threshold t = ⌊fraction · (k + 1)⌋ + 1
    of a client's k + 1 holders (its neighbours and itself)."""

    bits: int = 32
    graph: str = "harary"
    degree: int | None = None
    threshold: float = 0.5
    planned_dropout: float = 0.0

    def __post_init__(self):
        if not (isinstance(self.bits, (int, np.integer)) and 2 <= self.bits <= 62):
            raise ValueError(f"bits must be an integer in [2, 62], got {self.bits!r}")
        if self.graph not in graph.GRAPHS:
            raise ValueError(f"graph must be one of {graph.GRAPHS}, got {self.graph!r}")
        if not 0 < self.threshold < 1:
            raise ValueError(f"threshold must be a fraction in (0, 1), got {self.threshold}")
        if not 0 <= self.planned_dropout < 1:
            raise ValueError(f"planned_dropout must be in [0, 1), got {self.planned_dropout}")

    def degree_for(self, n: int) -> int:
        if self.graph == "complete":
            return n - 1
        if self.degree is not None:
            return min(self.degree, n - 1)
        return graph.auto_degree(n, self.planned_dropout, self.threshold)


TRANSCRIPT_COLUMNS = {"step": object, "sender": np.int64, "owner": np.int64, "kind": object, "items": np.int64,
                      "bytes": np.int64}


SHARE_BYTES = 4 * shamir.n_limbs(crypto.KEY_BYTES)        # one Shamir share of a 32-byte secret (int32 limbs)
GCM_TAG_BYTES = 16


def client_bytes(n: int, dim: int, params: ProtocolParams) -> dict[str, int]:
    """Bytes one surviving client of a shard of n sends, by step, for vectors of ``dim`` entries:
    two public keys; k sealed bundles (shares of both secrets + tag); the masked vector at
    ⌈bits/8⌉ bytes per entry; one share for each of its k + 1 holders' owners (its neighbours and
    itself).  Bonawitz et al.: O(n + K) on the complete graph (k = n − 1); Bell et al.: O(log n + K)."""
    k = params.degree_for(n)
    return {"advertise_keys": 2 * crypto.KEY_BYTES, "share_keys": k * (2 * SHARE_BYTES + GCM_TAG_BYTES),
            "masked_input": dim * ((params.bits + 7) // 8), "unmasking": (k + 1) * SHARE_BYTES}


class Transcript:
    """Every message the server received: one row per (sender, owner, kind)."""

    def __init__(self):
        self._rows: dict[str, list] = {k: [] for k in TRANSCRIPT_COLUMNS}

    def add(self, step: str, sender, owner, kind: str, items, n_bytes) -> None:
        sender = np.atleast_1d(np.asarray(sender, dtype=np.int64))
        for key, value in (("step", step), ("sender", sender), ("owner", owner), ("kind", kind),
                           ("items", items), ("bytes", n_bytes)):
            self._rows[key].append(np.broadcast_to(np.asarray(value), sender.shape))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({k: (np.concatenate(v) if v else np.empty(0)).astype(TRANSCRIPT_COLUMNS[k])
                             for k, v in self._rows.items()})


def pair_seed(secret, peer_public: bytes, u: int, v: int, context: bytes) -> bytes:
    """PRG seed of the pairwise mask of clients u and v (symmetric in u, v)."""
    lo, hi = min(u, v), max(u, v)
    return crypto.derive(crypto.exchange(secret, peer_public),
                         context + b"|mask|" + lo.to_bytes(4, "little") + hi.to_bytes(4, "little"))


def self_mask_seed(b: bytes, context: bytes) -> bytes:
    return crypto.derive(b, context + b"|self")


class Clients:
    """The n clients of one shard (their secrets live here and nowhere else)."""

    def __init__(self, n: int, params: ProtocolParams, entropy, context: bytes):
        self.n, self.params, self.context = n, params, context
        self._entropy = entropy
        # the graph is public (Bell et al.: the server may pick it), so a seeded permutation is fine
        layout = entropy if entropy is not None else np.random.default_rng(crypto.random_int(None))
        self.neighbours = graph.neighbours(n, params.graph, params.degree_for(n), layout)
        # a client holds a share of its own secrets too (Bonawitz et al. share to all of U1, self included)
        self.holders = np.concatenate([np.arange(n)[:, None], self.neighbours], axis=1)
        self.threshold = graph.threshold(self.holders.shape[1], params.threshold)
        # key objects built once per client (building one from bytes costs as much as an exchange)
        self._c = [crypto.private_key(r.tobytes()) for r in crypto.random_bytes(entropy, n)]
        self._s = [crypto.private_key(r.tobytes()) for r in crypto.random_bytes(entropy, n)]
        self._s_raw = [key.private_bytes_raw() for key in self._s]   # what is Shamir-shared
        self._b = crypto.random_bytes(entropy, n)
        self._inbox: dict[tuple[int, int], bytes] = {}
        self._mask_seeds: dict[tuple[int, int], bytes] = {}

    # step 0
    def public_keys(self) -> tuple[list[bytes], list[bytes]]:
        return [crypto.public_bytes(c) for c in self._c], [crypto.public_bytes(s) for s in self._s]

    def _header(self, sender: int, recipient: int) -> bytes:
        return self.context + b"|share|" + sender.to_bytes(4, "little") + recipient.to_bytes(4, "little")

    def _channel_keys(self, c_public: list[bytes]) -> dict[tuple[int, int], bytes]:
        keys = {}
        for u in range(self.n):
            for v in self.neighbours[u]:
                v = int(v)
                if u < v:  # one exchange per pair (both ends would compute the same secret)
                    shared = crypto.exchange(self._c[u], c_public[v])
                    keys[u, v] = crypto.derive(shared, self._header(u, v))
                    keys[v, u] = crypto.derive(shared, self._header(v, u))
        return keys

    # step 1
    def sealed_shares(self, c_public: list[bytes]) -> dict[int, dict[int, bytes]]:
        """u -> {v: AES-GCM(share of s_u^SK || share of b_u for v)}."""
        self._keys = self._channel_keys(c_public)
        xs = self.holders + 1
        parts = [shamir.share(secret, xs, self.threshold, lambda shape: crypto.random_field(
                     self._entropy, shape, shamir.PRIME)).astype("<i4")
                 for secret in (np.frombuffer(b"".join(self._s_raw), np.uint8).reshape(self.n, -1), self._b)]
        plain = np.concatenate(parts, axis=2)                        # (n, k + 1, 2 L) int32
        self._own = plain[:, 0].astype(np.int64)                      # kept, never sent
        out = {}
        for u in range(self.n):
            out[u] = {int(v): crypto.seal(self._keys[u, int(v)], plain[u, j + 1].tobytes(), self._header(u, int(v)))
                      for j, v in enumerate(self.neighbours[u])}
        return out

    def deliver(self, recipient: int, sender: int, ciphertext: bytes) -> None:
        self._inbox[recipient, sender] = ciphertext

    # step 2
    def masked_input(self, u: int, x: np.ndarray, s_public: list[bytes]) -> np.ndarray:
        bits = self.params.bits
        y = np.asarray(x, dtype=np.uint64) + crypto.expand(self_mask_seed(self._b[u].tobytes(), self.context),
                                                           len(x), bits)
        for v in self.neighbours[u]:
            v = int(v)
            if (min(u, v), max(u, v)) not in self._mask_seeds:  # one exchange per pair, both ends share it
                self._mask_seeds[min(u, v), max(u, v)] = pair_seed(self._s[u], s_public[v], u, v,
                                                                   self.context)
            mask = crypto.expand(self._mask_seeds[min(u, v), max(u, v)], len(x), bits)
            y = y + mask if u < v else y - mask       # uint64 wraps mod 2^64, a multiple of m
        return y & np.uint64((1 << bits) - 1)

    # step 3
    def unmask_response(self, v: int, survivors: set[int]) -> dict[tuple[int, str], np.ndarray]:
        """Survivor v's shares for each neighbour: self_seed if it survived, mask_key if it dropped."""
        out = {}
        for u in self.holders[v]:
            u = int(u)
            if u == v:
                plain = self._own[v]
            else:
                sealed = crypto.open_sealed(self._keys[u, v], self._inbox[v, u], self._header(u, v))
                plain = np.frombuffer(sealed, dtype="<i4").astype(np.int64)
            half = len(plain) // 2
            out[u, "self_seed"] = plain[half:] if u in survivors else None
            out[u, "mask_key"] = None if u in survivors else plain[:half]
        return {key: share for key, share in out.items() if share is not None}


class Server:
    """Receives messages only: public keys, sealed shares to route, masked vectors, unmasking shares."""

    def __init__(self, n: int, neighbours: np.ndarray, threshold: int, params: ProtocolParams, context: bytes):
        self.n, self.neighbours, self.t, self.params, self.context = n, neighbours, threshold, params, context
        self.transcript = Transcript()
        self.total: np.ndarray | None = None
        self.arrived: list[int] = []
        self.shares: dict[str, dict[int, list[tuple[int, np.ndarray]]]] = {s: {} for s in SECRETS}

    def receive_public_keys(self, c_public: list[bytes], s_public: list[bytes]) -> None:
        self.c_public, self.s_public = c_public, s_public
        self.transcript.add("advertise_keys", np.arange(self.n), -1, "public_keys", 2, 2 * crypto.KEY_BYTES)

    def route(self, sealed: dict[int, dict[int, bytes]], deliver) -> None:
        for u, bundle in sealed.items():
            self.transcript.add("share_keys", u, u, "sealed_shares", len(bundle),
                                sum(len(c) for c in bundle.values()))
            for v, ciphertext in bundle.items():
                deliver(v, u, ciphertext)

    def receive_masked(self, u: int, y: np.ndarray) -> None:
        self.total = y.copy() if self.total is None else self.total + y
        self.arrived.append(u)
        self.transcript.add("masked_input", u, u, "masked_vector", len(y), len(y) * ((self.params.bits + 7) // 8))

    def unmasking_request(self) -> set[int]:
        survivors = set(self.arrived)
        if len(survivors) < self.t:
            raise ProtocolError(f"{len(survivors)} of {self.n} clients sent masked input, fewer than the "
                                f"threshold t = {self.t}: the shard cannot be unmasked and yields no output")
        return survivors

    def receive_shares(self, holder: int, response: dict[tuple[int, str], np.ndarray]) -> None:
        for (owner, kind), share in response.items():
            self.shares[kind].setdefault(owner, []).append((holder, share))
        owners = np.array([owner for owner, _ in response], dtype=np.int64)
        kinds = [kind for _, kind in response]
        for kind in SECRETS:
            pick = np.array([k == kind for k in kinds], dtype=bool)
            if pick.any():
                self.transcript.add("unmasking", np.full(int(pick.sum()), holder), owners[pick], kind, 1,
                                    SHARE_BYTES)

    def _rebuild(self, kind: str, owners: list[int]) -> np.ndarray:
        """Secrets of ``owners`` from their shares; checks the (t+1)-th share where there is one."""
        held = [self.shares[kind].get(u, []) for u in owners]
        short = [u for u, h in zip(owners, held) if len(h) < self.t]
        if short:
            raise ProtocolError(f"client {short[0]} (and {len(short) - 1} more) has fewer than t = {self.t} "
                                f"surviving holders of its {kind} shares: the shard yields no output")
        out = np.empty((len(owners), crypto.KEY_BYTES), dtype=np.uint8)
        for use in (self.t + 1, self.t):                # owners with a spare share are cross-checked
            rows = [i for i, h in enumerate(held) if (len(h) >= use if use > self.t else len(h) == use)]
            if not rows:
                continue
            xs = np.array([[holder + 1 for holder, _ in held[i][:use]] for i in rows])
            ys = np.array([[share for _, share in held[i][:use]] for i in rows])
            try:
                out[rows] = shamir.reconstruct(xs, ys, self.t, crypto.KEY_BYTES, verify=use > self.t)
            except shamir.ShareError as exc:
                raise ProtocolError(f"inconsistent {kind} shares: {exc}") from None
        return out

    def self_masks(self, owners: list[int]) -> np.ndarray:
        """Σ PRG(b_u) over surviving ``owners``, their self-seeds rebuilt from the shares (mod 2^64)."""
        size, bits = len(self.total), self.params.bits
        out = np.zeros(size, dtype=np.uint64)
        for seed in self._rebuild("self_seed", owners):
            out += crypto.expand(self_mask_seed(seed.tobytes(), self.context), size, bits)
        return out

    def dropped_masks(self, dropped: list[int], survivors: set[int]) -> np.ndarray:
        """Σ over ``dropped`` d of the masks its surviving neighbours v added for it, sign(v, d) PRG(s_vd)."""
        size, bits = len(self.total), self.params.bits
        out = np.zeros(size, dtype=np.uint64)
        for d, raw in zip(dropped, self._rebuild("mask_key", dropped)):
            secret = crypto.private_key(raw.tobytes())
            if crypto.public_bytes(secret) != self.s_public[d]:
                raise ProtocolError(f"inconsistent mask_key shares: the secret rebuilt for client {d} "
                                    "does not match its advertised public key")
            for v in self.neighbours[d]:
                v = int(v)
                if v in survivors:   # v added sign(v, d) * mask(v, d) to y_v
                    mask = crypto.expand(pair_seed(secret, self.s_public[v], v, d, self.context), size, bits)
                    out = out + mask if v < d else out - mask
        return out

    def finish(self) -> np.ndarray:
        """Σ x_u over the survivors, mod m (uint64 in [0, m))."""
        if self.total is None:
            raise ProtocolError("no client sent masked input: the shard yields no output")
        survivors = set(self.arrived)
        dropped = [u for u in range(self.n) if u not in survivors]
        total = self.total - self.self_masks(sorted(survivors))
        if dropped:
            total = total - self.dropped_masks(dropped, survivors)
        return total & np.uint64((1 << self.params.bits) - 1)


def aggregate(vectors: np.ndarray, survivors: np.ndarray, n_clients: int, params: ProtocolParams,
              entropy: np.random.Generator | None, context: bytes = b"") -> tuple[np.ndarray, pd.DataFrame]:
    """Run the protocol on one shard: (Σ survivors' vectors mod m, the server's transcript).

    vectors: (len(survivors), K) integers in [0, m), the survivors' inputs in the
    order of ``survivors`` (client ids in [0, n_clients)); the other clients take part
    in steps 0–1 and drop out before step 2.  ``entropy``: a seeded Generator for
    reproducible simulation, None for OS randomness.  ``context`` binds keys to the
    round and shard.  Raises ``ProtocolError`` (no output) when it cannot finish.
    """
    if n_clients < 2:
        raise ProtocolError(f"a shard of {n_clients} client cannot hide its input; choose users per round and "
                            "shard size so that every shard has at least 2 clients")
    survivors = np.asarray(survivors, dtype=np.int64)
    vectors = np.asarray(vectors)
    if vectors.shape[0] != len(survivors) or len(np.unique(survivors)) != len(survivors):
        raise ValueError("one vector per distinct surviving client is required")
    if (survivors < 0).any() or (survivors >= n_clients).any():
        raise ValueError(f"survivor ids must be in [0, {n_clients})")
    if vectors.size and ((vectors < 0).any() or (vectors >= (1 << params.bits)).any()):
        raise ValueError(f"inputs must be reduced to [0, m = 2^{params.bits})")
    clients = Clients(n_clients, params, entropy, context)
    server = Server(n_clients, clients.neighbours, clients.threshold, params, context)
    c_public, s_public = clients.public_keys()
    server.receive_public_keys(c_public, s_public)
    server.route(clients.sealed_shares(c_public), clients.deliver)
    for u, x in zip(survivors, vectors):
        server.receive_masked(int(u), clients.masked_input(int(u), x, s_public))
    alive = server.unmasking_request()
    for v in sorted(alive):
        server.receive_shares(v, clients.unmask_response(v, alive))
    return server.finish(), server.transcript.frame()
