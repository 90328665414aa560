"""The active variant's public-key infrastructure (simulated) and its session id.

* ``Directory``: every client's long-term Ed25519 identity key, registered before the
  protocol through a channel the server does not control (a PKI).  A client holds its own
  identity secret; the directory holds public keys only, and clients read it directly,
  so the server can neither forge a client's signature nor swap its identity key.
* ``KeySet``: the server's commitment to the advertised key set, a Merkle tree (SHA-256,
  domain-separated leaves and nodes) over the n slots of the shard.  A client receives its
  neighbours' advertisements with their inclusion proofs (O(k log n) hashes, so the Harary
  graph's per-client cost stays logarithmic), checks every proof against one root, and
  takes ``session_id(context, root)`` as the session id: two clients with the same session id
  saw the same key set, and every consistency signature is over the session id, so
  signatures from different key sets never count together.
"""

from __future__ import annotations

import numpy as np

from . import crypto

_LEAF, _NODE, _ABSENT, _EMPTY = b"\x00", b"\x01", b"\x02", b"\x03"


class Identity:
    """One client's long-term identity: its Ed25519 secret and the session contexts it has signed in.

    ``begin`` refuses a context seen before, so an advertisement signed in an earlier round cannot be
    replayed into a round that reuses its context (the signature covers the context): with fresh
    contexts an old signature does not verify, with a reused one the client refuses to take part.
    The service keeps ``sessions`` in the client's key store (``secagg.store``) across restarts."""

    def __init__(self, secret, sessions: set[bytes] | None = None):
        self.secret = secret
        self.public = crypto.identity_public(secret)
        self.sessions = sessions if sessions is not None else set()

    def begin(self, context: bytes) -> bool:
        """Record ``context``; False if it was used before."""
        tag = crypto.digest(b"locpriv-secagg/context", context)
        if tag in self.sessions:
            return False
        self.sessions.add(tag)
        return True


class Directory:
    """Identities of the n clients of a shard: ``identities[u]`` goes to client u only, ``public`` to all.
    A directory kept across rounds is what a deployment has (long-lived identity keys)."""

    def __init__(self, n: int, entropy):
        raw = crypto.random_bytes(entropy, n)
        self.identities = [Identity(crypto.identity_key(r.tobytes())) for r in raw]
        self.public = [i.public for i in self.identities]


def _leaf(u: int, entry: bytes | None) -> bytes:
    slot = u.to_bytes(4, "little")
    return crypto.digest(_LEAF, slot, entry) if entry is not None else crypto.digest(_ABSENT, slot)


def session_id(context: bytes, root: bytes) -> bytes:
    return crypto.digest(b"locpriv-secagg/session", context, root)


class KeySet:
    """Merkle tree over the advertisements of slots 0..n−1 (``None``: the client did not advertise)."""

    def __init__(self, entries: list[bytes | None]):
        self.n = len(entries)
        level = [_leaf(u, e) for u, e in enumerate(entries)]
        width = 1 << max(0, (self.n - 1).bit_length())
        level += [crypto.digest(_EMPTY)] * (width - self.n)
        self.levels = [level]
        while len(level) > 1:
            level = [crypto.digest(_NODE, level[i], level[i + 1]) for i in range(0, len(level), 2)]
            self.levels.append(level)

    @property
    def root(self) -> bytes:
        return self.levels[-1][0]

    def proof(self, u: int) -> list[bytes]:
        """Sibling hashes from slot u's leaf to the root."""
        out = []
        for level in self.levels[:-1]:
            out.append(level[u ^ 1])
            u >>= 1
        return out


def root_from(u: int, entry: bytes, proof: list[bytes], n: int) -> bytes:
    """The root a proof for slot u's ``entry`` leads to (equal to ``KeySet.root`` iff the entry is in it)."""
    if not 0 <= u < n or len(proof) != max(0, (n - 1).bit_length()):
        return b""
    node = _leaf(u, entry)
    for sibling in proof:
        node = crypto.digest(_NODE, node, sibling) if u % 2 == 0 else crypto.digest(_NODE, sibling, node)
        u >>= 1
    return node


def alive_digest(alive: np.ndarray) -> bytes:
    """What a consistency signature covers of a survivor set (bool per slot)."""
    return crypto.digest(
        b"alive", np.packbits(np.asarray(alive, dtype=bool)).tobytes(), len(alive).to_bytes(4, "little")
    )
