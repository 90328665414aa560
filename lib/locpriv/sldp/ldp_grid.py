"""LDP baseline for range queries: a uniform g x g grid under optimized unary encoding.

Each user one-hot encodes its grid cell and perturbs every bit (OUE, Wang et al.,
USENIX Security 2017: a 1 stays 1 w.p. 1/2, a 0 becomes 1 w.p. 1/(e^eps + 1)),
which is eps-LDP; the server's unbiased count of cell v is (C_v − N q)/(p − q).
Given the true cell counts n_v, C_v = Bin(n_v, p) + Bin(N − n_v, q) independently
per cell, which we sample directly (same law as per-user bits, O(g^2) not O(N g^2)).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..quadtree import cell_codes


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
    true = np.bincount(codes, minlength=4 ** level)
    ones = rng.binomial(true, p) + rng.binomial(n - true, q)
    return pd.DataFrame({"level": level, "code": np.arange(4 ** level), "count": (ones - n * q) / (p - q)})
