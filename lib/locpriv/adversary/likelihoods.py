"""Per-mechanism likelihoods of a report given the user's location, on the grid.

Log-densities are exact for the mechanism's report law (each integrates / sums to
one over reports; tested), evaluated with the user at a grid-cell centre.  The
mechanism plugins call these and rescale each user's row (``row_scaled``), since the
posterior needs the likelihood only up to a factor constant over cells.
"""

from __future__ import annotations

import numpy as np

from ..domain import Grid


def row_scaled(log_lik: np.ndarray) -> np.ndarray:
    """exp(log L - max over cells) per user: (n, P, Q), max 1, no underflow of the whole row."""
    n = log_lik.shape[0]
    top = log_lik.reshape(n, -1).max(axis=1)
    return np.exp(log_lik - top[:, None, None])


def cell_of(xy: np.ndarray, grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """Indices (i, j) of the grid cells holding the points (n, 2); points outside go to the nearest cell."""
    d = grid.domain
    i = np.floor((xy[:, 0] - d.xmin) / (d.xmax - d.xmin) * grid.shape[0]).astype(np.int64)
    j = np.floor((xy[:, 1] - d.ymin) / (d.ymax - d.ymin) * grid.shape[1]).astype(np.int64)
    return np.clip(i, 0, grid.shape[0] - 1), np.clip(j, 0, grid.shape[1] - 1)


def _offsets(reports: np.ndarray, grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """Report minus cell centre per axis: (n, P, 1) and (n, 1, Q)."""
    return reports[:, 0, None, None] - grid.x[None, :, None], reports[:, 1, None, None] - grid.y[None, None, :]


def planar_laplace_logpdf(reports: np.ndarray, grid: Grid, epsilon: float) -> np.ndarray:
    """log D_eps(c)(z) = log(eps^2 / 2 pi) - eps ||z - c|| (Andrés et al. 2013; [RFF-KDE] eq. 18), (n, P, Q)."""
    dx, dy = _offsets(reports, grid)
    return np.log(epsilon ** 2 / (2 * np.pi)) - epsilon * np.hypot(dx, dy)


def product_laplace_logpdf(reports: np.ndarray, grid: Grid, scales) -> np.ndarray:
    """log prod_j (1 / 2 b_j) exp(-|z_j - c_j| / b_j) (Farokhi 2020, Theorem 1), (n, P, Q)."""
    bx, by = (float(b) for b in scales)
    dx, dy = _offsets(reports, grid)
    return -np.log(4 * bx * by) - np.abs(dx) / bx - np.abs(dy) / by


def oue_log_probability(ones: np.ndarray, own: int, p: float, q: float) -> float:
    """log P(bit vector | own cell) under optimized unary encoding (Wang et al. 2017).

    ``ones`` is the 0/1 vector; the own bit is 1 w.p. p, every other bit w.p. q,
    independently.  As a function of the own cell only the factor
    (p/q)^{b_own} ((1-p)/(1-q))^{1-b_own} varies, which is e^eps on reported ones
    for p = 1/2, q = 1/(e^eps + 1): the plugin uses that ratio directly.
    """
    ones = np.asarray(ones, dtype=bool)
    prob = np.where(ones, q, 1 - q)
    prob[own] = p if ones[own] else 1 - p
    return float(np.log(prob).sum())


def rff_line_lengths(omega: np.ndarray, phase: np.ndarray, grid: Grid) -> np.ndarray:
    """Length of the lines {x : omega^T x = phase (mod 2 pi)} inside each grid cell: (n, P, Q).

    For x uniform in a cell of centre c and half-sides (a, b), s = omega^T (x - c) is a sum
    of uniforms on [-A, A] and [-B, B], A = |omega_x| a, B = |omega_y| b, with the
    trapezoidal density g(t) = |[t - A, t + A] n [-B, B]| / (4 A B); the line
    omega^T x = t cuts the cell in a segment of length |omega| (4 a b) g(t - omega^T c).
    Summing over the lines t = phase + 2 pi k that can reach a cell gives the measure,
    with no loop over cells.  The interval form is exactly 0 off the cell (no
    cancellation); A and B are floored at 1e-9 |omega| for an axis-parallel frequency.
    """
    a, b = (grid.x[1] - grid.x[0]) / 2, (grid.y[1] - grid.y[0]) / 2
    norm = np.hypot(omega[:, 0], omega[:, 1])
    A = np.maximum(np.abs(omega[:, 0]) * a, 1e-9 * norm)[:, None, None]
    B = np.maximum(np.abs(omega[:, 1]) * b, 1e-9 * norm)[:, None, None]
    # offset of the nearest line from each cell centre, in [-pi, pi)
    t0 = phase[:, None, None] - omega[:, 0, None, None] * grid.x[None, :, None] \
        - omega[:, 1, None, None] * grid.y[None, None, :]
    t0 = np.mod(t0 + np.pi, 2 * np.pi) - np.pi
    reach = int(np.ceil(float((A + B).max()) / (2 * np.pi)))
    overlap = np.zeros(t0.shape)
    for k in range(-reach, reach + 1):
        t = t0 + 2 * np.pi * k
        overlap += np.clip(np.minimum(t + A, B) - np.maximum(t - A, -B), 0.0, None)
    return norm[:, None, None] * (a * b) * overlap / (A * B)
