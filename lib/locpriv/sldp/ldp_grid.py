"""LDP baseline for range queries: a uniform g x g grid under optimized unary encoding.

Each user one-hot encodes its grid cell and perturbs every bit (OUE, Wang et al.,
USENIX Security 2017: a 1 stays 1 w.p. 1/2, a 0 becomes 1 w.p. 1/(e^eps + 1)),
which is eps-LDP; the server's unbiased count of cell v is (C_v − N q)/(p − q).
Given the true cell counts n_v, C_v = Bin(n_v, p) + Bin(N − n_v, q) independently
per cell, which we sample directly (same law as per-user bits, O(g^2) not O(N g^2)).

The grid's side by a data-independent rule (``grid_level``): the granularity guideline of
Qardaji, Yang, Li ("Differentially private grids for geospatial data", ICDE 2013: m = (N ε / 10)^(1/2)
cells per side for Laplace counts), as Yang et al. (VLDB 2021, HDG/TDG; their code privmdr,
``choose_granularity.py``) adapt it to OUE's variance for k groups of users sharing N:
g = (2 α (e^ε − 1) (N / (k e^ε))^(1/2))^(1/2), α = 0.03, rounded to the nearest power of two
(at least 2).  It depends on N and ε only.  (Substituting OUE's cell variance 4 N e^ε / (e^ε − 1)^2
for Qardaji et al.'s Laplace variance 2 / ε^2 gives α = 1 / (20 √2) ≈ 0.035: the same rule.)
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..quadtree import cell_codes

ALPHA_2 = 0.03  # privmdr choose_granularity.py, alpha_2


def round_granularity(g: float, cap: int) -> int:
    """privmdr's rounding: g capped at ``cap`` (a power of two), then the nearest power of two
    (ties to the lower one), at least 2."""
    g = min(g, cap)
    if g <= 2:
        return 2
    low = 2 ** int(math.floor(math.log2(g)))
    return low if g - low <= 2 * low - g else 2 * low


def granularity_2d(n: int, epsilon: float, groups: int = 1) -> float:
    """The guideline's cells per side (unrounded) of a 2-D OUE grid reported by N / ``groups`` users."""
    if not (n >= 1 and math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(
            f"the granularity rule needs N >= 1 users and a finite epsilon > 0, got N = {n}, epsilon = {epsilon}"
        )
    e = math.exp(epsilon)
    return math.sqrt(2 * ALPHA_2 * (e - 1) * math.sqrt(n / (groups * e)))


def grid_level(n: int, epsilon: float, max_level: int = 6) -> int:
    """The OUE grid's level by the guideline: 2^level cells per side (1 <= level <= max_level)."""
    return int(round_granularity(granularity_2d(n, epsilon), 2**max_level)).bit_length() - 1


def oue_probabilities(epsilon: float) -> tuple[float, float]:
    """(p, q): P(a user's own bit reads 1), P(any other bit reads 1)."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    return 0.5, 1.0 / (math.exp(epsilon) + 1.0)


def oue_bits(own: np.ndarray, size: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Each user's OUE report (n, size) of bools: its own bit (``own``, (n,) in [0, size)) reads 1
    w.p. p, every other bit w.p. q (``oue_probabilities``); eps-LDP (p (1 - q) / (q (1 - p)) = e^eps)."""
    p, q = oue_probabilities(epsilon)
    own = np.asarray(own, dtype=np.int64)
    bits = rng.random((own.size, size)) < q
    bits[np.arange(own.size), own] = rng.random(own.size) < p
    return bits


def oue_grid(points: np.ndarray, box, epsilon: float, level: int, rng: np.random.Generator) -> pd.DataFrame:
    """Cells (level, code, count) of the 2^level x 2^level grid with OUE count estimates."""
    p, q = oue_probabilities(epsilon)
    codes = cell_codes(points, box, level)
    n = len(codes)
    true = np.bincount(codes, minlength=4**level)
    ones = rng.binomial(true, p) + rng.binomial(n - true, q)
    return pd.DataFrame({"level": level, "code": np.arange(4**level), "count": (ones - n * q) / (p - q)})
