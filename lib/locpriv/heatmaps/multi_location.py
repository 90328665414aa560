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

Aggregation modes (``modular_sums``; the switch of ``aggregation.SecAgg.mode``):
``population`` draws each shard's summed noise in one step (the exact law of the sum
of its clients' shares) and reduces the shard sums mod m; ``per_client`` and ``secure``
build every client's own vector — its rounded weighted multiset plus its share
Pólya(1/c, a) − Pólya(1/c, a) for a shard of c clients, reduced mod m — and sum each
shard mod m ideally or by the masking protocol (``clients.modular_sum``).  Pólya laws
add their r, and (Σ v_i) mod m = (Σ (v_i mod m)) mod m, so the modes agree in
distribution, wrap-around included (tested), and secure equals per_client bit for bit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from . import clients, polya


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
        raise ValueError(
            f"{int((total[np.unique(user)] <= 0).sum())} users have zero total weight; "
            "drop them or give them a positive weight"
        )
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


def deal(user, shard_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Users dealt into shards of ``shard_size`` in a random order: each point's place in the deal
    (shard = place // shard_size, client id in the shard = place % shard_size), and each user's place."""
    ids, dense = np.unique(np.asarray(user, dtype=np.int64), return_inverse=True)
    place = rng.permutation(len(ids))
    return place[dense.reshape(-1)], place


def shard_sums(
    user, index, contribution, dim: int, shard_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(n_shards, dim) true integer shard sums, and each shard's member count (``deal``)."""
    point_place, user_place = deal(user, shard_size, rng)
    n_shards = int(user_place.max()) // shard_size + 1
    sums = (
        np.bincount(
            point_place // shard_size * dim + np.asarray(index, dtype=np.int64),
            weights=contribution,
            minlength=n_shards * dim,
        )
        .astype(np.int64)
        .reshape(n_shards, dim)
    )
    return sums, np.bincount(user_place // shard_size, minlength=n_shards)[:, None]


def noisy_shard_sums(
    user, index, contribution, dim: int, shard_size: int, epsilon: float, sens: int, rng: np.random.Generator
) -> np.ndarray:
    """Shard sums plus each shard's aggregate Pólya noise (no dropout), before the modular reduction,
    so overflow can be measured."""
    return _population_sums(user, index, contribution, dim, shard_size, epsilon, sens, rng)[1]


def _population_sums(user, index, contribution, dim, shard_size, epsilon, sens, rng):
    """True shard sums and the same plus the exact law of the sum of their c clients' shares (r = c / c)."""
    sums, members = shard_sums(user, index, contribution, dim, shard_size, rng)
    return sums, sums + polya.aggregate_noise(members, sums.shape, epsilon, sens, members, rng)


def overflow_count(shard_sums: np.ndarray, bits: int) -> int:
    """Entries of the shard sums outside [−2^(bits−1), 2^(bits−1)): those SecAgg mod 2^bits wraps."""
    if bits < 1:
        raise ValueError(f"bits must be >= 1, got {bits}")
    half = 1 << (bits - 1)
    return int(((shard_sums < -half) | (shard_sums >= half)).sum())


def wrapped_sum(shard_sums: np.ndarray, bits: int) -> np.ndarray:
    """What the server gets: each shard's sum mod 2^bits read in [−m/2, m/2), summed over shards."""
    m = 1 << bits
    return polya.secure_sum(polya.reduce_mod(shard_sums[None], m), m).sum(axis=0)


def modular_estimate(shard_sums: np.ndarray, bits: int, scale: float) -> np.ndarray:
    """The server's estimate of the normalised map: ``wrapped_sum`` divided by s."""
    return wrapped_sum(shard_sums, bits) / scale


@dataclass(frozen=True)
class ModularSums:
    """One noisy release of every shard, and what the server reads from it at each clip width.

    exact, noisy: (n_shards, dim) true and noisy integer shard sums before any reduction (diagnostics:
    overflow is counted on ``noisy``); wrapped[bits]: Σ over shards of each shard's sum mod 2^bits read in
    [−m/2, m/2) — what the server gets; client_bytes[bits]: mean bytes a client sent (secure mode only).
    """

    exact: np.ndarray
    noisy: np.ndarray
    wrapped: dict
    client_bytes: dict


def modular_sums(
    user, index, contribution, dim: int, epsilon: float, sens: int, bits: list[int], config, rng: np.random.Generator
) -> ModularSums:
    """Users dealt into shards of ``config.shard_size`` (no dropout), each shard's noise planned for its c
    clients, summed mod 2^bits for every ``bits``, in ``config.mode`` (module doc)."""
    if config.mode == "population":
        exact, noisy = _population_sums(user, index, contribution, dim, config.shard_size, epsilon, sens, rng)
        return ModularSums(exact, noisy, {b: wrapped_sum(noisy, b) for b in bits}, {b: None for b in bits})
    point_place, user_place = deal(user, config.shard_size, rng)
    index, contribution = np.asarray(index, dtype=np.int64), np.asarray(contribution)
    n_shards = int(user_place.max()) // config.shard_size + 1
    exact, noisy = np.zeros((2, n_shards, dim), dtype=np.int64)
    wrapped = {b: np.zeros(dim, dtype=np.int64) for b in bits}
    sent = {b: [] for b in bits}
    for j in range(n_shards):
        mine = point_place // config.shard_size == j
        c = int((user_place // config.shard_size == j).sum())
        counts = (
            np.bincount(
                point_place[mine] % config.shard_size * dim + index[mine], weights=contribution[mine], minlength=c * dim
            )
            .astype(np.int64)
            .reshape(c, dim)
        )
        vectors = clients.noisy_vectors(counts, epsilon, sens, c, rng)
        exact[j], noisy[j] = counts.sum(axis=0), vectors.sum(axis=0)
        for b in bits:
            width = dataclasses.replace(config, protocol=dataclasses.replace(config.protocol, bits=b))
            total, log = clients.modular_sum(
                clients.reduce(vectors, b), np.arange(c), c, width, f"multi|bits {b}|shard {j}".encode()
            )
            wrapped[b] += clients.centred(total, b)
            if log is not None:
                sent[b].append(log.groupby("sender")["bytes"].sum().to_numpy())
    return ModularSums(
        exact, noisy, wrapped, {b: float(np.concatenate(v).mean()) if v else None for b, v in sent.items()}
    )
