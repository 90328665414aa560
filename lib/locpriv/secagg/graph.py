"""Communication graphs of one secure-aggregation shard.

* ``complete``: every client masks with and shares its secrets to every other
  client (Bonawitz et al. 2017): O(n) keys, O(n K) mask work per client.
* ``harary``: a random k-regular graph (Bell et al. 2020, §3.2): the Harary graph
  H(k, n) (clients on a cycle, each joined to the k/2 nearest on either side) under
  a uniformly random relabelling of the clients, k even.  Bell et al. show
  k = O(log n) neighbours keep the server's view as private as the complete
  graph's up to a failure probability, with O(log n) keys and O(K log n) mask
  work per client.

``auto_degree`` picks the smallest even k >= ⌈log2 n⌉ whose probability that some
client keeps fewer than t surviving neighbours (then its secrets cannot be
reconstructed and the shard fails) is below ``failure`` under independent dropout.
"""

from __future__ import annotations

import math

import numpy as np

GRAPHS = ("complete", "harary")


def threshold(degree: int, fraction: float) -> int:
    """Shares needed to reconstruct: ⌊fraction · h⌋ + 1 of a client's h holders."""
    if not 0 < fraction < 1:
        raise ValueError(f"threshold fraction must be in (0, 1), got {fraction}")
    return min(degree, math.floor(fraction * degree) + 1)


def auto_degree(n: int, dropout: float, fraction: float, failure: float = 1e-6) -> int:
    """Smallest even k >= ⌈log2 n⌉ with n · P(Binomial(k, 1 − dropout) < t(k + 1)) <= failure.

    n − 1 (the complete graph) if no smaller k qualifies."""
    if n <= 2:
        return n - 1
    from scipy import stats  # ~0.5 s to import: not at the top, every heatmap job imports this module

    k = max(2, math.ceil(math.log2(n)))
    k += k % 2
    while k < n - 1:
        # a dropped client's k neighbours must keep t(k + 1) survivors (holders are the neighbours and itself)
        if n * stats.binom.cdf(threshold(k + 1, fraction) - 1, k, 1 - dropout) <= failure:
            return k
        k += 2
    return n - 1


def neighbours(n: int, kind: str, degree: int | None, rng: np.random.Generator) -> np.ndarray:
    """(n, k) neighbour ids of each client (sorted per row); k = n − 1 for the complete graph."""
    if kind not in GRAPHS:
        raise ValueError(f"graph must be one of {GRAPHS}, got {kind!r}")
    if n < 2:
        raise ValueError(f"a shard needs at least 2 clients, got {n}")
    ids = np.arange(n)
    if kind == "complete" or degree is None or degree >= n - 1:
        full = np.broadcast_to(ids, (n, n))
        return full[~np.eye(n, dtype=bool)].reshape(n, n - 1)
    if degree < 2 or degree % 2:
        raise ValueError(f"Harary graph degree must be an even number >= 2, got {degree}")
    position = rng.permutation(n)                      # client at cycle position i is position[i]
    where = np.argsort(position)                       # cycle position of each client
    offsets = np.concatenate([-np.arange(1, degree // 2 + 1), np.arange(1, degree // 2 + 1)])
    return np.sort(position[(where[:, None] + offsets) % n], axis=1)
