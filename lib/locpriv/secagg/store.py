"""A client's key store: its long-term identity, the session contexts it has used, and its round state.

One directory per client, written only by that client (files 0600): ``identity.key`` (the Ed25519
secret, 32 raw bytes, created on first use), ``identity.pub``, ``sessions`` (one line per used
context: SHA-256 tags, ``pki.Identity``) and ``round.json`` (``Client.export_state`` after every step,
with the reply it sent, so a client restarted mid-round resends or continues and never answers a
step twice).  Every write goes to a temporary file renamed over the old one, so a client killed
mid-write keeps the previous state.  The server never sees any of it: it gets the public key
through the directory (``identity.pub``) and the protocol's messages only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import crypto, pki


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


class KeyStore:
    def __init__(self, path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)

    def identity(self) -> pki.Identity:
        """The client's identity (created once) with the contexts it has used."""
        key = self.path / "identity.key"
        if not key.exists():
            secret = crypto.random_bytes(None, 1)[0].tobytes()
            _write(key, secret)
            _write(self.path / "identity.pub", crypto.identity_public(crypto.identity_key(secret)))
        sessions = self.path / "sessions"
        used = {bytes.fromhex(line) for line in sessions.read_text().split()} if sessions.exists() else set()
        return pki.Identity(crypto.identity_key(key.read_bytes()), used)

    def public(self) -> bytes:
        self.identity()
        return (self.path / "identity.pub").read_bytes()

    def save_sessions(self, identity: pki.Identity) -> None:
        _write(self.path / "sessions", "\n".join(sorted(t.hex() for t in identity.sessions)).encode())

    def save_round(self, state: dict, replies: dict) -> None:
        _write(self.path / "round.json", json.dumps({"state": state, "replies": replies}).encode())

    def load_round(self) -> tuple[dict, dict] | None:
        path = self.path / "round.json"
        if not path.exists():
            return None
        saved = json.loads(path.read_text())
        return saved["state"], saved["replies"]

    def end_round(self) -> None:
        (self.path / "round.json").unlink(missing_ok=True)
