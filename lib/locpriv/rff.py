"""Federated RFF KDE ([RFF-KDE], Alg. 2/3): user state, query policy, server aggregation.

Kernel convention ([RFF-KDE] §2.2, unnormalised): k_h(x, y) = exp(-||x - y||^2 / (2 h^2)).
By Bochner (eq. 2) k_h(x, y) = E cos(w^T (x - y)) with w ~ N(0, h^-2 I), so a user
at d answers a query with the surface G'(d)(g) = sum_b cos(w_b^T (g - d)) (eq. 7, the
B basis functions of eq. 4 summed); the server divides the sum over users by N B (eq. 6).

What the server sees.  A user's surface is determined by the pairs
(w_b, phase_b = w_b^T d mod 2 pi), and the server can reconstruct exactly those pairs
from the surface (up to the sign flip (w, phase) -> (-w, -phase), which leaves cos
unchanged), so (w, phase) is the compact report.  The phase MUST be reduced mod 2 pi:
the unreduced w^T d would pin the user to one band instead of the equivalence class
of Lemma 2.

Policy (§3.3, §3.5), enforced by each user from public quantities only, so a refusal
says nothing about where the user is:
* at most ``max_features`` features (fewer features, more equivalent maxima, Lemma 2);
* h below Lemma 3's bound, so that at least j bands cross the domain with
  probability >= 1 - risk;
* every bandwidth is h = (4n + 1) h0 (Lemma 4) and is answered by rescaling the
  frequencies drawn once at h0 (Alg. 3), never by redrawing.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass

import numpy as np

from .dp.grid import finite

# Users per GEMM chunk is chosen so that one chunk holds about this many features:
# the two complex (grid, features) factors then stay in cache-friendly sizes
# (~2048 x 200 complex = 6.5 MB), measured fastest on the benchmark machine.
FEATURES_PER_CHUNK = 2048
# Relative tolerance for recognising h / h0 as the odd integer 4n + 1 (Lemma 4):
# bandwidths come from configs and arithmetic, never exactly representable.
LEMMA4_RTOL = 1e-9


def _positive(name: str, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def _count(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------- policy


def lemma3_max_bandwidth(l: float, risk: float, j: int = 2) -> float:  # noqa: E741 (Lemma 3's l)
    """Largest bandwidth Lemma 3 allows: sqrt(gamma) l / (2 pi j), gamma = C^-1(risk).

    Reconstruction of Lemma 3 / Appendix A.1.  One feature w ~ N(0, h^-2 I) makes
    bands orthogonal to w with period T = 2 pi / ||w|| along w.  Every direction
    crosses the largest inscribed square (side l) over a length >= l, so at least
    j bands appear if j T < l (eq. 19), i.e. sqrt(X) > 2 pi h j / l with
    X = h^2 ||w||^2 ~ chi^2(2) (eq. 20).  Its probability is 1 - C((2 pi h j / l)^2)
    (eq. 21), at least 1 - C(gamma) when (2 pi h j / l)^2 < gamma, i.e.
    h < sqrt(gamma) l / (2 pi j).  The configured ``risk`` is C(gamma), the probability
    that FEWER than j bands appear (reading risk as 1 - C(gamma) would make a
    smaller risk allow a larger bandwidth).  For 2 degrees of freedom
    C(x) = 1 - exp(-x / 2), so gamma = -2 log(1 - risk) exactly.
    j >= 2 as §3.5 requires: a single band localises the user to that band.
    """
    l = _positive("inscribed square side l", l)  # noqa: E741
    risk = float(risk)
    if not 0 < risk < 1:
        raise ValueError(f"Lemma 3 risk must be in (0, 1), got {risk}")
    j = _count("Lemma 3 minimum number of bands j", j, 2)
    gamma = -2.0 * math.log1p(-risk)
    return math.sqrt(gamma) * l / (2 * math.pi * j)


def lemma4_allowed(h: float, h0: float) -> bool:
    """True if h = (4n + 1) h0 for an integer n >= 0 (Lemma 4, eq. 24).

    Rescaling w by h0 / h multiplies the band period by h / h0 (eq. 22).  The h
    surface's maxima sit where w^T (g - d) is a multiple of 2 pi h / h0, a subset of the
    h0 surface's maxima when h / h0 is an integer.  Eq. (23) asks T0 / T = 1 / (4n + 1):
    the whole quarter-period structure (maximum, rising zero, minimum, falling zero)
    of every (4n + 1)-th h0 band then coincides with the h band, so the invariant bands
    are indistinguishable from the others.  n = 0 is the base bandwidth itself.
    """
    ratio = _positive("bandwidth h", h) / _positive("base bandwidth h0", h0)
    n = round((ratio - 1) / 4)
    return n >= 0 and abs(ratio - (4 * n + 1)) <= LEMMA4_RTOL * ratio


@dataclass(frozen=True)
class RFFPolicy:
    """The public, location-independent query policy every user enforces (§3.3).

    max_features: most features B a user answers with; inscribed_side: Lemma 3's l,
    the side of the largest square inside the domain (``Domain.inscribed_square``);
    risk: accepted probability C(gamma) of fewer than ``min_bands`` bands (Lemma 3).
    """

    max_features: int
    inscribed_side: float
    risk: float
    min_bands: int = 2

    def __post_init__(self):
        _count("max_features", self.max_features, 1)
        _ = self.max_bandwidth  # validates inscribed_side, risk and min_bands

    @property
    def max_bandwidth(self) -> float:
        return lemma3_max_bandwidth(self.inscribed_side, self.risk, self.min_bands)


@dataclass(frozen=True)
class RFFUsers:
    """Frequencies each user drew once at the base bandwidth h0: omega0 is (N, B, 2)."""

    omega0: np.ndarray
    h0: float

    @property
    def n_users(self) -> int:
        return self.omega0.shape[0]

    @property
    def n_features(self) -> int:
        return self.omega0.shape[1]


@dataclass(frozen=True)
class Refusal:
    """A refused query as the transcript records it; the server learns nothing else."""

    query_id: int
    B: int
    h: float
    reason: str

    def record(self) -> dict:
        return asdict(self)


def draw_users(n: int, B: int, h0: float, rng: np.random.Generator) -> RFFUsers:
    """n users each draw B frequencies w ~ N(0, h0^-2 I) once (Alg. 2 line 3, Alg. 3 line 2)."""
    n = _count("number of users n", n, 1)
    B = _count("number of features B", B, 1)
    h0 = _positive("base bandwidth h0", h0)
    return RFFUsers(rng.standard_normal((n, B, 2)) / h0, h0)


def query_refusal(users: RFFUsers, h: float, B: int, policy: RFFPolicy) -> str | None:
    """Why every user refuses the query (h, B), or None if it is answered.

    Depends only on the query, the public policy, h0 and how many features users
    hold, never on a location, so all users decide alike and a refusal leaks nothing.
    """
    h = _positive("bandwidth h", h)
    B = _count("number of features B", B, 1)
    reasons = []
    if B > policy.max_features:
        reasons.append(f"B={B} exceeds the policy maximum of {policy.max_features} features")
    if B > users.n_features:
        reasons.append(
            f"B={B} exceeds the {users.n_features} features drawn; "
            "users never draw new frequencies after the first query"
        )
    if not lemma4_allowed(h, users.h0):
        reasons.append(f"h={h:g} is not (4n+1) h0 for h0={users.h0:g} (Lemma 4)")
    if not h < policy.max_bandwidth:
        reasons.append(
            f"h={h:g} is not below Lemma 3's bound {policy.max_bandwidth:g} "
            f"(l={policy.inscribed_side:g}, risk={policy.risk:g}, "
            f"j={policy.min_bands})"
        )
    return "; ".join(reasons) or None


def answer_query(
    users: RFFUsers, points: np.ndarray, h: float, B: int, policy: RFFPolicy, query_id: int = 0
) -> tuple[np.ndarray, np.ndarray] | Refusal:
    """Every user's answer to the query (h, B) from its location ``points`` (N, 2).

    Returns the server view (omega (N, B, 2), phase (N, B)): the first B stored
    frequencies rescaled by h0 / h (Alg. 3 line 4; same direction, no redraw) and
    phase = omega^T d mod 2 pi, signs canonicalised to omega_x >= 0.  Locations are a
    per-query argument because users move (Fig. 6) while their frequencies stay.
    A policy violation returns one Refusal instead.
    """
    points = finite(points, "points")
    if points.shape != (users.n_users, 2):
        raise ValueError(f"points must be a ({users.n_users}, 2) array, got shape {points.shape}")
    reason = query_refusal(users, h, B, policy)
    if reason is not None:
        return Refusal(int(query_id), int(B), float(h), reason)
    omega = users.omega0[:, :B] * (users.h0 / h)
    phase = np.einsum("nbk,nk->nb", omega, points)
    # (w, phase) and (-w, -phase) give the same surface; report one representative.
    flip = np.where(omega[..., 0] < 0, -1.0, 1.0)
    omega *= flip[..., None]
    phase = np.mod(phase * flip, 2 * np.pi)
    return omega, phase


# --------------------------------------------------------------------------- server side


def _expi_grid(w: np.ndarray, shift: np.ndarray, grid: np.ndarray, sign: float) -> np.ndarray:
    """exp(sign * i (w_k g_p - shift_k)) as a complex (P, K) array.

    numpy's float64 cos/sin are scalar libm calls (~4x an exp here), and a
    (P, K) table of them dominated the aggregate.  On an evenly spaced grid
    g_p = g_0 + p dg the table is z_0 * r^p with r = exp(i w dg): two trig pairs per
    feature, then log2(P) doubling steps z[L:2L] = z[:L] * r^L (a loop over doubling
    levels, not over cells).  Rounding grows with the number of products, about
    log2(P) per entry; measured <= 1e-12 absolute against direct evaluation.
    """
    P = grid.size
    if grid.ndim != 1 or P == 0 or not np.isfinite(grid).all():
        raise ValueError(f"grid coordinates must be a finite non-empty 1-D array, got shape {grid.shape}")
    dg = (grid[-1] - grid[0]) / (P - 1) if P > 1 else 0.0
    if P > 2 and not np.allclose(np.diff(grid), dg, rtol=1e-9, atol=0):
        raise ValueError(
            "grid coordinates must be evenly spaced (a regular grid); "
            f"got spacings from {np.diff(grid).min()} to {np.diff(grid).max()}"
        )
    z = np.empty((P, w.size), dtype=complex)
    start = w * grid[0] - shift
    z[0] = np.cos(start) + 1j * sign * np.sin(start)
    step = w * dg
    r = np.cos(step) + 1j * sign * np.sin(step)
    filled = 1
    while filled < P:
        n = min(filled, P - filled)
        np.multiply(z[:n], r, out=z[filled : filled + n])
        r = r * r
        filled += n
    return z


def _check_report(omega: np.ndarray, phase: np.ndarray) -> None:
    if omega.ndim != 3 or omega.shape[2] != 2 or phase.shape != omega.shape[:2]:
        raise ValueError(f"omega must be (N, B, 2) and phase (N, B), got {omega.shape} and {phase.shape}")


def rff_sum(
    omega: np.ndarray, phase: np.ndarray, grid_x: np.ndarray, grid_y: np.ndarray, chunk: int | None = None
) -> np.ndarray:
    """sum_i sum_b cos(w1 gx + w2 gy - phase) on the grid, shape (P, Q).

    Separable GEMM form: cos(A + C) = Re(e^{iA} e^{iC}) = cos A cos C - sin A sin C,
    so with X = e^{i(w1 gx - phase)} (P, K) and Y = e^{-i w2 gy} (Q, K), viewed as
    real (P, 2K) and (Q, 2K) with interleaved (real, imag) columns, the sum is the
    real GEMM X Y^T with inner dimension 2K = 2NB, done in user chunks.  The server
    divides by N B for eq. (6).  ``chunk`` is users per GEMM (default about
    FEATURES_PER_CHUNK features).
    """
    omega = np.asarray(omega, dtype=float)
    phase = np.asarray(phase, dtype=float)
    _check_report(omega, phase)
    gx = np.asarray(grid_x, dtype=float)
    gy = np.asarray(grid_y, dtype=float)
    N, B = phase.shape
    chunk = max(1, FEATURES_PER_CHUNK // B) if chunk is None else _count("chunk", chunk, 1)
    total = np.zeros((gx.size, gy.size))
    for start in range(0, N, chunk):
        w = omega[start : start + chunk].reshape(-1, 2)
        x = _expi_grid(w[:, 0], phase[start : start + chunk].ravel(), gx, 1.0)
        y = _expi_grid(w[:, 1], 0.0, gy, -1.0)
        total += x.view(float) @ y.view(float).T
    return total


def rff_surfaces(omega: np.ndarray, phase: np.ndarray, grid_x: np.ndarray, grid_y: np.ndarray) -> np.ndarray:
    """Each user's own surface G'(d_i) (eq. 7), shape (n, P, Q), without a loop over users.

    The same factorisation as ``rff_sum``, kept per user: a batched product of
    (n, P, 2B) by (n, 2B, Q).  Memory is n P Q floats: the caller batches users.
    """
    omega = np.asarray(omega, dtype=float)
    phase = np.asarray(phase, dtype=float)
    _check_report(omega, phase)
    n, B = phase.shape
    gx = np.asarray(grid_x, dtype=float)
    gy = np.asarray(grid_y, dtype=float)
    x = _expi_grid(omega[..., 0].ravel(), phase.ravel(), gx, 1.0).view(float)
    y = _expi_grid(omega[..., 1].ravel(), 0.0, gy, -1.0).view(float)
    x = x.reshape(gx.size, n, 2 * B).transpose(1, 0, 2)
    y = y.reshape(gy.size, n, 2 * B).transpose(1, 2, 0)
    return np.matmul(x, y)
