"""Continual release over T windows: the binary-tree mechanism, against window-by-window release.

The binary-tree mechanism (Dwork, Naor, Pitassi & Rothblum, "Differential Privacy Under Continual
Observation", STOC 2010; Chan, Shi & Song, "Private and Continual Release of Statistics", ACM TISSEC
2011) releases, for every dyadic interval of windows [j 2^l, (j + 1) 2^l) of the T windows
(levels l = 0 .. L, L = ceil(log2 T)), the sum of the windows' counts plus noise.  A window's map is its
leaf (level 0); the running total up to window t is the sum of at most L + 1 nodes (the binary digits
of t).

Guarantee (``guarantee``), add/remove one person, who has at most ``rows`` rows in each of at most
``windows`` windows: the nodes of one level partition the windows, so the person's rows add at most
rows x windows to the L1 norm of each level's node vector, and at most (L + 1) rows windows over the
tree.  Discrete Laplace noise of scale (L + 1) rows windows / epsilon on every node (integer counts:
exact, ``dp.sampling``) is therefore epsilon-DP for the person (the Laplace mechanism, Dwork & Roth
2014 Thm 3.6).  Window by window, the same person costs rows / scale per window they appear in, so
the windows compose (basic) to rows x windows / scale.

What each pays at equal person-level epsilon (``variance``, exact for the discrete Laplace's variance
2 e^(-1/s) / (1 - e^(-1/s))^2, about 2 s^2):

* a window's own map: window by window, scale rows windows / epsilon; the tree's leaf has (L + 1) times
  that scale.  The tree never helps a window's own map;
* the running total up to t: window by window it is the sum of t leaves; the tree sums popcount(t) <= L + 1
  nodes.  The tree wins only when t > popcount(t) (L + 1)^2, i.e. for long horizons: its log T is
  (log T)^3 in variance against T.

So the "log T instead of T" of continual release is the running total's, under event-level privacy
(``windows`` = 1).  A person present in every window (``windows`` = T) costs T in either mechanism: the T
per-window counts change by ``rows`` each, and no mechanism can hide T independent changes for less than
the composition of T releases.
"""

from __future__ import annotations

import math

import numpy as np

from .record import ADD_REMOVE, Guarantee
from .sampling import discrete_laplace, exact_scale


def levels(T: int) -> int:
    """L + 1: the tree's levels over T windows (L = ceil(log2 T))."""
    if not (isinstance(T, int) and T >= 1):
        raise ValueError(f"the number of windows T must be an integer >= 1, got {T!r}")
    return math.ceil(math.log2(T)) + 1


def scale(T: int, epsilon: float, *, rows: int = 1, windows: int | None = None, mode: str = "tree") -> float:
    """Noise scale per released count for person-level ``epsilon`` (add/remove one person)."""
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    windows = T if windows is None else min(windows, T)
    per_person = rows * windows
    return (levels(T) if mode == "tree" else 1) * per_person / epsilon


def release(counts: np.ndarray, epsilon: float, rng: np.random.Generator, *, rows: int = 1, windows=None) -> list:
    """The tree's noisy nodes: one integer array per level, node j of level l the windows [j 2^l, (j+1) 2^l).

    ``counts``: (T, ...) integer counts per window (a map per window).
    """
    counts = np.asarray(counts)
    if not np.issubdtype(counts.dtype, np.integer):
        raise ValueError("counts must be integers (a count per window and cell)")
    T = counts.shape[0]
    s = scale(T, epsilon, rows=rows, windows=windows)
    out = []
    for level in range(levels(T)):
        width = 2**level
        sums = np.stack([counts[j : j + width].sum(axis=0) for j in range(0, T, width)])
        out.append(sums + discrete_laplace(s, rng, size=sums.shape))
    return out


def window(nodes: list, t: int) -> np.ndarray:
    """Window t's map: its leaf."""
    return nodes[0][t]


def running_total(nodes: list, t: int) -> np.ndarray:
    """The sum of windows 0 .. t - 1 from the popcount(t) nodes of t's binary digits."""
    total, start = 0, 0
    for level in reversed(range(len(nodes))):
        if t - start >= 2**level:
            total = total + nodes[level][start >> level]
            start += 2**level
    return total


def guarantee(T: int, epsilon: float, *, rows: int = 1, windows: int | None = None) -> Guarantee:
    """The person-level record of one tree release over T windows (module docstring)."""
    windows = T if windows is None else min(windows, T)
    return Guarantee(
        model="epsilon-DP (central), binary-tree continual release",
        epsilon=float(epsilon),
        delta=0.0,
        relation=f"{ADD_REMOVE}: a person with up to {rows} row(s) in each of up to {windows} of the {T} windows",
        covers=f"every dyadic node of the {T} windows' maps ({levels(T)} levels)",
        discretisation="integer counts plus integer (discrete Laplace) noise: exact",
        note=f"node L1 sensitivity {levels(T)} levels x {rows} x {windows}; Dwork et al. 2010, Chan et al. 2011",
        trust_model="central",
    )


def _var(s: float) -> float:
    """Variance of the discrete Laplace of scale s: 2 q / (1 - q)^2, q = e^(-1/s)."""
    q = math.exp(-1.0 / exact_scale(s))
    return 2 * q / (1 - q) ** 2


def variance(T: int, epsilon: float, *, rows: int = 1, windows: int | None = None) -> dict:
    """Per-cell noise variance of a window's map and of the running total (mean over t = 1 .. T), tree vs
    window by window, at equal person-level ``epsilon``."""
    tree, flat = (
        _var(scale(T, epsilon, rows=rows, windows=windows)),
        _var(scale(T, epsilon, rows=rows, windows=windows, mode="windowed")),
    )
    popcount = np.mean([bin(t).count("1") for t in range(1, T + 1)])
    return {
        "window_tree": tree,
        "window_windowed": flat,
        "total_tree": float(popcount) * tree,
        "total_windowed": (T + 1) / 2 * flat,
    }
