"""Exact-support Gaussian noise for released vectors: the discrete Gaussian on a grid.

Adding ``rng.standard_normal`` to doubles has the floating-point flaw of every
continuous sampler (Mironov 2012): the set of doubles an output can take depends
on the input.  Here a value is rounded to a public power-of-two grid and integer
noise from the discrete Gaussian N_Z(0, σ²) (Canonne, Kamath & Steinke 2020) is
added in grid units, so every output is a grid point and every grid point is
reachable from every input.

Guarantee of ``release``: for integer vectors k, k′ with ‖k − k′‖₂ <= Δ (in grid
steps), k + N_Z(0, σ²)^M satisfies (Δ²/2σ²)-zCDP, the same as the continuous
Gaussian (CKS 2020, Thm 4 and §4.1 for the multivariate case).  Rounding a value to
the nearest grid point moves each coordinate by at most step/2, so two inputs
D apart in L2 are at most D + √M·step apart after rounding.
"""

from __future__ import annotations

import numpy as np

from .grid import snap_to_grid
from .sampling import MAX_SCALE, discrete_laplace, exact_scale

# below 2^35 the proposal scale stays below the sampler's 2^36
MAX_SIGMA = MAX_SCALE / 2


def proposal_scale(sigma: np.ndarray) -> np.ndarray:
    """floor(σ) + 1 (Canonne, Kamath & Steinke 2020) rounded up to a power of 2^(1/16): any scale
    gives the exact law (the acceptance uses the proposals' true scale); this grid keeps the
    acceptance rate within a few per cent of theirs while a call with many distinct σ (one per
    user or cell) draws from a few hundred distinct scales, whose constants the sampler caches."""
    return np.exp2(np.ceil(16 * np.log2(np.floor(sigma) + 1.0)) / 16)


def discrete_gaussian(sigma, rng: np.random.Generator) -> np.ndarray:
    """Integers Z with P(Z = k) ∝ exp(−k² / (2 σ²)) per element of ``sigma`` (CKS 2020 Alg. 3), int64.

    Rejection from the exact discrete Laplace with scale t ≈ floor(σ) + 1 (``proposal_scale``):
    accept a proposal Y w.p. exp(−(|Y| − σ²/t)² / (2σ²)), <= 1 for every t > 0.  The proposals
    are exact; the acceptance coin is one float comparison, so the law differs from the discrete
    Gaussian only by rounding of that probability (relative error <= 2^-52 per proposal).  What
    matters for DP on doubles: the support is all of Z whatever the input, so no output is
    reachable from one input and not from another (Mironov 2012).  σ = 0 gives 0.
    """
    sigma = np.asarray(sigma, dtype=float)
    if not (np.isfinite(sigma).all() and (sigma >= 0).all() and (sigma < MAX_SIGMA).all()):
        raise ValueError(f"discrete Gaussian sigma (in grid steps) must be finite, >= 0 and < 2^35, got {sigma}")
    flat = sigma.ravel()
    out = np.zeros(flat.size, dtype=np.int64)
    pending = np.flatnonzero(flat > 0)
    s = flat[pending]
    proposal = proposal_scale(s)
    # target / proposal ∝ exp(−y²/2σ² + |y|/t) = exp(−(|y| − σ²/t)²/2σ²) · const <= 1, t the scale
    # the proposals actually have
    centre, spread = s * s / exact_scale(proposal), -0.5 / (s * s)
    while pending.size:
        y = discrete_laplace(proposal, rng)
        accept = rng.random(pending.size) < np.exp(spread * (np.abs(y) - centre) ** 2)
        out[pending[accept]] = y[accept]
        rejected = ~accept
        pending, proposal, centre, spread = pending[rejected], proposal[rejected], centre[rejected], spread[rejected]
    return out.reshape(sigma.shape)


def release(values: np.ndarray, sigma, step: float, rng: np.random.Generator) -> np.ndarray:
    """values rounded to the grid of ``step`` plus discrete Gaussian noise of std ``sigma`` (same units)."""
    k = snap_to_grid(values, step, "values to release")
    sigma = np.broadcast_to(np.asarray(sigma, dtype=float), k.shape)
    return step * (k + discrete_gaussian(sigma / step, rng))
