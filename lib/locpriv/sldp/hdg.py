"""HDG and TDG for two-dimensional locations under ε-LDP.

Yang, Wang, Li, Cheng, Yuan, Tian: "Answering Multi-Dimensional Range Queries under Local
Differential Privacy", VLDB 2021.  The paper's text is not available here; every detail below
follows the authors' public code (github.com/YangJianyu-bupt/privmdr: ``HDG.py``, ``TDG.py``,
``choose_granularity.py``, ``consistency_method.py``, ``frequency_oracle.py``), for d = 2
attributes (x, y) on a fine ``resolution`` x ``resolution`` grid of the public box (privmdr's
discrete attribute domain).

HDG: the users are split, independently of their data, into k = 3 groups of (nearly) equal
size, one per attribute group: the 1-D grids of x and of y (g1 cells each) and the 2-D grid of
(x, y) (g2 x g2 cells).  Each user sends one OUE report (Wang et al., USENIX Security 2017) over
its group's grid with the whole ε.  The server

1. debiases each group's counts and scales them to the population, (C - N_j q) / (p - q) N / N_j;
2. makes the grids consistent: Norm-Sub (negatives to 0, the rest shifted to sum N) on each grid,
   then, per attribute and per 2-D column, the inverse-variance weighted average of the column's
   totals in the 1-D and the 2-D grid (weights 1/C, C the cells summed: g1/g2 and g2), each
   grid's cells shifted equally to it; this alternation 100 times, then Norm-Sub once more;
3. the weighted update: a resolution x resolution matrix, uniform at first, scaled in turn to
   every 1-D cell's and every 2-D cell's consistent count (iterative proportional fitting),
   until it moves by less than one user (L1) or 100 rounds;
4. answers a range query by summing the matrix over it (fractions of fine cells at its edges).

TDG: one group, every user on the 2-D grid (granularity for k = 1), Norm-Sub, uniform within
each cell (for d = 2 there is nothing to make consistent and no weighted update).

Granularity guideline (privmdr ``choose_granularity.py``; Qardaji, Yang, Li: "Differentially
private grids for geospatial data", ICDE 2013, adapted to OUE's variance): with k groups,
g1 = (N (e^ε - 1)^2 α1^2 / (2 k e^ε))^(1/3) and g2 = (2 α2 (e^ε - 1) (N / (k e^ε))^(1/2))^(1/2),
α1 = 0.7, α2 = 0.03, each capped at the resolution and rounded to the nearest power of two (at
least 2).  g2 balances OUE's noise against the non-uniformity inside a cell as Qardaji et al.'s
m = (N ε / 10)^(1/2) does for Laplace counts: their ε is replaced by the ε' whose Laplace variance
2/ε'^2 equals an OUE cell's, 4 N e^ε / (e^ε - 1)^2, which gives (e^ε - 1) (N / (2 e^ε))^(1/2) / 10
under the root, i.e. α2 = 1 / (10 √8) ≈ 0.035 against privmdr's 0.03 (``ldp_grid.grid_level``).

Deviations from privmdr, none in what a user sends: the weighted update scales all cells of
one grid before renormalising (privmdr renormalises after each cell; both keep the matrix a
uniform start times per-cell factors, so they have the same fixed point); g1 is raised to g2
when the rounding puts it below (privmdr then divides by zero); answers are the matrix sums
(privmdr answers a query's fully covered 2-D cells from their consistent counts, which the
matrix's block sums equal up to the last renormalisation, a relative 1/N).

Guarantee (ε-LDP, any two inputs of one user): the group is a public function of the user's
identity, not of its location, and the user's only message is one OUE report over that group's
grid, whose probability ratio between any two inputs is at most p (1 - q) / (q (1 - p)) = e^ε
(p = 1/2, q = 1 / (e^ε + 1)).  Granularities depend on N and ε only.  Everything the server
computes is post-processing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..dp.grid import finite
from .ldp_grid import granularity_2d, oue_bits, oue_probabilities, round_granularity

ALPHA_1 = 0.7  # privmdr choose_granularity.py (alpha_2: ldp_grid.ALPHA_2)
ITERATIONS = 100  # privmdr consistency_iteration_num_max and weighted_update_iteration_num_max
DEFAULT_RESOLUTION = 256  # fine grid: the SLDP range workload's smallest query side is 1/256
VARIANTS = ("hdg", "tdg")
# attribute groups per variant: the 1-D grids of x and y, the 2-D grid of (x, y)
GROUPS = {"hdg": ("x", "y", "xy"), "tdg": ("xy",)}


def granularity_1d(n: int, epsilon: float, groups: int) -> float:
    """The guideline's 1-D granularity (unrounded)."""
    e = math.exp(epsilon)
    return (n * (e - 1) ** 2 * ALPHA_1**2 / (2 * groups * e)) ** (1 / 3)


def granularities(
    n: int, epsilon: float, variant: str = "hdg", resolution: int = DEFAULT_RESOLUTION
) -> tuple[int, int]:
    """(g1, g2) of ``variant`` for N users (g1 = g2 for TDG, which has no 1-D grid)."""
    _check(variant, resolution)
    k = len(GROUPS[variant])
    g2 = round_granularity(granularity_2d(n, epsilon, k), resolution)
    if variant == "tdg":
        return g2, g2
    return max(round_granularity(granularity_1d(n, epsilon, k), resolution), g2), g2


def _check(variant: str, resolution: int) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}, got {variant!r}")
    if not (isinstance(resolution, (int, np.integer)) and resolution >= 2 and resolution & (resolution - 1) == 0):
        raise ValueError(f"resolution must be a power of two >= 2, got {resolution!r}")


# --- client side -------------------------------------------------------------------------------


def assign_groups(users: np.ndarray, n_groups: int) -> np.ndarray:
    """Each user's group from its id alone (public, data-independent; shard-independent).

    A fixed 64-bit mix (splitmix64's finaliser) of the id, modulo the number of groups: ids
    that follow any pattern (sorted by source, by time) still spread evenly over the groups.
    """
    z = np.asarray(users, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(n_groups)).astype(np.int64)


def _index(coord: np.ndarray, lo: float, hi: float, cells: int) -> np.ndarray:
    """Cell of each coordinate among ``cells`` equal cells of [lo, hi] (the upper edge in the last)."""
    return np.clip(((coord - lo) / (hi - lo) * cells).astype(np.int64), 0, cells - 1)


def values(xy: np.ndarray, box, group: str, g1: int, g2: int) -> np.ndarray:
    """What a user of ``group`` encodes: its cell of that group's grid (2-D: x index * g2 + y index)."""
    xmin, xmax, ymin, ymax = box
    if group == "x":
        return _index(xy[:, 0], xmin, xmax, g1)
    if group == "y":
        return _index(xy[:, 1], ymin, ymax, g1)
    return _index(xy[:, 0], xmin, xmax, g2) * g2 + _index(xy[:, 1], ymin, ymax, g2)


def domain_size(group: str, g1: int, g2: int) -> int:
    return g2 * g2 if group == "xy" else g1


def client_reports(
    xy: np.ndarray, group: np.ndarray, box, variant: str, g1: int, g2: int, epsilon: float, rng: np.random.Generator
) -> list[np.ndarray]:
    """Every user's OUE bits over its group's grid: one (N_j, domain) bool array per group, each
    in user order (``group`` indexes ``GROUPS[variant]``)."""
    xy = finite(xy, "HDG locations")
    out = []
    for j, name in enumerate(GROUPS[variant]):
        members = np.flatnonzero(group == j)
        out.append(oue_bits(values(xy[members], box, name, g1, g2), domain_size(name, g1, g2), epsilon, rng))
    return out


# --- server side -------------------------------------------------------------------------------


def norm_sub(estimates: np.ndarray, total: float, tolerance: float = 1.0) -> np.ndarray:
    """privmdr's Norm-Sub: negatives to 0 and the positive cells shifted equally, until the
    cells are non-negative and sum to ``total`` within ``tolerance``; all non-positive: uniform."""
    est = np.array(estimates, dtype=float)
    while abs(est.sum() - total) > tolerance or (est < 0).any():
        if (est <= 0).all():
            est[:] = total / est.size
            break
        est[est < 0] = 0.0
        positive = est > 0
        est[positive] += (total - est.sum()) / positive.sum()
    return est


def debiased(ones: np.ndarray, n_group: int, n: int, epsilon: float) -> np.ndarray:
    """OUE's unbiased counts of a group, scaled from its N_j users to the population of N."""
    p, q = oue_probabilities(epsilon)
    if n_group == 0:
        return np.zeros(len(ones))
    return (np.asarray(ones, dtype=float) - n_group * q) / (p - q) * (n / n_group)


def _consistent_columns(one_d: np.ndarray, two_d: np.ndarray, axis: int, g1: int, g2: int) -> None:
    """One attribute's step of privmdr's overall consistency, in place: per 2-D column v, the
    1-D grid's g1/g2 cells in v and the 2-D grid's g2 cells in v shifted to the weighted mean."""
    c1, c2 = g1 // g2, g2
    t1 = one_d.reshape(g2, c1).sum(axis=1)
    t2 = two_d.sum(axis=1 - axis)
    mean = (t1 / c1 + t2 / c2) / (1 / c1 + 1 / c2)
    one_d += np.repeat((mean - t1) / c1, c1)
    if axis == 0:
        two_d += ((mean - t2) / c2)[:, None]
    else:
        two_d += ((mean - t2) / c2)[None, :]


def consistent(grids: dict[str, np.ndarray], n: int, g1: int, g2: int) -> dict[str, np.ndarray]:
    """privmdr ``get_consistent_Grid_set``: Norm-Sub, then ITERATIONS rounds of overall
    consistency and Norm-Sub, ending with Norm-Sub (TDG in 2-D: Norm-Sub only)."""
    out = {k: norm_sub(v, n) for k, v in grids.items()}
    if set(out) != {"x", "y", "xy"}:
        return out
    for it in range(ITERATIONS + 1):
        if it:
            out = {k: norm_sub(v, n) for k, v in out.items()}
        two_d = out["xy"].reshape(g2, g2)
        _consistent_columns(out["x"], two_d, 0, g1, g2)
        _consistent_columns(out["y"], two_d, 1, g1, g2)
    return {k: norm_sub(v, n) for k, v in out.items()}


def weighted_update(grids: dict[str, np.ndarray], n: int, g1: int, g2: int, resolution: int) -> np.ndarray:
    """The (resolution, resolution) matrix of counts fitted to every grid's consistent cells
    (privmdr ``get_weight_update_for_2_way_group``; HDG) or uniform within the 2-D cells (TDG)."""
    if "x" not in grids:
        return np.kron(grids["xy"].reshape(g2, g2), np.ones((resolution // g2,) * 2)) / (resolution // g2) ** 2
    m = np.full((resolution, resolution), n / resolution**2)
    s1, s2 = resolution // g1, resolution // g2
    for _ in range(ITERATIONS):
        before = m.copy()
        for axis, name in ((0, "x"), (1, "y")):
            strips = m.reshape(g1, s1, resolution) if axis == 0 else m.reshape(resolution, g1, s1)
            mass = strips.sum(axis=(1, 2) if axis == 0 else (0, 2))
            factor = np.divide(grids[name], mass, out=np.ones(g1), where=mass > 0)
            m = (strips * (factor[:, None, None] if axis == 0 else factor[None, :, None])).reshape(m.shape)
            m *= n / m.sum()
        blocks = m.reshape(g2, s2, g2, s2)
        mass = blocks.sum(axis=(1, 3))
        factor = np.divide(grids["xy"].reshape(g2, g2), mass, out=np.ones((g2, g2)), where=mass > 0)
        m = (blocks * factor[:, None, :, None]).reshape(m.shape)
        m *= n / m.sum()
        if np.abs(m - before).sum() < 1:
            break
    return m


@dataclass(frozen=True)
class HDGResult:
    matrix: np.ndarray  # (resolution, resolution) estimated counts, [x index, y index]
    g1: int
    g2: int


def release(
    ones: dict[str, np.ndarray], sizes: dict[str, int], n: int, epsilon: float, g1: int, g2: int
) -> dict[str, np.ndarray]:
    """The server's consistent grids from each group's column sums of OUE bits and its size."""
    return consistent({k: debiased(ones[k], sizes[k], n, epsilon) for k in ones}, n, g1, g2)


def hdg(
    points: np.ndarray,
    box,
    epsilon: float,
    rng: np.random.Generator,
    variant: str = "hdg",
    resolution: int = DEFAULT_RESOLUTION,
) -> HDGResult:
    """HDG (or TDG) of ``points`` (N, 2) in ``box``: the whole protocol, users split into the
    groups uniformly at random (sizes differ by at most one, as privmdr's), the reports' column
    sums drawn directly (Bin(n_v, p) + Bin(N_j - n_v, q) per cell: the law of the per-user bits,
    as ``ldp_grid.oue_grid``)."""
    points = np.asarray(points, dtype=float)
    n = len(points)
    g1, g2 = granularities(n, epsilon, variant, resolution)
    names = GROUPS[variant]
    group = rng.permutation(n) % len(names)
    p, q = oue_probabilities(epsilon)
    ones, sizes = {}, {}
    for j, name in enumerate(names):
        members = np.flatnonzero(group == j)
        true = np.bincount(values(points[members], box, name, g1, g2), minlength=domain_size(name, g1, g2))
        ones[name] = rng.binomial(true, p) + rng.binomial(len(members) - true, q)
        sizes[name] = len(members)
    grids = release(ones, sizes, n, epsilon, g1, g2)
    return HDGResult(weighted_update(grids, n, g1, g2, resolution), g1, g2)


# --- answers -----------------------------------------------------------------------------------


def overlap_fractions(lo: np.ndarray, hi: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(K, B): the fraction of each bin [edges[b], edges[b + 1]] inside each interval [lo_k, hi_k]."""
    edges = np.asarray(edges, dtype=float)
    width = np.clip(
        np.minimum(np.asarray(hi, dtype=float)[:, None], edges[None, 1:])
        - np.maximum(np.asarray(lo, dtype=float)[:, None], edges[None, :-1]),
        0,
        None,
    )
    return width / np.diff(edges)[None, :]


def answer(queries: np.ndarray, matrix: np.ndarray, box) -> np.ndarray:
    """Range counts (Q,) of rectangles (Q, 4) = (x0, x1, y0, y1) from the matrix, uniform within
    each fine cell (separable: no (queries x cells) array)."""
    xmin, xmax, ymin, ymax = box
    fx = overlap_fractions(queries[:, 0], queries[:, 1], np.linspace(xmin, xmax, matrix.shape[0] + 1))
    fy = overlap_fractions(queries[:, 2], queries[:, 3], np.linspace(ymin, ymax, matrix.shape[1] + 1))
    return np.einsum("qi,ij,qj->q", fx, matrix, fy)
