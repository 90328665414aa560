"""Smoothed virtual-obstacle radio map ([GeoDP-Radio] eqs. 1-3) and its gradients (8)-(9).

theta = (alpha0, beta0, alpha1, beta1); LOS gain beta0 + alpha0 log10 d,
NLOS gain beta1 + alpha1 log10 d.  S(p; h) = prod_m psi((z_m - h_m) / s) over
the cells under the link, psi the logistic function.  The paper writes
psi(z_m - h_m) (scale s = 1 m); s is a parameter here (``psi_scale``) so the
transition width can be stated and varied.  Products are taken in the log
domain (sum of log psi), which keeps S exact where it is tiny.

Initialisation: the paper starts from h = H_max.  With H_max above the link
heights, every link has dozens of cells with psi((z - h)/s) ~ exp(-(h - z)/s),
so S and with it every obstacle gradient (proportional to S, eq. 14)
underflows to ~0 and h never moves (we measured MAE stuck at ~12 dB with
h_init = 130 m).  The study therefore starts from ``model.h_init`` (default
0 m: all links LOS-like), and h is not projected onto [0, H_max]: cells next
to a ground user must go slightly negative for a LOS link at 1.5 m height to
reach S ~ 1 with a 3 m logistic width (eq. 10 has no projection either).
"""

from __future__ import annotations

import numpy as np

from .geometry import Links

THETA_NAMES = ("alpha0", "beta0", "alpha1", "beta1")


def log_psi(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """log of the logistic function, overflow-free: min(x, 0) - log1p(exp(-|x|)) (3x faster than logaddexp)."""
    out = np.abs(x, out=out)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    np.negative(out, out=out)
    return np.add(out, x, out=out, where=x < 0)


def gains(links: Links, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(LOS, NLOS) channel gains of every link, dB."""
    a0, b0, a1, b1 = theta
    return b0 + a0 * links.log10_distance, b1 + a1 * links.log10_distance


def hard_gain(links: Links, heights: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (1): gain and LOS flag, LOS iff h_m < z_m on every cell under the link."""
    m = links.matrix
    blocked = np.zeros(m.shape[0], dtype=bool)
    hit = heights[m.indices] >= m.data
    np.logical_or.at(blocked, links.row[hit], True)
    los, nlos = gains(links, theta)
    return np.where(blocked, nlos, los), ~blocked


def smooth_gain(
    links: Links, heights: np.ndarray, theta: np.ndarray, scale: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eqs. (2)-(3): (gamma, S, x) with x = (z_m - h_m)/s per stored entry."""
    gamma, S, x, _ = _smooth(links, heights, theta, scale)
    return gamma, S, x


def _smooth(links: Links, heights: np.ndarray, theta: np.ndarray, scale: float, work=(None, None)):
    """smooth_gain's (gamma, S, x) and log psi(x) per stored entry; x and log psi in ``work`` if given."""
    x = np.take(heights, links.cell, out=work[0])
    np.subtract(links.matrix.data, x, out=x)
    x /= scale
    lp = log_psi(x, out=work[1])
    S = np.exp(links.row_sums(lp))
    los, nlos = gains(links, theta)
    return nlos + (los - nlos) * S, S, x, lp


def entry_index(links: Links, user: np.ndarray) -> np.ndarray:
    """Flat (user, cell) index user * M + cell of every stored entry: where its gradient term goes."""
    return user[links.row] * links.matrix.shape[1] + links.cell


def local_gradients(
    links: Links,
    user: np.ndarray,
    y: np.ndarray,
    heights: np.ndarray,
    theta: np.ndarray,
    scale: float,
    n_users: int,
    index: np.ndarray | None = None,
    work: tuple | None = None,
):
    """Every user's loss F_i (eq. 6) and gradients (eqs. 8, 9), all users at once.

    ``user`` maps each link (measurement) to its user; ``index`` is ``entry_index(links, user)``
    (computed here if not given; training passes it once for all epochs) and ``work`` three arrays
    of one float per stored entry to compute in (training reuses them: fresh 10 MB arrays every
    epoch cost page faults).  Returns (loss (N,),
    grad_h (N, M), grad_theta (N, 4)).  With r = y - gamma and
    Gamma = r (NLOS - LOS) (eq. 13), dF_i/dh_m = 2/J_i sum_j Gamma_j D_jm
    (eq. 12) where D_jm = dS_j/dh_m = -S_j (1 - psi(x_jm)) / s (eq. 14).
    """
    m = links.matrix
    work = work or (None, None, None)
    gamma, S, x, lp = _smooth(links, heights, theta, scale, work[:2])
    los, nlos = gains(links, theta)
    J = np.bincount(user, minlength=n_users).astype(float)
    if np.any(J == 0):
        raise ValueError(f"local_gradients: {int(np.sum(J == 0))} users have no measurement")
    r = y - gamma
    Gamma = r * (nlos - los)
    weight = (2.0 / J)[user]
    # entry (j, m): weight_j Gamma_j D_jm with D_jm = -S_j (1 - psi(x_jm)) / s, 1 - psi(x) = e^(log psi(x) - x)
    entry = np.subtract(lp, x, out=lp)
    np.exp(entry, out=entry)
    entry *= np.take(-weight * Gamma * S / scale, links.row, out=work[2])
    M = m.shape[1]
    index = entry_index(links, user) if index is None else index
    grad_h = np.bincount(index, weights=entry, minlength=n_users * M).reshape(n_users, M)
    # d gamma / d theta for theta = (alpha0, beta0, alpha1, beta1)
    ld = links.log10_distance
    dgamma = np.column_stack([S * ld, S, (1 - S) * ld, 1 - S])
    grad_theta = np.column_stack(
        [np.bincount(user, weights=-weight * r * dgamma[:, k], minlength=n_users) for k in range(4)]
    )
    loss = np.bincount(user, weights=r * r, minlength=n_users) / J
    return loss, grad_h, grad_theta
