"""One simulated secure-aggregation sub-query at population scale ([DDP-Heatmaps] §4, Alg. 1).

Shared by the adaptive algorithm (``adaptive``) and every baseline (``baselines``).

Users are exchangeable within a pixel, so a sample is held as per-pixel counts
of a 2^D x 2^D population image (pixel [x, y] = number of users there; x is the
first array axis, as in the reference code's ``image[x, y]``).  A sub-query:

1. draws ``n`` users (``UserPool.draw``: multivariate hypergeometric, i.e.
   uniform without replacement);
2. splits them into ⌈n / S⌉ shards of at most S users (the last one smaller)
   and lets each admitted user drop out independently with probability
   ``dropout_rate`` (``survive``); which users drop is a uniform subset of the
   sample, again a multivariate hypergeometric draw of the survivors' pixels;
3. sums the survivors' encoded vectors with ``np.bincount`` (``noisy_histogram``:
   one entry per (pixel, index), never one per user) and adds the exact law of
   the sum of all survivors' Pólya noise shares (``polya.sharded_aggregate_noise``).

Fixed shards (``UserPool.from_pixels(..., shard_size=S)``, the location DAG's
users): user u sits in shard u // S in every sub-query, and step 3 is done per shard
(each shard's own noise, ``polya.aggregate_noise``); the release then also holds
each shard's noisy sum (``Release.shard_sums``): what the aggregation server
learns, which the informed adversary (``locpriv.adversary.informed``) reads.
Without fixed shards only the total is drawn (users are exchangeable within a pixel).

Ideal aggregation: the modular reduction of §4 is post-processing and is not
simulated here (overflow is measured in ``multi_location``).  ``SecAgg.mode``
"per_client" and "secure" replace steps 2–3 by one vector per client
(``clients``), summed mod 2^bits ideally or by the masking protocol
(``locpriv.secagg``); step 1 and the accounting are shared by every mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..secagg import ProtocolParams
from . import clients, polya

SAMPLING_MODES = ("disjoint", "fixed")
AGGREGATIONS = ("population", "per_client", "secure")
TRANSPORTS = ("simulation", "loopback")


@dataclass(frozen=True)
class SecAgg:
    """Shard size S and dropout; the noise is provisioned for n_dp = ⌈S (1 − ρ_plan)⌉ survivors.

    shard_size default 10 000: the SecAgg round size of the paper's §6 and of the
    reference code (``secagg_round_size=10000`` in analytics/location_heatmaps).
    ``planned_dropout`` None means "plan for the actual rate" (over-provisioned noise
    when the actual rate is positive).  ``mode``: one of ``AGGREGATIONS`` (see
    ``clients``); ``protocol``: m = 2^bits for the per-client modes and the masking
    protocol's graph, threshold and variant; ``entropy``: the secure mode's source of
    secrets (keys, self-mask seeds, Shamir coefficients): None, the OS, except where a
    test or benchmark must replay masked vectors (then a seeded Generator of its own,
    never the DP noise's stream); ``layout``: a public stream standing in for a randomness
    beacon that places clients on the Harary graph (seeded, so a study's server transcript is
    reproducible; None: the deployment's rule, a hash of the committed key set that the server
    cannot choose, ``locpriv.secagg.graph``).  No output depends on a secret: the masks cancel.  ``timing_safe``: the
    per-client modes draw every client's shares with fixed work (``polya.client_shares``); the
    population mode simulates the summed shares' exact law and runs no client code.
    ``transport`` (secure mode): "simulation" (clients as objects in this process, ``secagg.simulate``) or
    "loopback" (the service: this process the server, client processes over TLS on 127.0.0.1,
    ``secagg.service.loopback_aggregate``); the same sums.
    """

    shard_size: int = 10_000
    dropout_rate: float = 0.0
    planned_dropout: float | None = None
    mode: str = "population"
    protocol: ProtocolParams = field(default_factory=ProtocolParams)
    entropy: np.random.Generator | None = field(default=None, compare=False, repr=False)
    layout: np.random.Generator | None = field(default=None, compare=False, repr=False)
    timing_safe: bool = False
    transport: str = "simulation"

    def __post_init__(self):
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, got {self.transport!r}")
        if not (isinstance(self.shard_size, (int, np.integer)) and self.shard_size >= 1):
            raise ValueError(f"shard_size must be an integer >= 1, got {self.shard_size!r}")
        if not 0 <= self.dropout_rate < 1:
            raise ValueError(f"dropout_rate must be in [0, 1), got {self.dropout_rate}")
        if self.planned_dropout is not None and not 0 <= self.planned_dropout < 1:
            raise ValueError(f"planned_dropout must be None or in [0, 1), got {self.planned_dropout}")
        if self.mode not in AGGREGATIONS:
            raise ValueError(f"aggregation mode must be one of {AGGREGATIONS}, got {self.mode!r}")

    @property
    def plan(self) -> float:
        return self.dropout_rate if self.planned_dropout is None else self.planned_dropout

    def n_shards(self, n_users: int) -> int:
        return max(1, math.ceil(n_users / self.shard_size))

    def shard_sizes(self, n_users: int) -> np.ndarray:
        sizes = np.full(self.n_shards(n_users), self.shard_size, dtype=np.int64)
        sizes[-1] = n_users - self.shard_size * (len(sizes) - 1)
        return sizes

    def n_dp(self, sizes: np.ndarray) -> np.ndarray:
        return np.array([polya.dp_shard_size(int(s), self.plan) for s in np.unique(sizes)])[
            np.searchsorted(np.unique(sizes), sizes)
        ]


class UserPool:
    """The population as per-pixel user counts, sampled without replacement.

    ``sampling="disjoint"``: users drawn in one sub-query leave the pool, so each
    user takes part in at most one sub-query (a fresh sample per sub-query, as
    the first reference run_experiment.py draws per level, but without overlap);
    ``"fixed"``: the same sample answers every sub-query (the later reference
    run_experiment.py samples once, "same across levels").  The budget is composed
    across sub-queries by basic composition in both modes, as the paper does (§5.5);
    under "disjoint" that is conservative (each user is in one sub-query only).
    """

    def __init__(self, image, sampling: str = "disjoint", shard_images: np.ndarray | None = None):
        image = np.asarray(image)
        if image.ndim != 2 or image.shape[0] != image.shape[1] or image.shape[0] & (image.shape[0] - 1):
            raise ValueError(f"population image must be 2^D x 2^D, got shape {image.shape}")
        if not np.issubdtype(image.dtype, np.integer) or (image < 0).any():
            raise ValueError("population image must hold non-negative integer user counts")
        if sampling not in SAMPLING_MODES:
            raise ValueError(f"sampling must be one of {SAMPLING_MODES}, got {sampling!r}")
        self.depth = int(image.shape[0]).bit_length() - 1
        self.remaining = image.astype(np.int64).ravel().copy()
        self.sampling = sampling
        self._fixed: np.ndarray | None = None
        # (n_shards, pixels) users per fixed shard, or None (shards are dealt per sub-query)
        self.shard_images = shard_images

    @classmethod
    def from_pixels(cls, x, y, depth: int, sampling: str = "disjoint", shard_size: int | None = None) -> UserPool:
        """From per-user pixel indices (one location per user).

        ``shard_size`` S: fixed secure-aggregation shards, user i (in the given order) in
        shard i // S in every sub-query; only with ``sampling="fixed"`` (every user
        answers every sub-query).
        """
        x = np.asarray(x, dtype=np.int64)
        y = np.asarray(y, dtype=np.int64)
        side = 1 << depth
        if x.shape != y.shape or (x < 0).any() or (y < 0).any() or (x >= side).any() or (y >= side).any():
            raise ValueError(f"user pixels must be equal-shape integers in [0, {side})")
        pixel = x * side + y
        counts = np.bincount(pixel, minlength=side * side)
        if shard_size is None:
            return cls(counts.reshape(side, side), sampling)
        if sampling != "fixed":
            raise ValueError("fixed shards need sampling='fixed' (every user answers every sub-query)")
        shard = np.arange(len(pixel)) // shard_size
        shards = np.bincount(
            shard * side * side + pixel, minlength=(int(shard.max(initial=0)) + 1) * side * side
        ).reshape(-1, side * side)
        return cls(counts.reshape(side, side), sampling, shards)

    @property
    def size(self) -> int:
        return int(self.remaining.sum())

    def draw(self, n_users: int, rng: np.random.Generator) -> np.ndarray:
        """Flat per-pixel counts of n_users drawn uniformly without replacement."""
        if self._fixed is not None:
            if self._fixed.sum() != n_users:
                raise ValueError(
                    f"fixed sampling answers every sub-query with the same {self._fixed.sum()} users,"
                    f" got a request for {n_users}"
                )
            return self._fixed
        if not 1 <= n_users <= self.size:
            raise ValueError(
                f"users_per_round={n_users} must be in [1, {self.size}] (users left in the pool; "
                f"disjoint sampling removes every sub-query's users)"
            )
        sample = rng.multivariate_hypergeometric(self.remaining, n_users)
        if self.sampling == "disjoint":
            self.remaining -= sample
        else:
            self._fixed = sample
        return sample


@dataclass(frozen=True)
class Survivors:
    """The users of one sub-query who report back, and their shards' noise plan."""

    counts: np.ndarray  # flat per-pixel counts of surviving users
    depth: int
    n_sampled: int
    shard_survivors: np.ndarray
    shard_n_dp: np.ndarray
    clients: clients.ClientShards | None = None  # per-client modes only
    shard_counts: np.ndarray | None = None  # fixed shards: (n_shards, pixels) survivors per shard

    @property
    def n_survivors(self) -> int:
        return int(self.shard_survivors.sum())

    def pixels(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        nz = np.flatnonzero(self.counts)
        return nz >> self.depth, nz & ((1 << self.depth) - 1), self.counts[nz]


def survive(
    sample: np.ndarray, depth: int, secagg: SecAgg, rng: np.random.Generator, shard_images: np.ndarray | None = None
) -> Survivors:
    """The survivors of ``sample`` (flat per-pixel counts); ``shard_images`` (fixed shards, see
    ``UserPool.from_pixels``) must split the sample into ``secagg``'s shard sizes."""
    n = int(sample.sum())
    sizes = secagg.shard_sizes(n)
    if shard_images is not None:
        return _survive_fixed(shard_images, sample, depth, secagg, sizes)
    if secagg.mode != "population":
        dealt = clients.deal(sample, secagg.shard_size, secagg.dropout_rate, rng)
        return Survivors(
            np.bincount(dealt.pixel, minlength=len(sample)),
            depth,
            n,
            np.bincount(dealt.shard, minlength=len(sizes)),
            secagg.n_dp(sizes),
            dealt,
        )
    if secagg.dropout_rate > 0:
        kept = rng.binomial(sizes, 1 - secagg.dropout_rate)
        counts = rng.multivariate_hypergeometric(sample, int(kept.sum()))
    else:
        kept, counts = sizes, sample
    return Survivors(counts, depth, n, kept, secagg.n_dp(sizes))


def _survive_fixed(
    shard_images: np.ndarray, sample: np.ndarray, depth: int, secagg: SecAgg, sizes: np.ndarray
) -> Survivors:
    """Survivors of fixed shards: every user (no dropout is simulated with fixed shards).

    Per-client modes deal each shard's users in pixel order (users in one pixel are
    exchangeable, so which of them is which changes no law).
    """
    if secagg.dropout_rate > 0:
        raise ValueError("fixed shards are simulated without dropout: set dropout_rate to 0")
    if not (np.array_equal(shard_images.sum(axis=0), sample) and np.array_equal(shard_images.sum(axis=1), sizes)):
        raise ValueError(
            f"fixed shards of {shard_images.sum(axis=1).tolist()} users do not split the sample into "
            f"shard_size={secagg.shard_size} shards {sizes.tolist()}"
        )
    dealt = None
    if secagg.mode != "population":
        shard, pixel = np.nonzero(shard_images)
        reps = shard_images[shard, pixel]
        shard, pixel = np.repeat(shard, reps), np.repeat(pixel, reps)
        member = np.concatenate([np.arange(size) for size in sizes.tolist()])
        dealt = clients.ClientShards(pixel, shard, member, sizes)
    return Survivors(sample, depth, int(sample.sum()), sizes, secagg.n_dp(sizes), dealt, shard_images)


@dataclass(frozen=True)
class ShardedRound:
    """What the aggregation server learns in one sub-query over fixed shards.

    ``levels``, ``codes``: the vector's entries, the reporting nodes of the sub-query's
    public prefix tree in the vector's order (a pixel reports to its deepest prefix
    among them); ``sums`` (n_shards, K): each shard's noisy sum; ``epsilon``,
    ``sensitivity``: the noise's a = exp(−ε/Δ); ``r`` (n_shards,): each shard's noise is
    Pólya(r_j, a) − Pólya(r_j, a), r_j = k_j / n_dp_j (1: discrete Laplace).
    """

    levels: np.ndarray
    codes: np.ndarray
    epsilon: float
    sensitivity: int
    sums: np.ndarray
    r: np.ndarray


@dataclass(frozen=True)
class Release:
    noisy: np.ndarray  # what the server sees: exact + aggregate noise
    exact: np.ndarray  # survivors' true sum (diagnostics only, never released)
    epsilon: float
    achieved_epsilon: float  # per user, this sub-query (an upper bound when exact evaluation is too costly)
    protocol_transcript: pd.DataFrame | None = None  # secure mode: every message the server received
    # fixed shards: what the server learns, each shard's noisy sum (n_shards, dim), and each shard's
    # Pólya parameter r_j = k_j / n_dp_j (its noise is Pólya(r_j, a) − Pólya(r_j, a), a = exp(−ε/Δ))
    shard_sums: np.ndarray | None = None
    shard_r: np.ndarray | None = None
    sensitivity: int = 1

    def sharded_round(self, levels: np.ndarray, codes: np.ndarray) -> ShardedRound | None:
        """The shard sums with the reporting nodes (level, code) the vector's entries are (fixed shards only)."""
        if self.shard_sums is None:
            return None
        return ShardedRound(
            np.asarray(levels), np.asarray(codes), self.epsilon, self.sensitivity, self.shard_sums, self.shard_r
        )


def _histogram(index: np.ndarray, weight: np.ndarray, dim: int) -> np.ndarray:
    """Σ over pixels of weight × the pixel's encoded vector (``index`` (P,) or (P, m))."""
    weights = np.broadcast_to(weight.reshape((-1,) + (1,) * (index.ndim - 1)), index.shape)
    return np.bincount(index.ravel(), weights=weights.ravel(), minlength=dim).astype(np.int64)


def noisy_histogram(
    survivors: Survivors,
    encode: Callable,
    dim: int,
    epsilon: float,
    sensitivity: int,
    rng: np.random.Generator,
    max_support: int = 20_000,
    secagg: SecAgg | None = None,
) -> Release:
    """Distributed discrete-Laplace sum of the survivors' encoded vectors.

    ``encode(x, y)`` maps pixels to vector indices, shape (P,) for a one-hot or
    (P, m) when each user adds 1 at m indices (then sensitivity is usually m).
    Survivors drawn in a per-client mode are summed client by client with
    ``secagg``'s mode, bits and protocol (``clients.client_sum``).  Fixed shards
    (``survivors.shard_counts``): each shard's sum is drawn on its own (its true
    histogram plus ``polya.aggregate_noise`` for its survivors; with one shard, the
    very draws of the exchangeable path) and kept in ``Release.shard_sums``.
    """
    x, y, weight = survivors.pixels()
    index = np.asarray(encode(x, y), dtype=np.int64)
    exact = _histogram(index, weight, dim)
    achieved = round_achieved_epsilon(survivors, epsilon, sensitivity, max_support)
    fixed = survivors.shard_counts is not None
    shard_r = survivors.shard_survivors / survivors.shard_n_dp if fixed else None
    if survivors.clients is None:
        if not fixed:
            noise = polya.sharded_aggregate_noise(
                survivors.shard_survivors, survivors.shard_n_dp, dim, epsilon, sensitivity, rng
            )
            return Release(exact + noise, exact, float(epsilon), achieved)
        sums = np.zeros((len(survivors.shard_counts), dim), dtype=np.int64)
        for j, k in enumerate(survivors.shard_survivors.tolist()):
            if k:  # a shard with no survivor sends nothing
                sums[j] = _histogram(
                    index, survivors.shard_counts[j][survivors.counts > 0], dim
                ) + polya.aggregate_noise(k, dim, epsilon, sensitivity, int(survivors.shard_n_dp[j]), rng)
        return Release(
            sums.sum(axis=0),
            exact,
            float(epsilon),
            achieved,
            shard_sums=sums,
            shard_r=shard_r,
            sensitivity=int(sensitivity),
        )
    if secagg is None or secagg.mode == "population":
        raise ValueError("survivors drawn client by client need the SecAgg (per_client or secure) that drew them")
    side = 1 << survivors.depth
    client_index = np.asarray(encode(survivors.clients.pixel // side, survivors.clients.pixel % side), dtype=np.int64)
    sums = np.zeros((len(survivors.shard_counts), dim), dtype=np.int64) if fixed else None
    noisy, transcript = clients.client_sum(
        survivors.clients, client_index, dim, epsilon, sensitivity, survivors.shard_n_dp, secagg, rng, shard_sums=sums
    )
    return Release(noisy, exact, float(epsilon), achieved, transcript, sums, shard_r, int(sensitivity))


def round_achieved_epsilon(survivors: Survivors, epsilon: float, sensitivity: int, max_support: int) -> float:
    """Worst shard's pure-DP level (users sit in one shard each, so the max is the round's).

    Shards with k >= n_dp give epsilon; below, ``polya.achieved_epsilon`` of the
    shard with the smallest k / n_dp (the least noise).  Its exact evaluation
    convolves pmfs over a support ~ log(1e12) / (1 − a), quadratic in time, so
    when that support exceeds ``max_support`` (per-round epsilon below ~1e-3) the
    closed-form upper bound ``polya.achieved_epsilon_bound`` is returned instead:
    a valid, slightly larger, level (never NaN).
    """
    ratio = survivors.shard_survivors / survivors.shard_n_dp
    j = int(np.argmin(ratio))
    k, n_dp = int(survivors.shard_survivors[j]), int(survivors.shard_n_dp[j])
    if k >= n_dp:
        return float(epsilon)
    if k < 1:
        return math.inf
    from scipy import stats  # ~0.5 s to import: only the runs that measure an achieved epsilon need it

    a = math.exp(-epsilon / sensitivity)
    if stats.nbinom.isf(1e-12, k / n_dp, 1 - a) > max_support:
        return polya.achieved_epsilon_bound(k, n_dp, epsilon, int(sensitivity))
    return polya.achieved_epsilon(k, n_dp, epsilon, int(sensitivity))
