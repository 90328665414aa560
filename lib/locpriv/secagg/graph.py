"""Communication graphs of one secure-aggregation shard, the degree rule and the connectivity check.

* ``complete``: every client masks with and shares its secrets to every other
  client (Bonawitz et al. 2017): O(n) keys, O(n K) mask work per client.
* ``harary``: the Harary graph H(k, n) — clients on a cycle, each joined to the
  r = k/2 nearest on either side — under a uniformly random relabelling of the
  clients, k even (Bell et al. 2020, §3.2): O(log n) keys and O(K log n) mask
  work per client.  The layout (which client sits where on the cycle) is public.

Whence the layout (``layout_seed``): the server must not choose it — a server that places its
sybils around a victim, or a cut where it plans dropouts, breaks both the secrecy and the
disconnection bound below.  The layout is the permutation drawn from SHA-256 of the round's
public transcript up to key advertisement: the session context and the Merkle root of every
advertised key set (``pki.KeySet``), which holds each honest client's fresh X25519 keys.  The
server learns the layout only after it has committed to the key set, and in the active
variant every client recomputes it from the root it verified.  What a server can still do
is re-draw: exclude or add advertisements and hash again.  Each re-draw is one hash, so the
failure probabilities below are per draw; a server that can afford 2^g draws multiplies them
by 2^g (stated in docs/studies.md).  A simulation that must replay a transcript
(``beacon``) may fix the layout from a public stream instead.

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

``auto_degree`` — the smallest even k >= ⌈log2 n⌉ that meets the three targets for a
planned dropout rate ρ and a corrupted fraction γ (clients that collude with the server,
e.g. sybils it registered), d = ⌊(ρ + γ) n⌋ dropped-or-corrupted clients whose identities
do not depend on the layout (Bell et al. 2020, Thm 3.6's conditions; fcp/secagg's rule,
google-parfait/federated-compute, restated):

* privacy/availability: P(survivors' graph disconnected) < 2^-40.  Two gaps of
  length >= r contain two runs of r dropped positions, the second starting
  between r + 1 and n − r − 1 positions after the first: at most n (n − k − 1) / 2
  unordered pairs of runs; a given set of k positions is all dropped with
  probability C(n − k, d − k) / C(n, d) = d! (n − k)! / (n! (d − k)!) under the
  random layout (0 if d < k).  The union bound of the product is required < 2^-40.
  At run time the check above makes privacy unconditional; this bound makes the
  refusal (a failed shard) that rare.
  A corrupted client is as good as dropped for this (the server knows its masks), hence ρ + γ.
* secrecy against γ n corrupted clients: n · P(Binomial(k + 1, γ) >= t) < 2^-40 — no honest
  client has t corrupted holders among its k + 1 (with t of them the server rebuilds one of its
  secrets without asking anyone honest).  With γ = 0 this holds for any k.
* correctness: n · P(Binomial(k, 1 − ρ − γ) < t) <= 1e-6, t of a dropped client's k
  neighbours (its holders) must survive and be honest for its masks to be removed.

n − 1 (the complete graph) if no smaller k qualifies.
"""

from __future__ import annotations

import functools
import hashlib
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


def log_p_corrupted_holders(n: int, k: int, fraction: float, corrupt: float) -> float:
    """Natural log of n · P(Binomial(k + 1, γ) >= t): the union bound on some client having t corrupted
    holders among its k + 1 under the layout-independent corruption of a fraction γ (module doc)."""
    if corrupt <= 0:
        return -math.inf
    from scipy import stats

    return math.log(n) + float(stats.binom.logsf(threshold(k + 1, fraction) - 1, k + 1, corrupt))


@functools.lru_cache(maxsize=256)  # every client and the server ask for the same shard size
def auto_degree(
    n: int, dropout: float, fraction: float, corrupt: float = 0.0, failure: float = CORRECTNESS_FAILURE
) -> int:
    """Smallest even k >= ⌈log2 n⌉ meeting the disconnection, secrecy and correctness targets (module doc)."""
    if n <= 3:
        return n - 1
    from scipy import stats  # ~0.5 s to import: not at the top, every heatmap job imports this module

    lost = dropout + corrupt
    dropped = math.floor(lost * n + 1e-12)
    k = max(2, math.ceil(math.log2(n)))
    k += k % 2
    bound = -DISCONNECT_BITS * math.log(2)
    while k < n - 1:
        connected = log_p_disconnected(n, k, dropped) < bound
        secret = log_p_corrupted_holders(n, k, fraction, corrupt) < bound
        correct = n * stats.binom.cdf(threshold(k + 1, fraction) - 1, k, 1 - lost) <= failure
        if connected and secret and correct:
            return k
        k += 2
    return n - 1


def layout_seed(context: bytes, public: bytes) -> bytes:
    """The layout's seed: SHA-256 of the session context and the public randomness (the key set's
    Merkle root, or a simulation's beacon), domain-separated (module doc)."""
    return hashlib.sha256(b"locpriv-secagg/layout|" + len(context).to_bytes(4, "little") + context + public).digest()


@functools.lru_cache(maxsize=8)  # the clients of a simulated shard and its server share one public graph
def for_round(n: int, kind: str, degree: int, seed: bytes) -> Graph:
    """The public graph of a round from its layout seed (``layout_seed``)."""
    return Graph.build(n, kind, degree, np.random.default_rng(int.from_bytes(seed, "little")))


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

    def neighbours(self, u: int) -> np.ndarray:
        """u's neighbours, sorted (one row of ``neighbour_table`` in O(k))."""
        if self.complete:
            return np.delete(np.arange(self.n), u)
        r = self.degree // 2
        offsets = np.concatenate([-np.arange(1, r + 1), np.arange(1, r + 1)])
        return np.sort(self.position[(self.where[u] + offsets) % self.n])

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
