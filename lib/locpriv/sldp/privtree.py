"""PrivTree (Zhang, Xiao & Xie, SIGMOD 2016), the central-DP baseline of Kroshnin & Suvorikova 2025 §5.3.

A node v at depth d(v) with c(v) points gets the biased count
b(v) = max(c(v) − d(v) δ, θ − δ) and is split when b(v) + Lap(λ) > θ.  The SLDP
paper uses λ = 7 / (3 ε_tree), δ = λ ln 4, θ = 0 (the fanout-4 constants of
PrivTree's Theorem); the leaves' counts are then released with Lap(1 / ε_count).
Processed level by level on the shared quadtree codes, so the cost is a few
array passes per level, not a Python loop over nodes.

Mironov-safe discretisation: everything is computed in integer units of the grid
Λ = 2^-8 (``STEP``): counts are c / Λ, δ is rounded *up* to δ′ = Λ (⌈λ′ ln 4 / Λ⌉ + 1)
with λ′ >= λ the scale the exact discrete Laplace sampler actually uses
(``locpriv.dp.sampling``), the split noise is discrete Laplace(λ′ / Λ) and the leaf
counts get discrete Laplace(1 / (ε_count Λ)), so the released counts lie on the grid
with full support whatever the data.

Guarantee (central ε-DP, add/remove one point, ε = ε_tree + ε_count): leaf counts are
the Laplace mechanism with sensitivity 1 (one leaf count changes).  The tree: PrivTree's
proof uses only (i) a split probability P(Z > θ − b) whose log changes by at most 1/λ
when b moves by 1, and (ii) the tail P(Z > t) = C e^{−t/λ} for t >= 0 with C <= 1/2, so
that the stop probabilities' log-ratios along a root-to-leaf path sum to a geometric
series of ratio e^{−δ/λ} <= 1/β (β = 4): total <= (2β − 1)/(β − 1) / λ = ε_tree.  Discrete
Laplace on the grid has (i) exactly (a shift by one count is 1/Λ grid steps of scale
λ′/Λ) and (ii) with C = e^{−Λ/λ′}/(1 + e^{−Λ/λ′}) < 1/2, and δ′ >= λ′ ln 4, λ′ >= λ keep
the series' ratio <= 1/4 and the sum <= ε_tree.  n is public, so replacing one point
(remove then add) costs 2 ε.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from ..dp import ADD_REMOVE, REPLACE_ONE, Guarantee
from ..dp.grid import release_on_grid
from ..dp.sampling import discrete_laplace, exact_scale
from ..quadtree import cell_codes, prefix_counts

STEP = 2.0**-8
UNIT = round(1 / STEP)  # grid steps per count
MAX_DEPTH = 20  # code width (PrivTree stops long before: the bias grows by δ per level)


def constants(epsilon_tree: float) -> tuple[float, float]:
    """(λ, δ) of the SLDP paper: λ = 7 / (3 ε_tree), δ = λ ln 4."""
    if not (math.isfinite(epsilon_tree) and epsilon_tree > 0):
        raise ValueError(f"epsilon_tree must be a finite number > 0, got {epsilon_tree}")
    lam = 7.0 / (3.0 * epsilon_tree)
    return lam, lam * math.log(4.0)


def grid_constants(epsilon_tree: float) -> tuple[float, int]:
    """(λ′ in grid steps as the sampler uses it, δ′ in integer grid steps >= λ′ ln 4)."""
    lam, _ = constants(epsilon_tree)
    lam_steps = exact_scale(lam / STEP)
    return lam_steps, math.ceil(lam_steps * math.log(4.0)) + 1


def biased_steps(count, depth, theta_steps: int, delta_steps: int) -> np.ndarray:
    """b(v) = max(c(v) − d(v) δ, θ − δ) in integer grid steps (c(v) counts, δ and θ in steps)."""
    return np.maximum(
        np.asarray(count, dtype=np.int64) * UNIT - np.asarray(depth) * delta_steps, theta_steps - delta_steps
    )


@functools.lru_cache(maxsize=64)
def _setting(epsilon_tree: float, epsilon_count: float, theta: float, max_depth: int) -> tuple[dict, float]:
    """``noise_parameters`` and the split noise's λ′ (``grid_constants``), made once per setting: their exact
    scales cost more than a tree on a few points."""
    return noise_parameters(epsilon_tree, epsilon_count, theta, max_depth), grid_constants(epsilon_tree)[0]


def noise_parameters(epsilon_tree: float, epsilon_count: float, theta: float = 0.0, max_depth: int = MAX_DEPTH) -> dict:
    """What the curator's noise is drawn with, in integer grid steps of STEP (published with the release).

    ``split_scale``: the split noise's discrete Laplace scale as the sampler uses it
    (``exact_scale`` of λ′, the value ``discrete_laplace`` is called with); ``count_scale``:
    the leaf counts' (``release_on_grid`` with sensitivity ``unit`` steps); ``delta``, ``theta``:
    δ′ and θ in steps; ``unit``: steps per count.  These numbers and the leaves define the
    release's law given the data, which the informed adversary (``locpriv.adversary.informed``) uses.
    """
    lam_steps, delta_steps = grid_constants(epsilon_tree)
    if not (math.isfinite(epsilon_count) and epsilon_count > 0):
        raise ValueError(f"epsilon_count must be a finite number > 0, got {epsilon_count}")
    theta_steps = theta / STEP
    if theta_steps != round(theta_steps):
        raise ValueError(f"theta must be a multiple of {STEP}, got {theta}")
    return {
        "split_scale": exact_scale(lam_steps),
        "count_scale": exact_scale(UNIT / epsilon_count),
        "delta": delta_steps,
        "theta": int(theta_steps),
        "unit": UNIT,
        "step": STEP,
        "max_depth": max_depth,
    }


def privtree(
    points: np.ndarray,
    box,
    epsilon_tree: float,
    epsilon_count: float,
    rng: np.random.Generator,
    theta: float = 0.0,
    max_depth: int = MAX_DEPTH,
) -> pd.DataFrame:
    """Leaves (level, code, count) with discrete-Laplace-noised counts on the grid STEP.

    ``max_depth`` only bounds the code width (PrivTree stops with probability 1
    long before it: the bias grows by δ per level).  ``theta`` must lie on the grid.
    The noise parameters used are in ``.attrs["noise"]`` (``noise_parameters``).
    """
    path = cell_codes(points, box, max_depth)
    level, code, count, noise = leaves(path, epsilon_tree, epsilon_count, rng, theta, max_depth)
    out = pd.DataFrame({"level": level, "code": code, "count": count})
    out.attrs["noise"] = noise
    return out


def leaves(
    path: np.ndarray,
    epsilon_tree: float,
    epsilon_count: float,
    rng: np.random.Generator,
    theta: float = 0.0,
    max_depth: int = MAX_DEPTH,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """``privtree``'s release as arrays (level, code, count) and its noise parameters, the same draws, from
    the points' full-depth codes ``path`` (``quadtree.cell_codes`` at ``max_depth``).

    The audit runs the tree thousands of times on the same two points, where a DataFrame per level and
    the points' codes cost more than the tree itself."""
    noise, lam_steps = _setting(epsilon_tree, epsilon_count, theta, max_depth)
    noise = dict(noise)  # the caller's copy (a release's attrs)
    delta_steps, theta_steps = noise["delta"], noise["theta"]
    nodes = np.zeros(1, dtype=np.int64)
    levels, codes, counts_out = [], [], []
    for level in range(max_depth + 1):
        prefix = path >> (2 * (max_depth - level))
        in_open_node = np.isin(prefix, nodes)  # points of finished leaves drop out
        counts = np.bincount(np.searchsorted(nodes, prefix[in_open_node]), minlength=nodes.size)
        noisy = biased_steps(counts, level, theta_steps, delta_steps) + discrete_laplace(
            lam_steps, rng, size=nodes.size
        )
        split = (noisy > theta_steps) & (level < max_depth)
        leaf = ~split
        codes.append(nodes[leaf])
        levels.append(np.full(codes[-1].size, level, dtype=np.int64))
        counts_out.append(release_on_grid(counts[leaf] * UNIT, 0.0, STEP, UNIT, epsilon_count, rng))
        if not split.any():
            break
        nodes = np.sort(((nodes[split] << 2)[:, None] | np.arange(4)).ravel())
    return np.concatenate(levels), np.concatenate(codes), np.concatenate(counts_out), noise


def count_noise(level, code, count, paths, noise: dict) -> np.ndarray:
    """The noise of each released leaf count, in grid steps: its value minus the leaf's exact count times
    ``unit`` (``paths``: every user's full-depth code, as ``privtree`` placed them; ``noise``: the record)."""
    exact = prefix_counts(paths, level, code, int(noise["max_depth"]))
    return np.rint(np.asarray(count, dtype=float) / float(noise["step"])).astype(np.int64) - exact * int(noise["unit"])


def guarantee(epsilon_tree: float, epsilon_count: float) -> Guarantee:
    eps = epsilon_tree + epsilon_count
    return Guarantee(
        model="epsilon-DP (central, trusted curator)",
        epsilon=2 * eps,
        delta=0.0,
        relation=REPLACE_ONE,
        other_relations={ADD_REMOVE: eps},
        covers="every user's location; the curator sees raw locations",
        discretisation=f"counts, bias and noise in integer steps of {STEP:g}; exact discrete Laplace split "
        f"noise and leaf-count noise (Canonne, Kamath & Steinke 2020); bias rounded up",
        note=f"PrivTree (Zhang et al. 2016), lambda = 7/(3 eps_tree), delta >= lambda ln 4, theta = 0; "
        f"eps_tree = {epsilon_tree:g} for the tree, eps_count = {epsilon_count:g} for the leaf counts; "
        "timing: the curator answers no user on its own, and the release's compute time depends on the "
        "data only through the tree size (released) and the sampler's rare exact slow path",
    )
