"""The distributed heatmap client by client (Bagdasaryan et al. 2022 §4, §5.1), ideal or secure sum.

``aggregation.SecAgg.mode`` selects how a sub-query's vectors are summed:

* ``population`` (``aggregation``): per-pixel counts plus the exact law of the summed
  noise; for 10^6-user sweeps.
* ``per_client`` (here): the sampled users are dealt into shards in a random order,
  each drops out independently, and each survivor builds its own vector: its one-hot
  (or several +1 entries, e.g. the count-min rows) on the broadcast prefix tree, plus its
  Pólya share Pólya(1/n_dp, a) − Pólya(1/n_dp, a), reduced mod m = 2^bits.  The
  server gets each shard's sum mod m, read in [−m/2, m/2), and adds the shards.
  Pólya laws add their r, so the summed noise has exactly the law the population mode
  draws in one step; the user draw (uniform shard assignment, independent dropout) has
  the law of ``aggregation.survive``.  The two modes therefore agree in distribution
  whenever no shard sum leaves [−m/2, m/2) (tested).
* ``secure``: the same vectors, built from the same random stream, summed by the
  pairwise-masking protocol (``locpriv.secagg``) instead of by addition; its output is
  the per-client mode's bit for bit (tested), and the server's transcript is kept.

Accounting is the same in every mode (``aggregation.round_achieved_epsilon``): the
DP noise and the dropout law are identical, and the modular reduction and masking
are post-processing of the noisy sum (masks cancel exactly).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import secagg
from ..secagg import crypto
from . import polya

# cap on entries of one (clients x vector length) block built at once
BLOCK_ENTRIES = 1 << 22


@dataclass(frozen=True)
class ClientShards:
    """The surviving clients of one sub-query: flat pixel, shard and id within the shard."""

    pixel: np.ndarray
    shard: np.ndarray
    member: np.ndarray
    shard_clients: np.ndarray  # clients dealt to each shard, survivors or not


def deal(sample: np.ndarray, shard_size: int, dropout: float, rng: np.random.Generator) -> ClientShards:
    """Users of a per-pixel sample in a uniformly random order, cut into shards; independent dropout."""
    users = rng.permutation(np.repeat(np.arange(len(sample)), sample))
    position = np.arange(len(users))
    kept = rng.random(len(users)) >= dropout if dropout > 0 else np.ones(len(users), dtype=bool)
    n_shards = max(1, -(-len(users) // shard_size))
    clients = np.bincount(position // shard_size, minlength=n_shards)
    return ClientShards(users[kept], position[kept] // shard_size, position[kept] % shard_size, clients)


def one_hot_counts(index: np.ndarray, dim: int) -> np.ndarray:
    """(c, dim) counts: +1 at each client's ``index`` entries (shape (c,) or (c, w))."""
    index = np.asarray(index, dtype=np.int64).reshape(len(index), -1)
    rows = np.repeat(np.arange(len(index)), index.shape[1])
    return np.bincount(rows * dim + index.ravel(), minlength=len(index) * dim).reshape(len(index), dim)


def noisy_vectors(
    counts: np.ndarray,
    epsilon: float,
    sensitivity: float,
    n_dp: int,
    rng: np.random.Generator,
    timing_safe: bool = False,
) -> np.ndarray:
    """Each client's integer vector (a row of ``counts``) plus its own Pólya share, not reduced (int64).

    Drawn ``BLOCK_ENTRIES`` at a time to bound the float temporaries of the Gamma–Poisson draw;
    ``timing_safe``: the shares by the fixed-work sampler (``polya.client_shares``)."""
    counts = np.asarray(counts, dtype=np.int64)
    block = max(1, BLOCK_ENTRIES // max(counts.shape[1], 1))
    out = np.empty_like(counts)
    for i in range(0, len(counts), block):
        part = counts[i : i + block]
        out[i : i + block] = part + polya.client_shares(
            len(part), counts.shape[1], epsilon, sensitivity, n_dp, rng, timing_safe
        )
    return out


def reduce(vectors: np.ndarray, bits: int) -> np.ndarray:
    """Client side: entries in [0, 2^bits), the protocol's uint64 input."""
    return polya.reduce_mod(vectors, 1 << bits).astype(np.uint64)


def client_vectors(
    index: np.ndarray,
    dim: int,
    epsilon: float,
    sensitivity: float,
    n_dp: int,
    bits: int,
    rng: np.random.Generator,
    timing_safe: bool = False,
) -> np.ndarray:
    """Each client's vector mod 2^bits: +1 at its ``index`` entries (shape (c,) or (c, w)) plus its Pólya share."""
    return reduce(noisy_vectors(one_hot_counts(index, dim), epsilon, sensitivity, n_dp, rng, timing_safe), bits)


def centred(total: np.ndarray, bits: int) -> np.ndarray:
    """A sum mod 2^bits read in [−2^(bits−1), 2^(bits−1))."""
    return polya.secure_sum(np.asarray(total, dtype=np.int64)[None], 1 << bits)


def protocol_params(config) -> secagg.ProtocolParams:
    """The masking protocol's parameters of a ``SecAgg``: its own, planned for its dropout."""
    return dataclasses.replace(config.protocol, planned_dropout=config.plan)


def modular_sum(
    vectors: np.ndarray,
    member: np.ndarray,
    n_clients: int,
    config,
    context: bytes,
    clock: secagg.CpuClock | None = None,
) -> tuple[np.ndarray, pd.DataFrame | None]:
    """One shard's reduced vectors (survivors ``member`` of ``n_clients``) summed mod 2^bits: ideally
    (``config.mode`` "per_client") or by the masking protocol ("secure", then with the server's transcript;
    ``clock`` adds up its client and server CPU time)."""
    bits = config.protocol.bits
    if config.mode == "per_client":
        return vectors.sum(axis=0, dtype=np.uint64) & np.uint64((1 << bits) - 1), None
    if config.transport == "loopback":
        from ..secagg.service import loopback_aggregate  # asyncio, ssl, subprocess: only when asked for

        return loopback_aggregate(vectors, member, n_clients, protocol_params(config), context)
    beacon = config.layout.bytes(32) if config.layout is not None else None
    return secagg.aggregate(
        vectors, member, n_clients, protocol_params(config), config.entropy, context, beacon=beacon, clock=clock
    )


def shard_total(
    index: np.ndarray,
    member: np.ndarray,
    n_clients: int,
    dim: int,
    epsilon: float,
    sensitivity: float,
    n_dp: int,
    config,
    context: bytes,
    rng: np.random.Generator,
) -> tuple[np.ndarray, pd.DataFrame | None]:
    """One shard: its survivors' one-hot vectors plus noise, summed mod m (``modular_sum``)."""
    vectors = client_vectors(index, dim, epsilon, sensitivity, n_dp, config.protocol.bits, rng, config.timing_safe)
    return modular_sum(vectors, member, n_clients, config, context)


def client_sum(
    shards: ClientShards,
    index: np.ndarray,
    dim: int,
    epsilon: float,
    sensitivity: float,
    n_dp: np.ndarray,
    config,
    rng: np.random.Generator,
    shard_sums: np.ndarray | None = None,
) -> tuple[np.ndarray, pd.DataFrame | None]:
    """Σ over shards of each shard's centred modular sum, and the servers' transcripts (secure mode).

    ``shard_sums`` (n_shards, dim), if given, receives each shard's centred sum (what the
    server learns of the shard; a row stays 0 for a shard nobody reports in).
    """
    total = np.zeros(dim, dtype=np.int64)
    logs = []
    call = crypto.random_bytes(config.entropy, 1, 16).tobytes() if config.mode == "secure" else b""
    for j, n_clients in enumerate(shards.shard_clients):
        mine = shards.shard == j
        if not mine.any():
            continue  # nobody reports: the shard adds nothing (no noise either)
        context = call + b"|shard|" + int(j).to_bytes(4, "little")
        shard_sum, log = shard_total(
            index[mine],
            shards.member[mine],
            int(n_clients),
            dim,
            epsilon,
            sensitivity,
            int(n_dp[j]),
            config,
            context,
            rng,
        )
        centred_sum = centred(shard_sum, config.protocol.bits)
        total += centred_sum
        if shard_sums is not None:
            shard_sums[j] = centred_sum
        if log is not None:
            logs.append(log.assign(shard=j))
    return total, (pd.concat(logs, ignore_index=True) if logs else None)
