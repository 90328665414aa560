"""Exact Gaussian KDE on a grid in separable form, and kNN bandwidth selection.

k_h(g, d) = exp(-||g - d||^2 / (2 h^2)) factorises over coordinates, so
sum_i k_h(g_pq, d_i) = sum_i Kx[i, p] Ky[i, q] = (Kx^T Ky)[p, q]: one GEMM
with inner dimension N, done in user chunks so memory is O(chunk * (P + Q)),
never N x P x Q.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from .deconv.kernels import adjusted_from_square

DEFAULT_CHUNK = 8192


def kernel_factor(coord: np.ndarray, grid: np.ndarray, h: float, laplace_b: float = 0.0) -> np.ndarray:
    """exp(-u^2 / 2), u = (grid - coord) / h, as an (n, P) matrix, built in place.

    With ``laplace_b`` > 0 it is the deconvoluting kernel for Laplace(b) noise on
    this coordinate (seed 004 eq. 5): K_hat = (1 - (b/h)^2 d^2/du^2) K, and for the
    Gaussian K'' = (u^2 - 1) K, so K_hat = K (1 - (b/h)^2 (u^2 - 1)).
    """
    u2 = np.subtract.outer(coord, grid)
    np.square(u2, out=u2)
    u2 *= 1.0 / (h * h)
    return adjusted_from_square("gaussian", u2, (laplace_b / h) ** 2, normalised=False)


def kde_sum(points: np.ndarray, gx: np.ndarray, gy: np.ndarray, h: float,
            chunk: int = DEFAULT_CHUNK, laplace_b: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """Sum over points of the unnormalised Gaussian kernel on the grid, shape (P, Q).

    ``laplace_b``: per-coordinate Laplace noise scales of the points; nonzero gives
    the deconvoluting KDE (still a product kernel, so still one GEMM per chunk).
    """
    if not h > 0:
        raise ValueError(f"bandwidth h must be > 0, got {h}")
    points = np.asarray(points, dtype=float)
    total = np.zeros((gx.size, gy.size))
    for start in range(0, len(points), chunk):
        block = points[start:start + chunk]
        total += (kernel_factor(block[:, 0], gx, h, laplace_b[0]).T
                  @ kernel_factor(block[:, 1], gy, h, laplace_b[1]))
    return total


def kernel_surfaces(points: np.ndarray, gx: np.ndarray, gy: np.ndarray, h: float) -> np.ndarray:
    """Each point's own kernel surface, shape (n, P, Q): what a Fed-KDE user sends."""
    kx = kernel_factor(points[:, 0], gx, h)
    ky = kernel_factor(points[:, 1], gy, h)
    return kx[:, :, None] * ky[:, None, :]


def normaliser(h: float) -> float:
    """Integral of the unnormalised 2-D Gaussian kernel: turns sums into a pdf."""
    return 2 * np.pi * h * h


def knn_bandwidth(points: np.ndarray, k: int, rng: np.random.Generator,
                  sample_fraction: float = 0.1) -> float:
    """Mean distance from a random sample of points to their k-th nearest neighbour (§4.2.4).

    The paper's server holds a 10 % sample M and averages ||k_Mi - x_Mi||.  With
    N = 1000 and k = 200 the neighbour cannot come from M alone (|M| = 100), so
    the k-th neighbour is taken among all points and only the query points are
    sampled; a point is not its own neighbour.
    """
    points = np.asarray(points, dtype=float)
    n = len(points)
    if not 1 <= k < n:
        raise ValueError(f"knn_k must be in [1, {n - 1}] for {n} points, got {k}")
    m = max(1, int(round(sample_fraction * n)))
    idx = rng.choice(n, size=m, replace=False)
    tree = cKDTree(points)
    dist, _ = tree.query(points[idx], k=[k + 1])  # k+1: the nearest is the point itself
    return float(dist.mean())
