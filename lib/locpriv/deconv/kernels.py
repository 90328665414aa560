"""Kernels K and their deconvoluting versions for Laplace(b) noise ([Deconv-LDP] eq. 5).

With Laplace noise of scale b the noise characteristic function is
Φ_n(t) = 1 / (1 + b² t²), so the deconvoluting kernel at bandwidth h is the
inverse Fourier transform of Φ_K(t) (1 + (b/h)² t²), i.e.
K̂ = (1 − c d²/du²) K with c = (b/h)².  Closed forms:

* Gaussian, K = φ: φ'' = (u² − 1) φ, so K̂ = φ (1 − c (u² − 1)).
* Cauchy, K = 1 / (π (1 + u²)) (the paper's experiments): K'' = (8u² / (1 + u²)³
  − 2 / (1 + u²)²) / π, so K̂ = [1/(1+u²) + 2c/(1+u²)² − 8c u²/(1+u²)³] / π,
  which is the paper's printed formula (its "d²/dx" lost the square).

The Cauchy kernel has no second moment, so bandwidth rules built on μ₂(K)
(the normal reference below) are for the Gaussian kernel only.
"""

from __future__ import annotations

import numpy as np

KERNELS = ("gaussian", "cauchy")


def check(name: str) -> str:
    if name not in KERNELS:
        raise ValueError(f"kernel must be one of {list(KERNELS)}, got {name!r}")
    return name


def adjusted(name: str, u: np.ndarray, c: float = 0.0) -> np.ndarray:
    """K̂(u) for c = (b/h)²; c = 0 gives the kernel K itself."""
    u = np.asarray(u, dtype=float)
    return adjusted_from_square(name, u * u, c)


def adjusted_from_square(name: str, u2: np.ndarray, c: float = 0.0, normalised: bool = True) -> np.ndarray:
    """K̂ as a function of u², overwriting ``u2`` (the estimators' large temporaries).

    Cauchy form with s = 1/(1 + u²) and u² s = 1 − s: 8u² s³ = 8 s² (1 − s), so
    K̂ = (s + c s² (8 s − 6)) / π — the same closed form with fewer array passes.
    ``normalised=False`` drops the constant factor (1/√(2π) or 1/π): the 2-D
    grid KDE divides by its own normaliser once at the end.
    """
    if check(name) == "gaussian":
        k = np.exp(-0.5 * u2)
        if normalised:
            k *= 1 / np.sqrt(2 * np.pi)
        if c:
            u2 -= 1.0
            u2 *= -c
            u2 += 1.0
            k *= u2
        return k
    u2 += 1.0
    np.reciprocal(u2, out=u2)  # s
    if c:
        k = u2 * 8.0
        k -= 6.0
        k *= u2
        k *= u2
        k *= c
        k += u2
    else:
        k = u2
    if normalised:
        k *= 1 / np.pi
    return k


def gaussian_cut(c: float, tail: float) -> float:
    """Radius u_c beyond which the Gaussian K̂ (c = (b/h)²) is below ``tail`` of its peak.

    Peak: |K̂| ≤ K̂(0) ∝ 1 + c everywhere — where 1 + c − c u² ≥ 0 the factor is at
    most 1 + c, elsewhere |K̂| ∝ e^{−u²/2} (c u² − 1 − c) ≤ c u² e^{−u²/2} ≤ 2c/e.
    Tail: for |u| ≥ 1, (1 + c(u² − 1)) / (1 + c) ≤ u² (the difference is u² − 1 + c),
    so |K̂(u)| / K̂(0) ≤ e^{−u²/2} for c = 0 and ≤ u² e^{−u²/2} for c > 0, both
    decreasing beyond u² = 2.  c = 0: u_c² = 2 ln(1/tail); c > 0: the fixed point of
    u² = 2 ln(u² / tail), a contraction there (the map's slope is 2/u² < 1).
    """
    if not 0 < tail < 1e-2:
        raise ValueError(f"tail must be in (0, 0.01), got {tail}")
    u2 = 2 * np.log(1 / tail)
    if c:
        for _ in range(60):
            u2 = 2 * np.log(u2 / tail)
    return float(np.sqrt(u2))


def characteristic(name: str, t: np.ndarray) -> np.ndarray:
    """Φ_K(t) = ∫ e^{itu} K(u) du (real: both kernels are even)."""
    t = np.asarray(t, dtype=float)
    return np.exp(-0.5 * t * t) if check(name) == "gaussian" else np.exp(-np.abs(t))
