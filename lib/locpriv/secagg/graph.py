"""Communication graphs of one secure-aggregation shard, the degree rule and the connectivity check.

* ``complete``: every client masks with and shares its secrets to every other
  client (Bonawitz et al. 2017): O(n) keys, O(n K) mask work per client.
* ``harary``: the Harary graph H(k, n) — clients on a cycle, each joined to the
  r = k/2 nearest on either side — under a uniformly random relabelling of the
  clients, k even (Bell et al. 2020, §3.2): O(log n) keys and O(K log n) mask
  work per client.  The layout (which client sits where on the cycle) is public.

Why connectivity matters (Bell et al. 2020): the pairwise masks of the survivors
cancel inside each connected component of the survivors' graph, so the server
can unmask the sum of every component, not only the total.  The server therefore
refuses to unmask a disconnected survivors' graph (``Graph.components``), and
so does every client before it reveals a share (``client``).

On H(k, n) with r = k/2 the survivors' graph is disconnected exactly when at least
two of the cyclic gaps between consecutive surviving positions are longer than r
(an edge spans at most r positions, so a gap longer than r cuts the cycle there,
and two cuts split it; one cut leaves a path).  ``Graph.components`` counts such
gaps in O(n).

``auto_degree`` — the smallest even k >= ⌈log2 n⌉ that meets both targets for a
planned dropout rate ρ, d = ⌊ρ n⌋ dropouts whose identities do not depend on the
layout (fcp/secagg's rule, google-parfait/federated-compute, restated):

* privacy/availability: P(survivors' graph disconnected) < 2^-40.  Two gaps of
  length >= r contain two runs of r dropped positions, the second starting
  between r + 1 and n − r − 1 positions after the first: at most n (n − k − 1) / 2
  unordered pairs of runs; a given set of k positions is all dropped with
  probability C(n − k, d − k) / C(n, d) = d! (n − k)! / (n! (d − k)!) under the
  random layout (0 if d < k).  The union bound of the product is required < 2^-40.
  At run time the check above makes privacy unconditional; this bound makes the
  refusal (a failed shard) that rare.
* correctness: n · P(Binomial(k, 1 − ρ) < t) <= 1e-6, t of a dropped client's k
  neighbours (its holders) must survive for its masks to be removed.

n − 1 (the complete graph) if no smaller k qualifies.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

GRAPHS = ("complete", "harary")
DISCONNECT_BITS = 40  # P(survivors' graph disconnected) < 2^-40 (fcp/secagg's security parameter)
CORRECTNESS_FAILURE = 1e-6  # n · P(a dropped client keeps < t surviving holders) at most this


def threshold(holders: int, fraction: float) -> int:
    """Shares needed to reconstruct: ⌊fraction · holders⌋ + 1, a strict majority for fraction >= 1/2."""
    if not 0.5 <= fraction < 1:
        raise ValueError(
            f"threshold fraction must be in [0.5, 1), got {fraction}: below 1/2 a server that "
            "tells two halves of a client's holders different survivor lists rebuilds both its secrets"
        )
    t = min(holders, math.floor(fraction * holders) + 1)
    if t < 2:
        raise ValueError(
            f"threshold t = {t} of {holders} holders: one share would be the secret itself; "
            "a shard needs at least 2 clients"
        )
    return t


def log_p_disconnected(n: int, k: int, dropped: int) -> float:
    """Natural log of the union bound on P(survivors' graph of H(k, n) disconnected), ``dropped`` clients
    at layout-independent positions (module doc); -inf when fewer than k drop."""
    if dropped < k or n - k - 1 <= 0:
        return -math.inf
    return (
        math.log(n)
        + math.log(n - k - 1)
        - math.log(2)
        + math.lgamma(dropped + 1)
        + math.lgamma(n - k + 1)
        - math.lgamma(n + 1)
        - math.lgamma(dropped - k + 1)
    )


@functools.lru_cache(maxsize=256)  # every client and the server ask for the same shard size
def auto_degree(n: int, dropout: float, fraction: float, failure: float = CORRECTNESS_FAILURE) -> int:
    """Smallest even k >= ⌈log2 n⌉ meeting the disconnection and correctness targets (module doc)."""
    if n <= 3:
        return n - 1
    from scipy import stats  # ~0.5 s to import: not at the top, every heatmap job imports this module

    dropped = math.floor(dropout * n + 1e-12)
    k = max(2, math.ceil(math.log2(n)))
    k += k % 2
    while k < n - 1:
        connected = log_p_disconnected(n, k, dropped) < -DISCONNECT_BITS * math.log(2)
        correct = n * stats.binom.cdf(threshold(k + 1, fraction) - 1, k, 1 - dropout) <= failure
        if connected and correct:
            return k
        k += 2
    return n - 1


@dataclass(frozen=True)
class Graph:
    """The public graph of one shard: ``position[i]`` is the client at cycle position i (Harary), r = k / 2."""

    n: int
    degree: int
    position: np.ndarray

    def __post_init__(self):
        where = np.empty(self.n, dtype=np.int64)
        where[self.position] = np.arange(self.n)
        object.__setattr__(self, "where", where)  # cycle position of each client

    @classmethod
    def build(cls, n: int, kind: str, degree: int | None, layout: np.random.Generator) -> Graph:
        if kind not in GRAPHS:
            raise ValueError(f"graph must be one of {GRAPHS}, got {kind!r}")
        if n < 2:
            raise ValueError(f"a shard needs at least 2 clients, got {n}")
        if kind == "complete" or degree is None or degree >= n - 1:
            return cls(n, n - 1, np.arange(n))
        if degree < 2 or degree % 2:
            raise ValueError(f"Harary graph degree must be an even number >= 2, got {degree}")
        return cls(n, degree, layout.permutation(n))

    @property
    def complete(self) -> bool:
        return self.degree == self.n - 1

    def neighbour_table(self) -> np.ndarray:
        """(n, k) neighbour ids of every client, sorted per row."""
        if self.complete:
            full = np.broadcast_to(np.arange(self.n), (self.n, self.n))
            return full[~np.eye(self.n, dtype=bool)].reshape(self.n, self.n - 1)
        r = self.degree // 2
        offsets = np.concatenate([-np.arange(1, r + 1), np.arange(1, r + 1)])
        return np.sort(self.position[(self.where[:, None] + offsets) % self.n], axis=1)

    def holders(self, owner: int) -> np.ndarray:
        """The owner and its neighbours: the clients holding a share of its secrets."""
        if self.complete:
            return np.arange(self.n)
        r = self.degree // 2
        return self.position[(self.where[owner] + np.arange(-r, r + 1)) % self.n]

    def components(self, alive: np.ndarray) -> int:
        """Connected components of the graph induced on ``alive`` (bool, length n); 0 if nobody is alive.

        Harary: one more than the number of cyclic gaps longer than r between consecutive alive
        positions, when there are at least two such gaps (module doc); the complete graph: 1."""
        alive = np.asarray(alive, dtype=bool)
        if not alive.any():
            return 0
        if self.complete:
            return 1
        on_cycle = np.flatnonzero(alive[self.position])
        gaps = np.diff(np.append(on_cycle, on_cycle[0] + self.n))
        cuts = int((gaps > self.degree // 2).sum())
        return 1 if cuts <= 1 else cuts
