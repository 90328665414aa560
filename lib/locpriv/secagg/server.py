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

from . import crypto, graph, pki, shamir
from .graph import Graph
from .protocol import (
    GCM_TAG_BYTES,
    SECRETS,
    SHARE_BYTES,
    SHARE_LIMBS,
    KeysMessage,
    ProtocolError,
    ProtocolParams,
    UnmaskingRequest,
    advert_bytes,
    check_context,
    commitment,
    masked_with_bytes,
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
    """The honest server of one shard of n slots.  The public graph exists once the key set is committed
    (``commit_keys``, at the first ``keys_for``): its layout comes from the key set's Merkle root, or from
    ``beacon`` in a simulation that replays a layout (``graph`` module doc)."""

    def __init__(self, n: int, params: ProtocolParams, context: bytes, dim: int, beacon: bytes | None = None):
        self.n, self.params, self.context, self.dim, self.beacon = n, params, check_context(context), dim, beacon
        self.t = params.t_for(n)
        self.graph: Graph | None = None
        self.neighbours: np.ndarray | None = None
        self.transcript = Transcript()
        self.adverts: dict[int, bytes] = {}  # U1
        self.bundles: dict[int, int] = {}  # U2: sender -> bundles sent
        self.mailbox: dict[int, dict[int, bytes]] = {}  # recipient -> sender -> sealed shares
        self.delivered: dict[int, set[int]] = {}  # recipient -> senders whose bundles it got
        self.masked: dict[
            int, set[int]
        ] = {}  # sender of y -> the neighbours it masked with (it accepted their bundles)
        self.inputs: dict[int, np.ndarray] = {}  # U3 before the request: summed for the survivors only
        self.signatures: dict[int, bytes] = {}  # U4 (active)
        self.answered: set[int] = set()  # U5
        self.shares: dict[str, dict[int, list[tuple[int, np.ndarray]]]] = {s: {} for s in SECRETS}
        self.keyset: pki.KeySet | None = None
        self.session = self.context  # the masks' HKDF context; active: bound to the committed key set
        self.request: UnmaskingRequest | None = None
        self.total: np.ndarray | None = None

    @property
    def arrived(self) -> set[int]:
        return set(self.inputs)

    def check_id(self, u, what: str) -> int:
        if (type(u) is not int and not isinstance(u, np.integer)) or not 0 <= u < self.n:
            raise ProtocolError(f"{what} names unknown client id {u!r} (the shard has ids 0..{self.n - 1})")
        return int(u)

    # ---- step 0 -------------------------------------------------------------------------------------
    def receive_keys(self, u, advert: bytes) -> None:
        u = self.check_id(u, "an advertisement")
        if u in self.adverts:
            raise ProtocolError(f"client {u} advertised keys twice")
        if self.keyset is not None:
            raise ProtocolError(f"client {u} advertised keys after the key set was committed; refused")
        if not isinstance(advert, bytes) or len(advert) != advert_bytes(self.params):
            raise ProtocolError(f"client {u} advertised {len(advert)} bytes, not {advert_bytes(self.params)}")
        self.adverts[u] = advert
        self.transcript.add("advertise_keys", u, u, "public_keys", 1, len(advert))

    def commit_keys(self) -> None:
        """Close step 0: the Merkle root of the key set, the session id (active) and the public graph."""
        if self.keyset is not None:
            return
        self.keyset = pki.KeySet([self.adverts.get(v) for v in range(self.n)])
        if self.params.active:
            self.session = pki.session_id(self.context, self.keyset.root)
        public = self.beacon if self.beacon is not None else self.keyset.root
        self.graph = graph.for_round(
            self.n, self.params.graph, self.params.degree_for(self.n), graph.layout_seed(self.context, public)
        )
        self.neighbours = self.graph.neighbour_table()

    def keys_for(self, u: int) -> KeysMessage:
        """u's neighbours' advertisements and the key set's root; active: with Merkle proofs, u's own as committed."""
        self.commit_keys()
        adverts = {int(v): self.adverts[int(v)] for v in self.neighbours[u] if int(v) in self.adverts}
        if not self.params.active:
            return KeysMessage(adverts, self.keyset.root)
        proofs = {v: self.keyset.proof(v) for v in [u, *adverts]}
        return KeysMessage(adverts, self.keyset.root, proofs, self.adverts[u])

    # ---- step 1 -------------------------------------------------------------------------------------
    def receive_shares(self, u, bundles: dict[int, bytes]) -> None:
        u = self.check_id(u, "sealed shares")
        if u not in self.adverts or self.graph is None:
            raise ProtocolError(f"client {u} sent shares without having advertised keys")
        if u in self.bundles:
            raise ProtocolError(f"client {u} sent its shares twice")
        if self.delivered:
            raise ProtocolError(f"client {u} sent its shares after masked inputs were requested; refused")
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
        """The bundles addressed to v, handed over with the request for its masked input (step 1 is closed)."""
        got = self.mailbox.pop(v, {})
        self.delivered[v] = set(got)
        return got

    # ---- step 2 -------------------------------------------------------------------------------------
    def receive_masked(self, u, y, masked_with: bytes) -> None:
        """y_u and the bitmap over u's neighbours of those it masked with (whose bundles it accepted)."""
        u = self.check_id(u, "a masked input")
        if self.request is not None:
            raise ProtocolError(
                f"client {u} sent a masked input after the unmasking request (late, or under a dropped "
                "client's id); refused, the request's survivor set stands"
            )
        if u not in self.delivered or u not in self.bundles:
            raise ProtocolError(f"client {u} sent a masked input without having shared its keys")
        if u in self.inputs:
            raise ProtocolError(f"client {u} sent its masked input twice (a replay); refusing to add it again")
        y = np.asarray(y)
        if y.shape != (self.dim,) or not np.issubdtype(y.dtype, np.integer):
            raise ProtocolError(
                f"client {u} sent a masked vector of shape {y.shape} and type {y.dtype}, not {self.dim} integers"
            )
        if y.size and (int(y.min()) < 0 or int(y.max()) >= 1 << self.params.bits):
            raise ProtocolError(f"client {u} sent a masked vector with entries outside Z_m, m = 2^{self.params.bits}")
        row = self.neighbours[u]
        if not isinstance(masked_with, bytes) or len(masked_with) != masked_with_bytes(len(row)):
            raise ProtocolError(f"client {u} sent a masking bitmap that is not {masked_with_bytes(len(row))} bytes")
        masked = {int(v) for v in row[np.unpackbits(np.frombuffer(masked_with, np.uint8))[: len(row)].astype(bool)]}
        if masked - self.delivered[u]:
            raise ProtocolError(
                f"client {u} says it masked with client {min(masked - self.delivered[u])}, whose bundle it never got"
            )
        self.inputs[u] = y.astype(np.uint64)
        self.masked[u] = masked
        n_bytes = self.dim * ((self.params.bits + 7) // 8) + len(masked_with)
        self.transcript.add("masked_input", u, u, "masked_vector", self.dim, n_bytes)

    def _holders_alive(self, owner: int, alive: np.ndarray) -> int:
        """Surviving holders of ``owner``'s shares: itself if alive, and the survivors that accepted its bundle."""
        return int(alive[owner]) + sum(1 for v in self.neighbours[owner] if alive[v] and owner in self.masked[int(v)])

    def unmasking_request(self) -> UnmaskingRequest:
        """Survivors U3 and dropped U2 \\ U3 — after checking that unmasking is safe and possible.

        A client whose bundle a neighbour rejected (it did not authenticate) is dropped, not the shard:
        its masked input is left out and its masks are removed like any dropped client's."""
        if self.request is not None:
            raise ProtocolError("unmasking was already requested; the server asks once")
        rejected = {v for u in self.inputs for v in self.delivered[u] - self.masked[u]}
        alive = np.zeros(self.n, dtype=bool)
        alive[[u for u in self.inputs if u not in rejected]] = True
        dropped = np.zeros(self.n, dtype=bool)
        dropped[[u for u in self.bundles if not alive[u]]] = True
        least = self.params.min_survivors(self.n)
        if alive.sum() < least:
            raise ProtocolError(
                f"{int(alive.sum())} of {self.n} clients sent masked input, fewer than the "
                f"threshold ⌊threshold n⌋ + 1 = {least}: the shard cannot be unmasked and yields no output"
            )
        for u in np.flatnonzero(alive):
            unmasked = [int(v) for v in self.neighbours[u] if alive[v] and int(v) not in self.masked[int(u)]]
            if unmasked:
                raise ProtocolError(
                    f"clients {int(u)} and {unmasked[0]} both survive but did not mask with each other: "
                    "the survivors' graph over masked edges is not the public one; refusing"
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
        self.total = np.zeros(self.dim, dtype=np.uint64)
        for u in np.flatnonzero(alive):
            self.total += self.inputs[int(u)]
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
        held = self.masked.get(v, set()) | {v}
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
                if self.request.alive[v] and d in self.masked[v]:  # v added sign(v, d) mask(v, d) to y_v
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
