"""Per-mechanism likelihoods of a report given the user's location, on the grid.

Log-densities are exact for the mechanism's report law (each integrates / sums to
one over reports; tested), evaluated with the user at a grid-cell centre.  The
mechanisms return them as their ``log_likelihood`` (the posterior is formed in log
space, ``bayes.posterior``); ``row_scaled`` gives the linear form, scaled per row.
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
    return np.log(epsilon**2 / (2 * np.pi)) - epsilon * np.hypot(dx, dy)


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
    return _line_lengths(
        omega[:, 0, None, None],
        omega[:, 1, None, None],
        phase[:, None, None],
        grid.x[None, :, None],
        grid.y[None, None, :],
        _half_sides(grid),
    )


def _half_sides(grid: Grid) -> tuple[float, float]:
    return (grid.x[1] - grid.x[0]) / 2, (grid.y[1] - grid.y[0]) / 2


def _line_lengths(wx, wy, phase, x, y, half: tuple[float, float]) -> np.ndarray:
    """``rff_line_lengths`` elementwise over broadcastable arrays: frequency (wx, wy) and phase
    against the cell of centre (x, y).

    Only the lines that can reach a cell are summed: with the offset t0 in [-pi, pi], line k
    is at |t0 + 2 pi k| >= 2 pi |k| - pi from the centre and cuts the cell only below A + B,
    so |k| <= K, the largest k with 2 pi k - pi < max(A + B) (plus a margin for rounding).
    Every term left out is exactly 0, so the sum is the same as over any wider range.
    """
    a, b = half
    norm = np.hypot(wx, wy)
    A = np.maximum(np.abs(wx) * a, 1e-9 * norm)
    B = np.maximum(np.abs(wy) * b, 1e-9 * norm)
    # offset of the nearest line from each cell centre, in [-pi, pi); in place: the arrays are large
    t0 = phase - wx * x - wy * y
    t0 += np.pi
    np.mod(t0, 2 * np.pi, out=t0)
    t0 -= np.pi
    reach = int(np.ceil((float(np.max(A + B, initial=0.0)) + np.pi + 1e-9) / (2 * np.pi))) - 1
    overlap = None
    for k in range(-reach, reach + 1):
        t = t0 + 2 * np.pi * k if k else t0
        part = np.minimum(t + A, B)
        part -= np.maximum(t - A, -B)
        np.clip(part, 0.0, None, out=part)
        overlap = part if overlap is None else np.add(overlap, part, out=overlap)
    overlap *= norm * (a * b)
    overlap /= A * B
    return overlap


def rff_log_lengths(omega: np.ndarray, phase: np.ndarray, grid: Grid) -> np.ndarray:
    """sum_b log rff_line_lengths(omega[:, b], phase[:, b]) in that order: (n, P, Q), -inf where
    some feature's lines miss the cell.

    A cell one feature rules out stays at -inf whatever follows, so after the first feature
    the lengths are evaluated only at the cells still possible, a shrinking set (each
    feature keeps the cells its bands cross); the sum at those cells takes the same terms
    in the same order as the dense loop over features, so the result is the same.
    """
    half = _half_sides(grid)
    with np.errstate(divide="ignore"):
        first = rff_line_lengths(omega[:, 0], phase[:, 0], grid)
        log_lik = np.log(first)
        flat = log_lik.reshape(-1)
        alive = np.flatnonzero(first.reshape(-1) > 0)
        for b in range(1, phase.shape[1]):
            row, cell = np.divmod(alive, grid.x.size * grid.y.size)
            i, j = np.divmod(cell, grid.y.size)
            lengths = _line_lengths(omega[row, b, 0], omega[row, b, 1], phase[row, b], grid.x[i], grid.y[j], half)
            flat[alive] += np.log(lengths)
            alive = alive[lengths > 0]
    return log_lik
