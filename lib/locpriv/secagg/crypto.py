"""Primitives of the masking protocol: X25519, HKDF-SHA256, an AES-CTR PRG, AES-GCM, Ed25519, SHA-256.

Security assumptions (standard, as in Bonawitz et al. 2017 §6 and Bell et al. 2020):
the computational Diffie–Hellman problem on Curve25519 is hard (X25519, RFC 7748),
HKDF-SHA256 (RFC 5869) is a key-derivation function whose output is
pseudorandom given a shared secret of high entropy, AES-256 is a pseudorandom
permutation, so AES-CTR from a secret key and a fixed nonce is a PRG (each key
is used for one stream only), AES-GCM is an authenticated cipher (IND-CCA),
Ed25519 (RFC 8032) is existentially unforgeable and SHA-256 collision resistant
(the active variant's signatures and session id).

Entropy: secrets (keys, self-mask seeds, Shamir coefficients) come from the OS
(``entropy=None`` uses ``os.urandom``) everywhere outside a simulation that must
replay its masked vectors; the workflow and the DAG use the OS, and their outputs
are still reproducible because no output depends on a secret (the masks cancel).
A seeded numpy Generator (tests, benchmarks) makes every secret reproducible by
whoever knows the seed: fine for a simulation, never for a deployment.  It is
always a stream of its own, never the DP noise's.

Bias: the masks are exactly uniform on Z_m — the low ``bits`` bits of uniform
64-bit AES-CTR words, m = 2^bits a power of two.  The Shamir coefficients are
64 uniform bits reduced mod p (``random_field``); their statistical distance
from uniform on GF(p) is r (p − r) / (p 2^64) with r = 2^64 mod p, which for
p = 2^31 − 1 (2^31 ≡ 1, so 2^64 = 4 · (2^31)^2 ≡ 4) is 4 (p − 4) / (p 2^64)
< 2^-62 per coefficient (the generic bound p / 2^64 < 2^-33 is loose by 2^29).
"""

from __future__ import annotations

import hashlib
import hmac
import os

import numpy as np
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

KEY_BYTES = 32
SIGNATURE_BYTES = 64
_ZERO_NONCE = bytes(16)
_HKDF_NO_SALT = bytes(32)  # RFC 5869 §2.2: an absent salt is HashLen zero bytes


def random_bytes(entropy: np.random.Generator | None, rows: int, width: int = KEY_BYTES) -> np.ndarray:
    """(rows, width) uint8 of secret randomness: OS entropy, or a seeded Generator (simulation)."""
    if entropy is None:
        return np.frombuffer(os.urandom(rows * width), dtype=np.uint8).reshape(rows, width).copy()
    return entropy.integers(0, 256, size=(rows, width), dtype=np.uint8)


def random_int(entropy: np.random.Generator | None) -> int:
    """A 128-bit integer from the same entropy source (e.g. to seed a public layout)."""
    return int.from_bytes(random_bytes(entropy, 1, 16).tobytes(), "little")


def random_field(entropy: np.random.Generator | None, shape, prime: int) -> np.ndarray:
    """Elements of GF(prime), prime < 2^31: 64 random bits mod prime, statistical distance from uniform
    r (prime − r) / (prime 2^64), r = 2^64 mod prime (< 2^-62 for 2^31 − 1: module doc)."""
    count = int(np.prod(shape))
    words = np.frombuffer(random_bytes(entropy, count, 8).tobytes(), dtype="<u8")
    return (words % np.uint64(prime)).astype(np.int64).reshape(shape)


def private_key(secret: bytes) -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(bytes(secret))


def public_bytes(secret: X25519PrivateKey) -> bytes:
    return secret.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def exchange(secret: X25519PrivateKey, peer_public: bytes) -> bytes:
    """Raw X25519 shared secret; use only through ``derive``."""
    return secret.exchange(X25519PublicKey.from_public_bytes(peer_public))


def derive(key_material: bytes, context: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869, no salt, 32-byte output) of a shared secret or seed, bound to ``context``
    (round, shard, purpose, direction).  Two HMAC-SHA256 calls: extract, then one expand block; the
    same bytes as ``cryptography``'s HKDF (tested), without its per-call object set-up, which
    dominated a client's key derivations."""
    prk = hmac.digest(_HKDF_NO_SALT, key_material, "sha256")
    return hmac.digest(prk, context + b"\x01", "sha256")


def expand(seed: bytes, length: int, bits: int) -> np.ndarray:
    """PRG: ``length`` words uniform on Z_{2^bits} from AES-256-CTR keyed by ``seed`` (uint64)."""
    stream = Cipher(algorithms.AES(seed), modes.CTR(_ZERO_NONCE)).encryptor().update(bytes(8 * length))
    words = np.frombuffer(stream, dtype=np.uint64)
    return words if bits == 64 else words & np.uint64((1 << bits) - 1)


def seal(key: bytes, plaintext: bytes, header: bytes) -> bytes:
    """AES-GCM; ``key`` must encrypt this one message only (keys are derived per direction and
    round), which is what makes the fixed nonce safe.  The header is authenticated."""
    return AESGCM(key).encrypt(_ZERO_NONCE[:12], plaintext, header)


def open_sealed(key: bytes, ciphertext: bytes, header: bytes) -> bytes:
    return AESGCM(key).decrypt(_ZERO_NONCE[:12], ciphertext, header)


def sign(secret: Ed25519PrivateKey, message: bytes) -> bytes:
    return secret.sign(message)


def verify(public: bytes, signature: bytes, message: bytes) -> bool:
    """Ed25519 verification; a malformed key or signature is simply invalid."""
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def identity_key(secret: bytes) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(bytes(secret))


def identity_public(secret: Ed25519PrivateKey) -> bytes:
    return secret.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def digest(*parts: bytes) -> bytes:
    """SHA-256 of the parts, each length-prefixed (so no two part lists collide by concatenation)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()
