"""Pairwise-masking secure aggregation (Bonawitz et al. CCS 2017; Bell et al. CCS 2020): the protocol.

One shard of n client slots, client u holding x_u in Z_m^K (m = 2^bits), on a public
graph (``graph``: complete, or Harary of degree k with t = ⌊threshold (k + 1)⌋ + 1 of a
client's k + 1 holders — its neighbours and itself).  Steps, with the set of clients
still taking part after each (U1 ⊇ U2 ⊇ U3 ⊇ U4 ⊇ U5):

0. *AdvertiseKeys* (U1): u sends two X25519 public keys c_u (channel) and s_u (masking)
   and a commitment HKDF(b_u, "commit") to its self-mask seed b_u (drawn now); in the
   active variant signed with u's identity key (``pki``) over the session context.
1. *ShareKeys* (U2): u receives its neighbours' advertisements (active: with Merkle
   proofs; it checks every signature and every proof against one root, the session id),
   Shamir-shares s_u^SK and b_u to its holders that advertised (``shamir``) and seals
   the share for neighbour v with AES-GCM under HKDF(X25519(c_u, c_v), u→v).
2. *MaskedInputCollection* (U3): u receives the sealed shares addressed to it, opens them
   (a bundle that does not authenticate is an error naming its sender), and sends
   y_u = x_u + PRG(b_u) + Σ_{v ∈ N(u) whose shares arrived} ±PRG(HKDF(X25519(s_u, s_v)))
   mod m, + when u < v, − when u > v.
2b. *ConsistencyCheck* (active only, U4): the server sends U3; u checks it (below) and
   signs (session id, U3); the server returns to u the signatures of the clients within
   two hops (the holders of u's owners).
3. *Unmasking* (U5): u checks the request and answers, for each owner o it holds a share
   of, the share of b_o if o ∈ U3, of s_o^SK if o ∈ U2 \\ U3, never both, once.  The server
   rebuilds b_o (checked against its commitment) for o ∈ U3, s_o^SK (checked against its
   public key) for o ∈ U2 \\ U3, removes the self-masks and the dropped clients' masks and
   outputs Σ_{u ∈ U3} x_u mod m.

What a client checks before it signs or reveals anything (``client.Client``; each check failing is
a ``ProtocolError`` naming the client): it answers each step once and in order; the survivor and
dropped sets are disjoint and it is a survivor; every neighbour listed as a survivor is one whose
bundle it accepted and masked with (so the survivors' graph over the edges actually masked is the
public one: a withheld bundle cannot cut it); more than threshold · n survivors; the survivors'
graph connected (``graph``); every owner it would reveal a share of keeps t holders among the
survivors; active: the survivor set is the one it signed, and for each owner it reveals, at least t
of that owner's holders signed the same set under the same session id.  A bundle that does not
authenticate drops its sender (no mask, no share held; the bitmap sent with y_u tells the server).
A session context is at least 16 bytes and an identity refuses one it has used (``pki.Identity``).
The server (``server.Server``) checks every message it gets: known and distinct senders, no step
twice (replays), nothing after its step closed (late masked inputs, inputs under a dropped id),
vector length K and values in Z_m, shares only from holders of their owner, at least t shares per
owner, spare shares on the polynomial, rebuilt secrets against their commitments and public keys,
and the survivors' graph connected over masked edges — otherwise a ``ProtocolError`` and no output.
The layout of the graph comes from the committed key set (``graph.layout_seed``).

What the server learns, with no more than a fraction γ of clients colluding with it (``corrupt``,
the degree rule), CDH on Curve25519, HKDF/AES as PRF/PRP, AES-GCM and Ed25519 secure (Bonawitz et
al. Thm 6.2–6.4, Bell et al. Thm 3.6, with the connectivity argument):

* ``honest_but_curious`` (the server follows the protocol; dropouts are not chosen by it):
  Σ_{u ∈ U3} x_u mod m and nothing else about the inputs — or nothing, when a check fails.
  Pairwise masks on the edges inside U3 are unknown to it; U3 is connected, so every proper
  subset of U3 has an edge to the rest whose mask does not cancel.  A deviating server is out of
  this model (it reads an input by substituting keys, or by survivor lists tailored to each
  client's checks: tests/test_secagg_attacks.py).
* ``active`` (the server may deviate arbitrarily: substitute keys, withhold bundles, send different
  lists to different clients, ask twice, replay): at most one sum Σ_{u ∈ L} x_u mod m over a set L
  of its choice among the clients whose masked input it received, with L connected over masked
  edges and |L| > threshold · n >= n / 2 — or nothing.  Consistency: two holders of one owner that
  reveal saw the same L (each needed t signers among the owner's k + 1 holders, 2t > k + 1, an
  honest client signs once), adjacent owners that both get t shares share an answering holder
  (t > k / 2), so one L holds on every connected set the server can unmask; every survivor masked
  with its surviving neighbours, so L connected leaves Σ_L as the only unmaskable combination; and
  each client checks |L| itself.

Simulation shortcuts that change no output: the clients are objects in one process (each
holds only its own secrets; the graph and the PKI directory are public), called in turn by
``simulate.aggregate``.  ``client_bytes`` is what one client sends, equal to the transcript's
counts (tested); compute is measured by perf/bench_secagg.py.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from . import crypto, graph, shamir

VARIANTS = ("honest_but_curious", "active")
SECRETS = ("mask_key", "self_seed")
SHARE_LIMBS = shamir.n_limbs(crypto.KEY_BYTES)
SHARE_BYTES = 4 * SHARE_LIMBS  # one Shamir share of a 32-byte secret (int32 limbs)
GCM_TAG_BYTES = 16


class ProtocolError(RuntimeError):
    """The shard cannot be finished safely; nothing is output (the message names the client at fault)."""


@dataclass(frozen=True)
class ProtocolParams:
    """bits: m = 2^bits; graph "complete" or "harary" (random k-regular, Bell et al.); degree None =
    ``graph.auto_degree`` for the planned dropout and the corrupted fraction ``corrupt`` (γ: clients that may
    collude with the server); threshold: t = ⌊threshold (k + 1)⌋ + 1 of a client's k + 1 holders, threshold
    in [0.5, 1); variant "honest_but_curious" or "active" (module doc)."""

    bits: int = 32
    graph: str = "harary"
    degree: int | None = None
    threshold: float = 0.5
    planned_dropout: float = 0.0
    variant: str = "honest_but_curious"
    corrupt: float = 0.0

    def __post_init__(self):
        if not (isinstance(self.bits, (int, np.integer)) and 2 <= self.bits <= 62):
            raise ValueError(f"bits must be an integer in [2, 62], got {self.bits!r}")
        if self.graph not in graph.GRAPHS:
            raise ValueError(f"graph must be one of {graph.GRAPHS}, got {self.graph!r}")
        if not 0.5 <= self.threshold < 1:
            raise ValueError(f"threshold must be a fraction in [0.5, 1), got {self.threshold}")
        if not 0 <= self.planned_dropout < 1:
            raise ValueError(f"planned_dropout must be in [0, 1), got {self.planned_dropout}")
        if not 0 <= self.corrupt < 0.5:
            raise ValueError(
                f"corrupt (the fraction of clients colluding with the server) must be in [0, 0.5), got {self.corrupt}"
            )
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")

    @property
    def active(self) -> bool:
        return self.variant == "active"

    def degree_for(self, n: int) -> int:
        if self.graph == "complete":
            return n - 1
        if self.degree is not None:
            return min(self.degree, n - 1)
        return graph.auto_degree(n, self.planned_dropout, self.threshold, self.corrupt)

    def t_for(self, n: int) -> int:
        return graph.threshold(self.degree_for(n) + 1, self.threshold)

    def min_survivors(self, n: int) -> int:
        """Survivors a shard needs before anyone unmasks: ⌊threshold · n⌋ + 1 (> n / 2), so that no set of
        clients the server declares surviving is small — the complete graph's t, and on a sparse graph the
        bound a client can check from the survivor set alone (an arc of t clients whose neighbours are all
        "dropped" passes every local check)."""
        return graph.threshold(n, self.threshold)


def advert_bytes(params: ProtocolParams) -> int:
    """Two public keys, the self-seed commitment and (active) the identity signature."""
    return 3 * crypto.KEY_BYTES + (crypto.SIGNATURE_BYTES if params.active else 0)


def client_bytes(n: int, dim: int, params: ProtocolParams) -> dict[str, int]:
    """Bytes one client of a shard of n sends by step when nobody drops, for vectors of ``dim`` entries:
    its advertisement; k sealed bundles (shares of both secrets + tag); the masked vector at ⌈bits/8⌉
    bytes per entry; (active) one signature; one share for each of its k + 1 owners (its neighbours
    and itself).  Bonawitz et al.: O(n + K) on the complete graph (k = n − 1); Bell et al.: O(log n + K)."""
    k = params.degree_for(n)
    out = {
        "advertise_keys": advert_bytes(params),
        "share_keys": k * (2 * SHARE_BYTES + GCM_TAG_BYTES),
        "masked_input": dim * ((params.bits + 7) // 8) + masked_with_bytes(k),
    }
    if params.active:
        out["consistency"] = crypto.SIGNATURE_BYTES
    out["unmasking"] = (k + 1) * SHARE_BYTES
    return out


def masked_with_bytes(k: int) -> int:
    """The bitmap over its k neighbours that a client sends with its masked vector: whom it masked with."""
    return (k + 7) // 8


MIN_CONTEXT_BYTES = 16


def check_context(context) -> bytes:
    """A session context: bytes, at least 16 of them (128 bits, so a fresh random one never repeats)."""
    if not isinstance(context, bytes) or len(context) < MIN_CONTEXT_BYTES:
        raise ProtocolError(
            f"the session context must be at least {MIN_CONTEXT_BYTES} bytes, fresh for every round and shard "
            f"(e.g. os.urandom(16) + a shard label), got {context!r:.40}"
        )
    return context


def _ids(*ids: int) -> bytes:
    return struct.pack(f"<{len(ids)}I", *ids)


def keys_message(context: bytes, u: int, public: bytes) -> bytes:
    """What u's identity signature covers: the session context, its slot and its advertisement."""
    return b"locpriv-secagg/keys|" + context + _ids(u) + public


def consistency_message(session: bytes, alive_digest: bytes) -> bytes:
    return b"locpriv-secagg/alive|" + session + alive_digest


def share_header(context: bytes, sender: int, recipient: int) -> bytes:
    """AES-GCM header (authenticated) and HKDF context of the bundle ``sender`` seals for ``recipient``."""
    return context + b"|share|" + _ids(sender, recipient)


def pair_seed(exchanged: bytes, u: int, v: int, context: bytes) -> bytes:
    """PRG seed of the pairwise mask of clients u and v from their X25519 secret (symmetric in u, v)."""
    return crypto.derive(exchanged, context + b"|mask|" + _ids(min(u, v), max(u, v)))


def self_mask_seed(b: bytes, context: bytes) -> bytes:
    return crypto.derive(b, context + b"|self")


def commitment(b: bytes, context: bytes) -> bytes:
    """Binding, hiding commitment to a self-mask seed (HKDF as a PRF keyed by the 256-bit seed)."""
    return crypto.derive(b, context + b"|commit")


@dataclass(frozen=True)
class KeysMessage:
    """Step 1's message to client u: its neighbours' advertisements, the key set's Merkle root (the layout's
    public randomness, ``graph.layout_seed``), and in the active variant the Merkle proofs and u's own
    advertisement as committed."""

    adverts: dict
    root: bytes
    proofs: dict | None = None
    own: bytes | None = None


@dataclass(frozen=True)
class UnmaskingRequest:
    """Step 3's request, the same for every client: survivors (sent y) and dropped (shared, no y)."""

    alive: np.ndarray
    dropped: np.ndarray
