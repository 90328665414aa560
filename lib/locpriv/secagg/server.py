"""The honest server of one secure-aggregation shard: routes, checks every message, unmasks, keeps a transcript.

It receives messages only (advertisements, sealed bundles to route, masked vectors,
signatures, unmasking shares) and raises ``ProtocolError`` naming the client at fault
for anything malformed, unknown, repeated or from the wrong sender, and before it asks
for a share when unmasking is unsafe (survivors' graph disconnected) or impossible
(an owner with fewer than t surviving holders).  ``Transcript`` records every message it
received, so tests assert the protocol's claims on what actually crossed the wire.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import crypto, pki, shamir
from .graph import Graph
from .protocol import (
    GCM_TAG_BYTES,
    SECRETS,
    SHARE_BYTES,
    SHARE_LIMBS,
    ProtocolError,
    ProtocolParams,
    UnmaskingRequest,
    advert_bytes,
    commitment,
    pair_seed,
    self_mask_seed,
)

TRANSCRIPT_COLUMNS = {
    "step": object,
    "sender": np.int64,
    "owner": np.int64,
    "kind": object,
    "items": np.int64,
    "bytes": np.int64,
}


class Transcript:
    """Every message the server received: one row per (sender, owner, kind)."""

    def __init__(self):
        self._rows: list[tuple] = []

    def add(self, step: str, sender: int, owner: int, kind: str, items: int, n_bytes: int) -> None:
        self._rows.append((step, sender, owner, kind, items, n_bytes))

    def add_many(self, step: str, sender: int, owners: list[int], kind: str, items: int, n_bytes: int) -> None:
        self._rows.extend((step, sender, owner, kind, items, n_bytes) for owner in owners)

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame.from_records(self._rows, columns=list(TRANSCRIPT_COLUMNS))
        return frame.astype(TRANSCRIPT_COLUMNS)


class Server:
    def __init__(self, graph: Graph, neighbours: np.ndarray, params: ProtocolParams, context: bytes, dim: int):
        self.graph, self.neighbours, self.params, self.context, self.dim = graph, neighbours, params, context, dim
        self.n, self.t = graph.n, params.t_for(graph.n)
        self.transcript = Transcript()
        self.adverts: dict[int, bytes] = {}  # U1
        self.bundles: dict[int, int] = {}  # U2: sender -> bundles sent
        self.mailbox: dict[int, dict[int, bytes]] = {}  # recipient -> sender -> sealed shares
        self.delivered: dict[int, set[int]] = {}  # recipient -> senders whose bundles it got
        self.total = np.zeros(dim, dtype=np.uint64)
        self.arrived: set[int] = set()  # U3
        self.signatures: dict[int, bytes] = {}  # U4 (active)
        self.answered: set[int] = set()  # U5
        self.shares: dict[str, dict[int, list[tuple[int, np.ndarray]]]] = {s: {} for s in SECRETS}
        self.keyset: pki.KeySet | None = None
        self.session = context  # the masks' HKDF context; active: bound to the committed key set
        self.request: UnmaskingRequest | None = None

    def check_id(self, u, what: str) -> int:
        if (type(u) is not int and not isinstance(u, np.integer)) or not 0 <= u < self.n:
            raise ProtocolError(f"{what} names unknown client id {u!r} (the shard has ids 0..{self.n - 1})")
        return int(u)

    # ---- step 0 -------------------------------------------------------------------------------------
    def receive_keys(self, u, advert: bytes) -> None:
        u = self.check_id(u, "an advertisement")
        if u in self.adverts:
            raise ProtocolError(f"client {u} advertised keys twice")
        if not isinstance(advert, bytes) or len(advert) != advert_bytes(self.params):
            raise ProtocolError(f"client {u} advertised {len(advert)} bytes, not {advert_bytes(self.params)}")
        self.adverts[u] = advert
        self.transcript.add("advertise_keys", u, u, "public_keys", 1, len(advert))

    def keys_for(self, u: int) -> tuple[dict[int, bytes], dict[int, list[bytes]] | None, bytes | None]:
        """u's neighbours' advertisements; active: with Merkle proofs, and u's own as committed."""
        adverts = {int(v): self.adverts[int(v)] for v in self.neighbours[u] if int(v) in self.adverts}
        if not self.params.active:
            return adverts, None, None
        if self.keyset is None:
            self.keyset = pki.KeySet([self.adverts.get(v) for v in range(self.n)])
            self.session = pki.session_id(self.context, self.keyset.root)
        return adverts, {v: self.keyset.proof(v) for v in [u, *adverts]}, self.adverts[u]

    # ---- step 1 -------------------------------------------------------------------------------------
    def receive_shares(self, u, bundles: dict[int, bytes]) -> None:
        u = self.check_id(u, "sealed shares")
        if u not in self.adverts:
            raise ProtocolError(f"client {u} sent shares without having advertised keys")
        if u in self.bundles:
            raise ProtocolError(f"client {u} sent its shares twice")
        allowed = {int(v) for v in self.neighbours[u]} & set(self.adverts)
        strangers = set(bundles) - allowed
        if strangers:
            raise ProtocolError(f"client {u} sealed shares for client {min(strangers)}, not a neighbour with keys")
        size = 2 * SHARE_BYTES + GCM_TAG_BYTES
        if any(not isinstance(c, bytes) or len(c) != size for c in bundles.values()):
            raise ProtocolError(f"client {u} sent a sealed bundle that is not {size} bytes")
        self.bundles[u] = len(bundles)
        for v, sealed in bundles.items():
            self.mailbox.setdefault(v, {})[u] = sealed
        self.transcript.add("share_keys", u, u, "sealed_shares", len(bundles), sum(map(len, bundles.values())))

    def inbox(self, v: int) -> dict[int, bytes]:
        """The bundles addressed to v, handed over with the request for its masked input."""
        got = self.mailbox.pop(v, {})
        self.delivered[v] = set(got)
        return got

    # ---- step 2 -------------------------------------------------------------------------------------
    def receive_masked(self, u, y) -> None:
        u = self.check_id(u, "a masked input")
        if u not in self.delivered or u not in self.bundles:
            raise ProtocolError(f"client {u} sent a masked input without having shared its keys")
        if u in self.arrived:
            raise ProtocolError(f"client {u} sent its masked input twice (a replay); refusing to add it again")
        y = np.asarray(y)
        if y.shape != (self.dim,) or not np.issubdtype(y.dtype, np.integer):
            raise ProtocolError(
                f"client {u} sent a masked vector of shape {y.shape} and type {y.dtype}, not {self.dim} integers"
            )
        if y.size and (int(y.min()) < 0 or int(y.max()) >= 1 << self.params.bits):
            raise ProtocolError(f"client {u} sent a masked vector with entries outside Z_m, m = 2^{self.params.bits}")
        self.total += y.astype(np.uint64)
        self.arrived.add(u)
        self.transcript.add("masked_input", u, u, "masked_vector", self.dim, self.dim * ((self.params.bits + 7) // 8))

    def _holders_alive(self, owner: int, alive: np.ndarray) -> int:
        return int(alive[owner]) + sum(
            1 for v in self.neighbours[owner] if alive[v] and owner in self.delivered.get(int(v), ())
        )

    def unmasking_request(self) -> UnmaskingRequest:
        """Survivors U3 and dropped U2 \\ U3 — after checking that unmasking is safe and possible."""
        alive = np.zeros(self.n, dtype=bool)
        alive[list(self.arrived)] = True
        dropped = np.zeros(self.n, dtype=bool)
        dropped[[u for u in self.bundles if u not in self.arrived]] = True
        if alive.sum() < self.t:
            raise ProtocolError(
                f"{int(alive.sum())} of {self.n} clients sent masked input, fewer than the "
                f"threshold t = {self.t}: the shard cannot be unmasked and yields no output"
            )
        parts = self.graph.components(alive)
        if parts > 1:
            raise ProtocolError(
                f"the survivors' graph has {parts} connected components: unmasking would reveal "
                "the sum of each; refusing (the shard yields no output)"
            )
        for owner in np.flatnonzero(alive | dropped):
            if self._holders_alive(int(owner), alive) < self.t:
                raise ProtocolError(
                    f"client {owner} has fewer than t = {self.t} surviving holders of its shares: "
                    "the shard yields no output"
                )
        self.request = UnmaskingRequest(alive, dropped)
        return self.request

    # ---- step 2b (active) ---------------------------------------------------------------------------
    def receive_signature(self, u, signature: bytes) -> None:
        u = self.check_id(u, "a consistency signature")
        if self.request is None or not self.request.alive[u]:
            raise ProtocolError(f"client {u} signed a survivor set it was not sent")
        if u in self.signatures:
            raise ProtocolError(f"client {u} sent its consistency signature twice")
        if not isinstance(signature, bytes) or len(signature) != crypto.SIGNATURE_BYTES:
            raise ProtocolError(f"client {u} sent a signature that is not {crypto.SIGNATURE_BYTES} bytes")
        self.signatures[u] = signature
        self.transcript.add("consistency", u, u, "signature", 1, len(signature))

    def signatures_for(self, v: int) -> dict[int, bytes]:
        """The signatures of the holders of v's owners (clients within two hops of v)."""
        if self.graph.complete:
            near = range(self.n)
        else:
            r = self.graph.degree // 2
            near = self.graph.position[(self.graph.where[v] + np.arange(-2 * r, 2 * r + 1)) % self.n].tolist()
        return {w: self.signatures[w] for w in near if w in self.signatures}

    # ---- step 3 -------------------------------------------------------------------------------------
    def receive_unmasking(self, v, response: dict[tuple[int, str], np.ndarray]) -> None:
        v = self.check_id(v, "unmasking shares")
        if self.request is None or not self.request.alive[v]:
            raise ProtocolError(f"client {v} sent unmasking shares without being asked")
        if v in self.answered:
            raise ProtocolError(f"client {v} sent unmasking shares twice (a replay)")
        held = self.delivered.get(v, set()) | {v}
        for (owner, kind), share in response.items():
            owner = self.check_id(owner, f"client {v}'s unmasking response")
            if owner not in held:
                raise ProtocolError(f"client {v} sent a share of client {owner}'s secret but is not its holder")
            expected = "self_seed" if self.request.alive[owner] else "mask_key" if self.request.dropped[owner] else None
            if kind != expected:
                raise ProtocolError(
                    f"client {v} sent a {kind!r} share of client {owner}, whose status allows {expected!r} only"
                )
            if not (isinstance(share, np.ndarray) and share.shape == (SHARE_LIMBS,) and share.dtype.kind in "iu"):
                raise ProtocolError(f"client {v} sent a malformed share of client {owner}'s {kind}")
        stacked = np.stack(list(response.values())) if response else np.zeros((0, SHARE_LIMBS), np.int64)
        if (stacked < 0).any() or (stacked >= shamir.PRIME).any():
            raise ProtocolError(f"client {v} sent a share outside GF(2^31 - 1)")
        self.answered.add(v)
        for (owner, kind), share in response.items():
            self.shares[kind].setdefault(int(owner), []).append((v, np.asarray(share, dtype=np.int64)))
        for kind in SECRETS:
            owners = [o for o, k in response if k == kind]
            if owners:
                self.transcript.add_many("unmasking", v, owners, kind, 1, SHARE_BYTES)

    def _rebuild(self, kind: str, owners: list[int]) -> np.ndarray:
        """Secrets of ``owners`` from all their shares; every share beyond t must lie on the polynomial."""
        held = [self.shares[kind].get(u, []) for u in owners]
        short = [u for u, h in zip(owners, held, strict=True) if len(h) < self.t]
        if short:
            raise ProtocolError(
                f"client {short[0]} (and {len(short) - 1} more) has fewer than t = {self.t} "
                f"answering holders of its {kind} shares: the shard yields no output"
            )
        out = np.empty((len(owners), crypto.KEY_BYTES), dtype=np.uint8)
        counts = np.array([len(h) for h in held])
        for count in np.unique(counts):  # owners with as many shares are rebuilt together
            rows = np.flatnonzero(counts == count)
            xs = np.array([[holder + 1 for holder, _ in held[i]] for i in rows])
            ys = np.array([[share for _, share in held[i]] for i in rows])
            try:
                out[rows] = shamir.reconstruct(xs, ys, self.t, crypto.KEY_BYTES, verify=True)
            except shamir.ShareError as exc:
                raise ProtocolError(f"inconsistent {kind} shares: {exc}") from None
        return out

    def _self_masks(self, owners: list[int]) -> np.ndarray:
        """Σ PRG(b_u) over the surviving ``owners``, each rebuilt b_u checked against its commitment."""
        out = np.zeros(self.dim, dtype=np.uint64)
        for u, seed in zip(owners, self._rebuild("self_seed", owners), strict=True):
            seed = seed.tobytes()
            if commitment(seed, self.context) != self.adverts[u][2 * crypto.KEY_BYTES : 3 * crypto.KEY_BYTES]:
                raise ProtocolError(
                    f"inconsistent self_seed shares: the seed rebuilt for client {u} does not match "
                    "its commitment (a holder sent a wrong share)"
                )
            out += crypto.expand(self_mask_seed(seed, self.session), self.dim, self.params.bits)
        return out

    def _dropped_masks(self, dropped: list[int]) -> np.ndarray:
        """Σ over dropped d of the masks the survivors that got d's shares added for it, sign(v, d) PRG(s_vd)."""
        out = np.zeros(self.dim, dtype=np.uint64)
        for d, raw in zip(dropped, self._rebuild("mask_key", dropped), strict=True):
            secret = crypto.private_key(raw.tobytes())
            if crypto.public_bytes(secret) != self.adverts[d][crypto.KEY_BYTES : 2 * crypto.KEY_BYTES]:
                raise ProtocolError(
                    f"inconsistent mask_key shares: the secret rebuilt for client {d} does not "
                    "match its advertised public key"
                )
            for v in self.neighbours[d]:
                v = int(v)
                if v in self.arrived and d in self.delivered.get(v, ()):  # v added sign(v, d) mask(v, d) to y_v
                    exchanged = crypto.exchange(secret, self.adverts[v][crypto.KEY_BYTES : 2 * crypto.KEY_BYTES])
                    mask = crypto.expand(pair_seed(exchanged, v, d, self.session), self.dim, self.params.bits)
                    out = out + mask if v < d else out - mask
        return out

    def finish(self) -> np.ndarray:
        """Σ x_u over the survivors U3, mod m (uint64 in [0, m))."""
        if self.request is None:
            raise ProtocolError("unmasking was never requested: the shard yields no output")
        alive = np.flatnonzero(self.request.alive).tolist()
        dropped = np.flatnonzero(self.request.dropped).tolist()
        total = self.total - self._self_masks(alive)
        if dropped:
            total = total - self._dropped_masks(dropped)
        return total & np.uint64((1 << self.params.bits) - 1)
