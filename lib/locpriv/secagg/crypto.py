"""Primitives of the masking protocol: X25519 key agreement, HKDF-SHA256, an AES-CTR PRG, AES-GCM.

Security assumptions (standard, as in Bonawitz et al. 2017 §6 and Bell et al. 2020):
the computational Diffie–Hellman problem on Curve25519 is hard (X25519, RFC 7748),
HKDF-SHA256 (RFC 5869) is a key-derivation function whose output is
pseudorandom given a shared secret of high entropy, AES-256 is a pseudorandom
permutation, so AES-CTR from a secret key and a fixed nonce is a PRG (each key
is used for one stream only), and AES-GCM is an authenticated cipher (IND-CCA).

Entropy: a deployment draws keys and seeds from the OS (``entropy=None`` uses
``os.urandom``).  The study passes a seeded numpy Generator so that the same
configuration gives the same bytes; those secrets are then reproducible by
whoever knows the configuration's seed, which is fine for a simulation and
never for a deployment.
"""

from __future__ import annotations

import os

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

KEY_BYTES = 32
_ZERO_NONCE = bytes(16)


def random_bytes(entropy: np.random.Generator | None, rows: int, width: int = KEY_BYTES) -> np.ndarray:
    """(rows, width) uint8 of secret randomness: OS entropy, or a seeded Generator (simulation)."""
    if entropy is None:
        return np.frombuffer(os.urandom(rows * width), dtype=np.uint8).reshape(rows, width).copy()
    return entropy.integers(0, 256, size=(rows, width), dtype=np.uint8)


def random_int(entropy: np.random.Generator | None) -> int:
    """A 128-bit integer from the same entropy source (e.g. to seed a public layout)."""
    return int.from_bytes(random_bytes(entropy, 1, 16).tobytes(), "little")


def random_field(entropy: np.random.Generator | None, shape, prime: int) -> np.ndarray:
    """Uniform elements of GF(prime), prime < 2^31: 64 random bits mod prime (bias < 2^-33)."""
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
    """HKDF-SHA256 of a shared secret or seed, bound to ``context`` (round, shard, purpose, direction)."""
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=context).derive(key_material)


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
