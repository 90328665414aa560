"""One client of a secure-aggregation shard as a state machine (``protocol`` describes the steps).

A ``Client`` holds its own secrets only (channel and masking keys, self-mask seed, its
identity key in the active variant) plus what it received; the graph, the threshold and
the PKI directory are public.  Each method is one step, answered at most once and in
order, and refuses (``ProtocolError`` naming this client) a request that would let the
server learn more than the protocol's output: a second unmasking request, a survivor and
a dropped set that overlap, fewer than t survivors, a survivors' graph that is not
connected, a request that says this client dropped although it is answering, and in the
active variant unsigned or substituted keys, a key set whose proofs disagree, or a survivor
set that differs from the one it signed or that too few of an owner's holders signed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from cryptography.exceptions import InvalidTag

from . import crypto, graph, pki, shamir
from .graph import Graph
from .protocol import (
    SHARE_LIMBS,
    KeysMessage,
    ProtocolError,
    ProtocolParams,
    UnmaskingRequest,
    advert_bytes,
    check_context,
    commitment,
    consistency_message,
    keys_message,
    pair_seed,
    self_mask_seed,
    share_header,
)

STEPS = ("advertise_keys", "share_keys", "masked_input", "consistency", "unmasking")


class Client:
    """Client ``cid`` of a shard of n slots.  Its neighbours are known once the key set is committed
    (step 1): the layout comes from the key set's Merkle root (active: the root it verified) or from
    the simulation's public ``beacon`` (``graph`` module doc).  Active: ``identity`` (``pki.Identity``)
    refuses a context it has already signed in (a replayed round)."""

    def __init__(
        self,
        cid: int,
        n: int,
        params: ProtocolParams,
        context: bytes,
        entropy,
        identity: pki.Identity | None = None,
        directory: list[bytes] | None = None,
        beacon: bytes | None = None,
    ):
        self.id, self.n, self.params, self.context, self.beacon = cid, n, params, check_context(context), beacon
        self.t = params.t_for(n)
        self.graph: Graph | None = None
        self.neighbours = np.zeros(0, dtype=np.int64)
        self._entropy = entropy
        self._identity, self._directory = identity, directory
        if params.active and (identity is None or directory is None):
            raise ValueError("the active variant needs each client's identity key and the PKI directory")
        if identity is not None and not identity.begin(context):
            raise self._error("asked to join a session context it has already used (a replayed round); refusing")
        self._done: set[str] = set()
        self._c, self._s = (crypto.private_key(r.tobytes()) for r in crypto.random_bytes(entropy, 2))
        self._b = crypto.random_bytes(entropy, 1)[0].tobytes()
        self._session = context  # honest-but-curious: the context; active: bound to the key set
        self._peers: dict[int, tuple[bytes, bytes]] = {}  # v -> (c_v, s_v) of neighbours with keys
        self._channel: dict[int, bytes] = {}  # v -> X25519(c_u, c_v), computed once
        self._held: dict[int, np.ndarray] = {}  # owner -> its (2, L) shares this client holds
        self._masked_with: set[int] = set()  # neighbours whose bundles it accepted, so masked with
        self._signed: np.ndarray | None = None

    def _place(self, public: bytes) -> None:
        """This client's graph and neighbours from the layout's public randomness."""
        self._layout = public
        self.graph = graph.for_round(
            self.n, self.params.graph, self.params.degree_for(self.n), graph.layout_seed(self.context, public)
        )
        self.neighbours = self.graph.neighbours(self.id)

    # ---- persistence (the service's key store, ``store``) ---------------------------------------------------
    def export_state(self) -> dict:
        """Everything this client knows of the round, its secrets included, as JSON-able values (hex bytes):
        what the client's key store keeps so a restarted client answers the steps it has not answered yet."""
        return {
            "id": self.id,
            "n": self.n,
            "params": dataclasses.asdict(self.params),
            "context": self.context.hex(),
            "beacon": None if self.beacon is None else self.beacon.hex(),
            "done": sorted(self._done),
            "c": self._c.private_bytes_raw().hex(),
            "s": self._s.private_bytes_raw().hex(),
            "b": self._b.hex(),
            "session": self._session.hex(),
            "layout": getattr(self, "_layout", b"").hex(),
            "advert": getattr(self, "_advert", b"").hex(),
            "peers": {str(v): (c + s_).hex() for v, (c, s_) in self._peers.items()},
            "channel": {str(v): k.hex() for v, k in self._channel.items()},
            "held": {str(o): sh.tolist() for o, sh in self._held.items()},
            "masked_with": sorted(self._masked_with),
            "signed": None if self._signed is None else np.flatnonzero(self._signed).tolist(),
        }

    @classmethod
    def from_state(cls, state: dict, identity=None, directory=None) -> Client:
        """The client ``export_state`` saved (its identity does not re-register the context)."""
        self = cls.__new__(cls)
        self.id, self.n = state["id"], state["n"]
        self.params = ProtocolParams(**state["params"])
        self.context = bytes.fromhex(state["context"])
        self.beacon = None if state["beacon"] is None else bytes.fromhex(state["beacon"])
        self.t = self.params.t_for(self.n)
        self.graph, self.neighbours = None, np.zeros(0, dtype=np.int64)
        self._entropy, self._identity, self._directory = None, identity, directory
        self._done = set(state["done"])
        self._c, self._s = crypto.private_key(bytes.fromhex(state["c"])), crypto.private_key(bytes.fromhex(state["s"]))
        self._b, self._session = bytes.fromhex(state["b"]), bytes.fromhex(state["session"])
        if state["layout"]:
            self._place(bytes.fromhex(state["layout"]))
        if state["advert"]:
            self._advert = bytes.fromhex(state["advert"])
        k = crypto.KEY_BYTES
        self._peers = {int(v): (bytes.fromhex(h)[:k], bytes.fromhex(h)[k:]) for v, h in state["peers"].items()}
        self._channel = {int(v): bytes.fromhex(h) for v, h in state["channel"].items()}
        self._held = {int(o): np.array(sh, dtype=np.int64) for o, sh in state["held"].items()}
        self._masked_with = set(state["masked_with"])
        self._signed = None
        if state["signed"] is not None:
            self._signed = np.zeros(self.n, dtype=bool)
            self._signed[state["signed"]] = True
        return self

    # ---- bookkeeping --------------------------------------------------------------------------------
    def _error(self, text: str) -> ProtocolError:
        return ProtocolError(f"client {self.id}: {text}")

    def _step(self, step: str) -> None:
        """Each step once, in order (the consistency step only in the active variant)."""
        if step in self._done:
            raise self._error(f"asked for step {step!r} a second time; it answers each step once")
        needed = [s for s in STEPS[: STEPS.index(step)] if s != "consistency" or self.params.active]
        missing = [s for s in needed if s not in self._done]
        if missing:
            raise self._error(f"asked for step {step!r} before step {missing[0]!r}")
        if step == "consistency" and not self.params.active:
            raise self._error("the honest-but-curious variant has no consistency step")
        self._done.add(step)

    # ---- step 0 -------------------------------------------------------------------------------------
    def advertise_keys(self) -> bytes:
        """c_u || s_u || commitment to b_u (|| Ed25519 signature over the session context, active)."""
        self._step("advertise_keys")
        public = crypto.public_bytes(self._c) + crypto.public_bytes(self._s) + commitment(self._b, self.context)
        if self.params.active:
            public += crypto.sign(self._identity.secret, keys_message(self.context, self.id, public))
        self._advert = public
        return public

    # ---- step 1 -------------------------------------------------------------------------------------
    def _check_keys(
        self, adverts: dict[int, bytes], proofs: dict[int, list[bytes]] | None, own: bytes, root: bytes
    ) -> None:
        """Active: every advertisement signed by its owner's identity key, every proof (own included)
        leading to one Merkle root, which fixes the session id."""
        if proofs is None:
            raise self._error("the active variant needs a Merkle proof with every advertisement")
        if own != self._advert:
            raise self._error("the key set the server committed to holds other keys for this client")
        roots = set()
        for v, advert in {**adverts, self.id: own}.items():
            body, signature = advert[: -crypto.SIGNATURE_BYTES], advert[-crypto.SIGNATURE_BYTES :]
            if not crypto.verify(self._directory[v], signature, keys_message(self.context, v, body)):
                raise self._error(f"the keys of client {v} are not signed by its identity key (substituted?)")
            if v not in proofs:
                raise self._error(f"no Merkle proof for the keys of client {v}")
            roots.add(pki.root_from(v, advert, proofs[v], self.n))
        if roots != {root}:
            raise self._error("the Merkle proofs of its neighbours' keys lead to different key sets")
        self._session = pki.session_id(self.context, root)

    def share_keys(self, keys: KeysMessage) -> dict[int, bytes]:
        """Seal a share of s_u^SK and b_u for each neighbour that advertised: {v: AES-GCM bundle}."""
        self._step("share_keys")
        adverts = keys.adverts
        if self.params.active:
            self._check_keys(adverts, keys.proofs, keys.own, keys.root)
        self._place(self.beacon if self.beacon is not None else keys.root)
        size = advert_bytes(self.params)
        strangers = set(adverts) - set(self.neighbours.tolist())
        if strangers:
            raise self._error(f"sent the keys of client {min(strangers)}, which is not its neighbour")
        short = [v for v, a in adverts.items() if len(a) != size]
        if short:
            raise self._error(f"the advertisement of client {short[0]} has {len(adverts[short[0]])} bytes, not {size}")
        publics = [a[: crypto.KEY_BYTES] + a[crypto.KEY_BYTES : 2 * crypto.KEY_BYTES] for a in adverts.values()]
        if len(set(publics)) != len(publics):
            raise self._error("two neighbours advertised the same public keys")
        if len(adverts) + 1 < self.t:
            raise self._error(
                f"{len(adverts)} neighbours advertised keys: with itself fewer than t = {self.t} "
                "holders, its secrets could not be rebuilt"
            )
        self._peers = {
            v: (a[: crypto.KEY_BYTES], a[crypto.KEY_BYTES : 2 * crypto.KEY_BYTES]) for v, a in sorted(adverts.items())
        }
        holders = np.array([self.id, *self._peers], dtype=np.int64)
        secrets = np.stack([np.frombuffer(self._s.private_bytes_raw(), np.uint8), np.frombuffer(self._b, np.uint8)])
        shares = shamir.share(
            secrets,
            np.tile(holders + 1, (2, 1)),
            self.t,
            lambda shape: crypto.random_field(self._entropy, shape, shamir.PRIME),
        )
        bundles = shares.transpose(1, 0, 2).astype("<i4")  # (holders, 2 secrets, limbs)
        self._held[self.id] = bundles[0].astype(np.int64)
        out = {}
        for v, bundle in zip(self._peers, bundles[1:], strict=True):
            header = share_header(self._session, self.id, v)
            self._channel[v] = crypto.exchange(self._c, self._peers[v][0])
            key = crypto.derive(self._channel[v], header)
            out[v] = crypto.seal(key, bundle.tobytes(), header)
        return out

    # ---- step 2 -------------------------------------------------------------------------------------
    def masked_input(self, x: np.ndarray, sealed: dict[int, bytes]) -> tuple[np.ndarray, bytes]:
        """(y_u, bitmap over its neighbours of those it masked with): the input plus the self-mask plus ± a
        pairwise mask with each neighbour whose bundle arrived and authenticated.  A bundle that does not
        (garbage from its sender, or tampered with) is dropped with its sender: no mask, no share held, and
        the bitmap tells the server, which then drops that sender (``Server.unmasking_request``)."""
        self._step("masked_input")
        bits = self.params.bits
        x = np.asarray(x)
        if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer) or (x.size and (x.min() < 0 or x.max() >= 1 << bits)):
            raise self._error(f"its input must be a vector of integers in [0, 2^{bits})")
        for v, ciphertext in sorted(sealed.items()):
            if v not in self._peers:
                raise self._error(f"got a share bundle said to be from client {v}, which it sent no shares to")
            header = share_header(self._session, v, self.id)
            key = crypto.derive(self._channel[v], header)
            try:
                plain = crypto.open_sealed(key, bytes(ciphertext), header)
            except (InvalidTag, TypeError, ValueError):
                continue
            if len(plain) != 8 * SHARE_LIMBS:
                continue
            self._held[v] = np.frombuffer(plain, dtype="<i4").astype(np.int64).reshape(2, SHARE_LIMBS)
            self._masked_with.add(v)
        y = x.astype(np.uint64) + crypto.expand(self_mask_seed(self._b, self._session), x.size, bits)
        for v in sorted(self._masked_with):
            mask = crypto.expand(
                pair_seed(crypto.exchange(self._s, self._peers[v][1]), self.id, v, self._session), x.size, bits
            )
            y = y + mask if self.id < v else y - mask
        bitmap = np.packbits(np.isin(self.neighbours, list(self._masked_with))).tobytes()
        return y & np.uint64((1 << bits) - 1), bitmap

    # ---- checks shared by steps 2b and 3 ------------------------------------------------------------------
    def _check_survivors(self, alive: np.ndarray, dropped: np.ndarray | None = None) -> None:
        """What it checks of a survivor set before it signs or reveals anything (module doc)."""
        n = self.n
        if alive.shape != (n,) or alive.dtype != bool or (dropped is not None and dropped.shape != (n,)):
            raise self._error(f"the survivor and dropped sets must be boolean vectors over the {n} slots")
        if dropped is not None and (alive & dropped).any():
            raise self._error(
                f"client {int(np.flatnonzero(alive & dropped)[0])} is listed both as a survivor "
                "and as dropped: answering would reveal both of its secrets"
            )
        if not alive[self.id]:
            raise self._error("asked to answer although the request lists it as dropped")
        strangers = [int(v) for v in self.neighbours if alive[v] and int(v) not in self._masked_with]
        if strangers:
            raise self._error(
                f"asked to treat client {strangers[0]} as a survivor, but it never got (or rejected) that "
                "neighbour's share bundle and did not mask with it: the survivors' masked graph is not the "
                "public one (a withheld bundle cuts it); refusing"
            )
        least = self.params.min_survivors(n)
        if int(alive.sum()) < least:
            raise self._error(
                f"{int(alive.sum())} survivors of {n}, fewer than ⌊threshold n⌋ + 1 = {least}: the server could "
                "learn the sum of a small set of its choice; refusing"
            )
        parts = self.graph.components(alive)
        if parts > 1:
            raise self._error(
                f"the survivors' graph has {parts} connected components: the server would learn "
                "the sum of each; refusing"
            )
        for owner in self._held:
            if alive[owner] or (dropped is not None and dropped[owner]):
                holding = int(alive[self.graph.holders(owner)].sum())
                if holding < self.t:
                    raise self._error(
                        f"client {owner} would have {holding} surviving holders in this request, fewer than "
                        f"t = {self.t}: a survivor set that cannot be unmasked for it; refusing"
                    )

    # ---- step 2b (active) ---------------------------------------------------------------------------
    def consistency(self, alive: np.ndarray) -> bytes:
        """Sign (session id, survivor set) once, after checking the set."""
        self._step("consistency")
        alive = np.asarray(alive)
        self._check_survivors(alive)
        self._signed = alive.copy()
        return crypto.sign(self._identity.secret, consistency_message(self._session, pki.alive_digest(alive)))

    def _check_signatures(self, alive: np.ndarray, signatures: dict[int, bytes] | None) -> None:
        """Each owner it will reveal a share of: at least t of its holders signed this survivor set."""
        if self._signed is None or not np.array_equal(self._signed, alive):
            raise self._error("the unmasking request names a survivor set other than the one it signed")
        message = consistency_message(self._session, pki.alive_digest(alive))
        valid = {
            w
            for w, sig in (signatures or {}).items()
            if 0 <= w < self.n and alive[w] and crypto.verify(self._directory[w], sig, message)
        }
        for owner in self._held:
            holders = set(self.graph.holders(owner).tolist()) & valid
            if len(holders) < self.t:
                raise self._error(
                    f"only {len(holders)} of client {owner}'s holders signed the survivor set "
                    f"(t = {self.t} needed): the server may be showing different sets"
                )

    # ---- step 3 -------------------------------------------------------------------------------------
    def unmasking(
        self, request: UnmaskingRequest, signatures: dict[int, bytes] | None = None
    ) -> dict[tuple[int, str], np.ndarray]:
        """{(owner, "self_seed" | "mask_key"): share} for the owners it holds shares of that survived or
        dropped after sharing; never both kinds for one owner."""
        self._step("unmasking")
        alive, dropped = np.asarray(request.alive), np.asarray(request.dropped)
        self._check_survivors(alive, dropped)
        if self.params.active:
            self._check_signatures(alive, signatures)
        out = {}
        for owner, shares in self._held.items():
            if alive[owner]:
                out[owner, "self_seed"] = shares[1]
            elif dropped[owner]:
                out[owner, "mask_key"] = shares[0]
        return out
