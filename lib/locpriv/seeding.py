"""Random streams that are a function of the configuration only.

Every stochastic step asks for ``rng(seed, *keys)`` with keys naming what it
is (dataset, mechanism, parameters, rep, shard, purpose).  The keys are hashed
with a stable hash (not Python's salted ``hash``), so the stream does not
depend on the process, the core count, the executor or execution order.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np


def _key_words(keys: tuple) -> list[int]:
    blob = json.dumps([_canonical(k) for k in keys], sort_keys=True, separators=(",", ":"))
    digest = hashlib.blake2b(blob.encode(), digest_size=16).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


def _canonical(key):
    if isinstance(key, dict):
        return {str(k): _canonical(v) for k, v in sorted(key.items())}
    if isinstance(key, (list, tuple)):
        return [_canonical(v) for v in key]
    if isinstance(key, (np.integer,)):
        return int(key)
    if isinstance(key, (float, np.floating)):
        # repr round-trips floats exactly, so 0.55 and 0.550 hash alike
        return repr(float(key))
    return key


def seed_sequence(seed: int, *keys) -> np.random.SeedSequence:
    """SeedSequence for (global seed, keys...)."""
    return np.random.SeedSequence([int(seed), *_key_words(keys)])


def rng(seed: int, *keys) -> np.random.Generator:
    """Independent generator for (global seed, keys...)."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, *keys)))
