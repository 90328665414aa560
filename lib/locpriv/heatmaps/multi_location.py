"""Users with several weighted locations ([DDP-Heatmaps] §5.7) and SecAgg modular overflow (App. A.3).

A user's points (vector entries ``index`` with weights, e.g. visit counts or time
spent) are normalised to L1 = 1 per user, scaled by a constant s and
stochastically rounded: v -> ⌊v⌋ + Bernoulli(v − ⌊v⌋), unbiased.  Rounding up
adds less than 1 per non-zero entry, so a user's vector has L1 <= s + d for a
vector of length d, and the paper sets the sensitivity to s + d (§5.7: "all
elements of the vector will be rounded up, changing L1-sensitivity from [s] to
[s + d]"; the symbols are lost in the extraction and reconstructed from that
argument and "a sensitivity of s + d" later in §5.7).  We use ⌈s⌉ + d so it is
an integer as ``polya.achieved_epsilon`` needs.  The server divides the aggregate by s; the
noise variance grows by at most ((s + d) / s)^2 over the single-location case,
hence s >> d.  Guarantee: pure ε-DP per user and sub-query with that
sensitivity, whatever the number of points (no guarantee is claimed for the
overflowed, i.e. wrapped, sums beyond post-processing, which is free).

Overflow: SecAgg sums each shard's noisy vectors modulo m = 2^bits and the server
reads the result in [−m/2, m/2); an entry whose true noisy shard sum leaves that
range wraps around (``overflow_count`` counts them).
"""

from __future__ import annotations

import numpy as np

from . import polya


def normalise_weights(user: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Each point's weight divided by its user's total, so every user's weights sum to 1."""
    user = np.asarray(user, dtype=np.int64)
    weight = np.asarray(weight, dtype=float)
    if user.shape != weight.shape or (user < 0).any():
        raise ValueError("user must be non-negative integer ids with one weight per point")
    if (weight < 0).any() or not np.isfinite(weight).all():
        raise ValueError("weights must be finite and >= 0")
    total = np.bincount(user, weights=weight)
    if (total[np.unique(user)] <= 0).any():
        raise ValueError(f"{int((total[np.unique(user)] <= 0).sum())} users have zero total weight; "
                         "drop them or give them a positive weight")
    return weight / total[user]


def stochastic_round(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """⌊v⌋ + 1 with probability v − ⌊v⌋, else ⌊v⌋: E[round(v)] = v."""
    values = np.asarray(values, dtype=float)
    low = np.floor(values)
    return (low + (rng.random(values.shape) < values - low)).astype(np.int64)


def sensitivity(scale: float, dim: int) -> int:
    """L1 sensitivity of a normalised, scaled, stochastically rounded vector of length dim."""
    if not scale > 0 or dim < 1:
        raise ValueError(f"scale must be > 0 and dim >= 1, got scale={scale}, dim={dim}")
    return int(np.ceil(scale)) + int(dim)


def encode_users(user, weight, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Per-point integer contributions: stochastic_round(scale * normalised weight)."""
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    return stochastic_round(scale * normalise_weights(user, weight), rng)


def shard_sums(user, index, contribution, dim: int, shard_size: int,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(n_shards, dim) true integer shard sums, and each shard's member count.

    Users are dealt into shards of ``shard_size`` in a random order.
    """
    user = np.asarray(user, dtype=np.int64)
    ids, dense = np.unique(user, return_inverse=True)
    shard_of_user = rng.permutation(len(ids)) // shard_size
    n_shards = int(shard_of_user.max()) + 1
    shard = shard_of_user[dense]
    sums = np.bincount(shard * dim + np.asarray(index, dtype=np.int64), weights=contribution,
                       minlength=n_shards * dim).astype(np.int64).reshape(n_shards, dim)
    return sums, np.bincount(shard_of_user, minlength=n_shards)[:, None]


def noisy_shard_sums(user, index, contribution, dim: int, shard_size: int, epsilon: float, sens: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Shard sums plus each shard's aggregate Pólya noise (no dropout), before the modular reduction,
    so overflow can be measured."""
    sums, members = shard_sums(user, index, contribution, dim, shard_size, rng)
    return sums + polya.aggregate_noise(members, sums.shape, epsilon, sens, members, rng)


def overflow_count(shard_sums: np.ndarray, bits: int) -> int:
    """Entries of the shard sums outside [−2^(bits−1), 2^(bits−1)): those SecAgg mod 2^bits wraps."""
    if bits < 1:
        raise ValueError(f"bits must be >= 1, got {bits}")
    half = 1 << (bits - 1)
    return int(((shard_sums < -half) | (shard_sums >= half)).sum())


def modular_estimate(shard_sums: np.ndarray, bits: int, scale: float) -> np.ndarray:
    """What the server gets: each shard's sum mod 2^bits read in [−m/2, m/2), summed, divided by s."""
    m = 1 << bits
    wrapped = polya.secure_sum(polya.reduce_mod(shard_sums[None], m), m)
    return wrapped.sum(axis=0) / scale
