"""Clipping and noise allocation for the uploaded obstacle gradients ([GeoDP-Radio] §IV).

Three schemes, registered by name in ``SCHEMES``:

* ``radio_fedavg``  – no noise (FedAvg).
* ``radio_uniform`` – DPFL baseline: i.i.d. Gaussian noise on every cell with
  total energy E||n_i||^2 = mu ||g_bar_i||^2 (budget eq. 22 with equality).
* ``radio_geo``     – geometry-aligned allocation, Alg. 1: sigma^2_m =
  max{0, a^T c_m + b - G_bar^2_m} (eq. 37), b by bisection on the budget (44),
  a = r u by nested finite-difference gradient ascent on J = P - rho V (38),
  P and V the expectations (34)-(36).

All work on every user at once ((N, M) arrays); Alg. 1's loops are over its
iterations only.

Normalisation (not in the paper, which leaves units open): P is measured in
coordinates scaled by the area side W (so P is in W^2) and V is divided by
V_0, the spatial variance that uniform noise of the same budget gives, so
rho weighs the relative increase of spatial variance over the uniform
allocation.  Without this P (m^2) and V ((gradient^2)^2, ~1e-8 at C = 1)
differ by ~12 orders of magnitude and rho in {1..100} (Fig. 6) could have no
effect; dividing by the squared mean level instead (a squared coefficient of
variation, dominated by the spiky clean gradient) drove r to 0 for every
rho >= 1 in our runs.  The plane slope
is parametrised as a = r * s_i * u with s_i = (1 + mu) mean_m G_bar^2_im, the
mean level of the noisy squared gradient, so r is dimensionless.

P is evaluated by the delta method on the ratio (35): the squared distance
of the ratio of expectations from the user plus the trace of the linearised
covariance; V in closed form (exact for independent Gaussian noise):
E[G~^2] = G^2 + s2, Var[G~^2] = 2 s2^2 + 4 G^2 s2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dp import Guarantee, gaussian
from ..dp.grid import grid_step

# grid of the released gradients: rounding moves two clipped uploads apart by at most
# sqrt(M) step <= 2C / GRID_CELLS in L2 (see dp.gaussian), i.e. inflates the sensitivity 2C by 2^-20;
# a fine grid because gradients are often orders of magnitude below C (a coarse one zeroes them)
GRID_CELLS = 2 ** 20


def gradient_step(C: float, M: int) -> float:
    """Power-of-two grid step of the uploads: sqrt(M) * step <= 2C / GRID_CELLS."""
    return grid_step(2.0 * C / np.sqrt(M), GRID_CELLS)


def upload(gbar: np.ndarray, s2: np.ndarray, C: float, rng: np.random.Generator) -> np.ndarray:
    """The noisy uploads: clipped gradients on the public grid plus discrete Gaussian noise of variance s2."""
    return gaussian.release(gbar, np.sqrt(s2), gradient_step(C, gbar.shape[1]), rng)


def clip(g: np.ndarray, C: float) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (20) per row: g * min(1, C / ||g||); also returns which rows were clipped."""
    norm = np.linalg.norm(g, axis=1)
    factor = np.minimum(1.0, C / np.maximum(norm, np.finfo(float).tiny))
    return g * factor[:, None], norm > C


def uniform_variance(gbar: np.ndarray, mu: float) -> np.ndarray:
    """Per-cell variance mu ||g_bar_i||^2 / M (same on every cell), shape (N, M)."""
    M = gbar.shape[1]
    return np.repeat((mu * np.sum(gbar ** 2, axis=1) / M)[:, None], M, axis=1)


def solve_offset(level: np.ndarray, g2: np.ndarray, budget: np.ndarray,
                 rtol: float = 1e-4) -> np.ndarray:
    """b_i with sum_m max(0, level_im + b_i - g2_im) = budget_i (eq. 44), by bisection.

    f(b) = sum_m max(0, L_m + b) (L = level - g2) is continuous, convex,
    piecewise linear and non-decreasing.  Bisection on the bracket
    [-max(L), -min(L) + budget/M] (f <= 0 at the left, f >= budget at the
    right) narrows it to ``rtol``; Newton steps from the bracket's right end
    then finish exactly: on a convex non-decreasing function they approach
    the root monotonically from above and stop once the active cells no
    longer change, so the budget is met to rounding error.
    """
    L = level - g2
    M = L.shape[1]
    lo, hi = -L.max(axis=1), -L.min(axis=1) + budget / M
    scale = np.maximum(np.abs(lo) + np.abs(hi), np.finfo(float).tiny)
    buf = np.empty_like(L)
    for _ in range(200):   # halvings; stops early when every bracket is tight
        mid = 0.5 * (lo + hi)
        np.add(L, mid[:, None], out=buf)
        np.maximum(buf, 0.0, out=buf)
        over = buf.sum(axis=1) > budget
        hi, lo = np.where(over, mid, hi), np.where(over, lo, mid)
        if np.all(hi - lo <= rtol * scale):
            break
    b = hi
    active = L > -b[:, None]
    for _ in range(M + 1):  # Newton on the active piece; the active set only shrinks
        b = (budget - np.where(active, L, 0.0).sum(axis=1)) / np.maximum(active.sum(axis=1), 1)
        now = L > -b[:, None]
        if np.array_equal(now, active):
            return b
        active = now
    return b


def plane_variance(g2, coords, u, r, mu):
    """sigma^2 (N, M) of eq. (37) for direction u (N, 2), magnitude r (N,)."""
    s = (1.0 + mu) * g2.mean(axis=1)
    level = (r * s)[:, None] * (u @ coords.T)
    b = solve_offset(level, g2, mu * g2.sum(axis=1))
    return np.maximum(0.0, level + b[:, None] - g2)


def objective_terms(g2, s2, coords, users):
    """(P, V) of eqs. (34)-(36) for noise variances s2; P in units of W^2, V raw."""
    mean = g2 + s2
    var = 2 * s2 ** 2 + 4 * g2 * s2
    # a user whose clipped gradient is all zero has zero budget and no noise: guard 0/0
    tot = np.maximum(mean.sum(axis=1), np.finfo(float).tiny)
    centroid = (mean @ coords) / tot[:, None]
    spread = (var * ((coords[None, :, 0] - centroid[:, :1]) ** 2
                     + (coords[None, :, 1] - centroid[:, 1:]) ** 2)).sum(axis=1) / tot / tot
    P = np.sum((centroid - users) ** 2, axis=1) + spread
    M = g2.shape[1]
    avg = tot / M
    V = (((mean - avg[:, None]) ** 2).sum(axis=1) + (1 - 1 / M) * var.sum(axis=1)) / M
    return P, V


@dataclass(frozen=True)
class GeoSettings:
    """Alg. 1 settings.  The paper gives none of these values; they are ours."""

    r_max: float = 8.0        # initial r (Alg. 1 step 1) and upper bound on r
    outer_iters: int = 3      # u updates
    inner_iters: int = 3      # r updates per u update
    step_r: float = 2.0       # gradient-ascent step for r
    step_u: float = 2.0       # gradient-ascent step for u (renormalised after)
    fd_eps: float = 1e-3      # central-difference step of eqs. (45)-(46)
    tol_r: float = 1e-4       # tau_r
    tol_u: float = 1e-4       # tau_u


def geo_variance(gbar: np.ndarray, centres: np.ndarray, users: np.ndarray, size: float,
                 mu: float, rho: float, settings: GeoSettings) -> tuple[np.ndarray, dict]:
    """Alg. 1 for every user: the optimal sigma^2 (N, M) and a summary of the search."""
    g2 = gbar ** 2
    coords = centres / size - 0.5                    # centred, in units of the side W
    p = users / size - 0.5
    N = len(g2)
    if mu == 0:
        return np.zeros_like(g2), {"J": np.zeros(N), "r": np.zeros(N), "u": np.zeros((N, 2))}

    _, V0 = objective_terms(g2, uniform_variance(gbar, mu), coords, p)
    V0 = np.maximum(V0, np.finfo(float).tiny)

    def J(u, r):
        P, V = objective_terms(g2, plane_variance(g2, coords, u, r, mu), coords, p)
        return P - rho * V / V0

    tot = np.maximum(g2.sum(axis=1), np.finfo(float).tiny)
    delta_g = (g2 @ coords) / tot[:, None] - p        # eq. (42)
    norm = np.linalg.norm(delta_g, axis=1)
    u = np.where(norm[:, None] > 0, delta_g / np.maximum(norm, 1e-300)[:, None], [1.0, 0.0])
    r = np.full(N, settings.r_max)
    eps = settings.fd_eps
    e1, e2 = np.array([eps, 0.0]), np.array([0.0, eps])
    for _ in range(settings.outer_iters):
        for _ in range(settings.inner_iters):
            dr = (J(u, r + eps) - J(u, r - eps)) / (2 * eps)                 # eq. (45)
            r = np.clip(r + settings.step_r * dr, 0.0, settings.r_max)
            if np.all(np.abs(dr) <= settings.tol_r):
                break
        du = np.column_stack([(J(u + e1, r) - J(u - e1, r)) / (2 * eps),    # eq. (46)
                              (J(u + e2, r) - J(u - e2, r)) / (2 * eps)])
        u = u + settings.step_u * du
        u = u / np.maximum(np.linalg.norm(u, axis=1), 1e-300)[:, None]
        if np.all(np.linalg.norm(du, axis=1) <= settings.tol_u):
            break
    s2 = plane_variance(g2, coords, u, r, mu)                             # eq. (47)
    P, V = objective_terms(g2, s2, coords, p)
    return s2, {"J": P - rho * V / V0, "P": P, "V": V / V0, "r": r, "u": u}


@dataclass(frozen=True)
class Scheme:
    name: str
    uses_mu: bool
    uses_rho: bool
    description: str


SCHEMES = {
    "radio_fedavg": Scheme("radio_fedavg", False, False, "FedAvg: clipped gradients, no noise"),
    "radio_uniform": Scheme("radio_uniform", True, False,
                            "DPFL: i.i.d. Gaussian noise, E||n||^2 = mu ||g_bar||^2"),
    "radio_geo": Scheme("radio_geo", True, True, "geometry-aligned noise of Alg. 1"),
}


def noise_variance(scheme: str, gbar, centres, users, size, mu, rho, settings: GeoSettings):
    """sigma^2 (N, M) of the named scheme and a per-user summary dict."""
    if scheme == "radio_fedavg":
        return np.zeros_like(gbar), {}
    if scheme == "radio_uniform":
        return uniform_variance(gbar, mu), {}
    if scheme == "radio_geo":
        return geo_variance(gbar, centres, users, size, mu, rho, settings)
    raise ValueError(f"scheme: got {scheme!r}; allowed: {sorted(SCHEMES)}")


THETA_MODES = ("learned", "frozen")
DISCRETISATION = ("uploads rounded to a power-of-two grid (sqrt(M) step <= 2C/2^20) plus discrete Gaussian "
                  "noise in grid units (Canonne, Kamath & Steinke 2020): every grid point reachable from every input")


def guarantee(scheme: str, mu: float, M: int, delta: float, clipped: list[float], theta: str) -> dict:
    """The formal (epsilon, delta) of a trained run, or a plain statement that none holds.

    Only the uniform scheme can have one.  Its noise std is sqrt(mu/M) ||g_bar_i|| per cell:
    a Gaussian mechanism with std sqrt(mu/M) C *if* the user's gradient is clipped
    (||g_bar_i|| = C) in that epoch; otherwise the noise scale depends on the user's own
    data and no DP bound follows, so no epsilon is recorded unless the clipped fraction
    (``clipped``, one entry per epoch) is 1 in every epoch.  Each user's upload is kept
    and attacked on its own (local model): two datasets of one user give clipped
    gradients up to 2C apart (L2), so the per-epoch zCDP is rho_1 = (2C)^2 / (2 sigma^2)
    = 2 M / mu (Bun & Steinke 2016, Prop. 1.6), composed over the epochs (Lemma 1.7) and
    converted by epsilon = rho + 2 sqrt(rho ln(1/delta)) (Prop. 1.3).  theta's gradient
    must not be uploaded in the clear (``theta`` "frozen"), or nothing holds.
    """
    def none(note: str) -> dict:
        return Guarantee(model="none", epsilon=None, delta=None, relation="any two datasets of one user (local)",
                         covers="nothing formally", discretisation=DISCRETISATION, note=note).as_dict()

    if scheme == "radio_fedavg":
        return none("no noise: the clipped gradients are uploaded as they are; no DP guarantee")
    if scheme == "radio_geo":
        return none("noise is allocated from the user's own gradient and location; sigma_m = 0 on cells "
                    "above the plane, so a change of the user's data can be seen exactly there: no "
                    "(epsilon, delta) guarantee holds")
    if scheme != "radio_uniform":
        raise ValueError(f"scheme: got {scheme!r}; allowed: {sorted(SCHEMES)}")
    if mu <= 0:
        return none("mu = 0: no noise")
    if theta != "frozen":
        return none("theta's gradient is uploaded unclipped and without noise every epoch: no guarantee "
                    "(set training.theta: frozen to keep theta public and unuploaded)")
    short = [i + 1 for i, f in enumerate(clipped) if f < 1.0]
    if short:
        return none(f"{len(short)} of {len(clipped)} epochs (first: {short[0]}) have a clipped fraction below "
                    "1: there the noise scale depends on the user's own gradient norm, so no bound holds")
    # discrete Gaussian of std sqrt(mu/M) C on integer vectors whose L2 distance is at most 2C + sqrt(M) step
    # (rounding): rho per epoch = (2C + sqrt(M) step)^2 / (2 (mu/M) C^2) <= (2M/mu) (1 + 1/GRID_CELLS)^2
    rho = len(clipped) * 2.0 * M / mu * (1.0 + 1.0 / GRID_CELLS) ** 2
    eps = rho + 2 * np.sqrt(rho * np.log(1 / delta))
    return Guarantee(
        model="(epsilon, delta)-LDP per user, Gaussian mechanism under zCDP composition", epsilon=float(eps),
        delta=float(delta), relation="any two datasets of one user (local: each upload is seen on its own)",
        covers="the user's measurements and location through its h-gradient uploads over all epochs; theta is "
               "public and frozen",
        discretisation=DISCRETISATION,
        note=f"L2 sensitivity 2C (2C (1 + 2^-20) after rounding to the grid), discrete Gaussian noise std "
             f"sqrt(mu/M) C = {np.sqrt(mu / M):.4g} C per cell, "
             f"rho = {rho:.4g} over {len(clipped)} epochs, every epoch fully clipped").as_dict()
