"""Geometry-aligned noise allocation, [GeoDP-Radio] Alg. 1, for every user at once.

sigma^2_m = max{0, a^T c_m + b - G_bar^2_m} (eq. 37), b by water-filling on the budget (44),
a = r u by nested finite-difference gradient ascent on J = P - rho V (38), P and V the
expectations (34)-(36).  Python loops run over Alg. 1's iterations only; every step is an
(N, M) array operation or a GEMM over the cells.

Normalisation (not in the paper, which leaves units open): P is measured in coordinates scaled
by the area side W (so P is in W^2) and V is divided by V_0, the spatial variance that uniform
noise of the same budget gives, so rho weighs the relative increase of spatial variance over the
uniform allocation.  Without this P (m^2) and V ((gradient^2)^2, ~1e-8 at C = 1) differ by ~12
orders of magnitude and rho in {1..100} (Fig. 6) could have no effect; dividing by the squared
mean level instead (a squared coefficient of variation, dominated by the spiky clean gradient)
drove r to 0 for every rho >= 1 in our runs.  The plane slope is parametrised as a = r * s_i * u
with s_i = (||G_bar_i||^2 + B_i) / M, the mean level of the noisy squared gradient (B_i the
user's noise budget), so r is dimensionless.

P is evaluated by the delta method on the ratio (35): the squared distance of the ratio of
expectations from the user plus the trace of the linearised covariance; V in closed form (exact
for independent Gaussian noise): E[G~^2] = G^2 + s2, Var[G~^2] = 2 s2^2 + 4 G^2 s2.  Both need
only sums over the cells of s2 and of t = s2 (s2 + 2 G^2) against the features (1, c, |c|^2)
(``objective_terms``).

Finite differences (eqs. 45-46) move the plane by d . c with |d| ~ fd_eps: every cell whose
margin a^T c_m + b - G^2_m is further from 0 than 2 max_m |d . c_m| keeps its side (the offset
moves by at most max |d . c|), so a perturbed J is the base's sums corrected by polynomial
moments of the cells (``Plane``) plus the few cells near the boundary, exactly (to rounding).
The central differences therefore cost one water-filling per (u, r), not two per difference.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

TINY = np.finfo(float).tiny


@dataclass(frozen=True)
class GeoSettings:
    """Alg. 1 settings.  The paper gives none of these values; they are ours."""

    r_max: float = 8.0  # initial r (Alg. 1 step 1) and upper bound on r
    outer_iters: int = 3  # u updates
    inner_iters: int = 3  # r updates per u update
    step_r: float = 2.0  # gradient-ascent step for r
    step_u: float = 2.0  # gradient-ascent step for u (renormalised after)
    fd_eps: float = 1e-3  # central-difference step of eqs. (45)-(46)
    tol_r: float = 1e-4  # tau_r
    tol_u: float = 1e-4  # tau_u


def solve_offset(
    L: np.ndarray, budget: np.ndarray, start: np.ndarray | None = None, work: np.ndarray | None = None
) -> np.ndarray:
    """b_i with sum_m max(0, L_im + b_i) = budget_i (eq. 44), exact to rounding; 0 where budget_i = 0.

    f(b) = sum_m max(0, L_m + b) is convex, piecewise linear and non-decreasing, so Newton's step
    b <- (budget - sum_{m in A} L_m) / |A|, A = {m: L_m + b > 0}, from any point with an active cell
    lands at or right of the root, and from there approaches it monotonically, each step dropping
    cells (the active sets are nested, so equal counts mean equal sets), until the active set no
    longer changes: then b is the root.  ``start`` (e.g. a nearby solution) saves steps; without one,
    or where it has no active cell, the start is -min L + budget / M (every cell active).  ``work``:
    an optional boolean array of L's shape to compute in (fresh 8 MB arrays each step cost page faults).
    """
    N, M = L.shape
    work = np.empty(L.shape, bool) if work is None else work
    top = None

    def right(rows):  # every cell active: the start right of the root
        nonlocal top
        top = -L.min(axis=1) + budget / M if top is None else top
        return top[rows]

    b = right(slice(None)).copy() if start is None else np.asarray(start, float).copy()
    b[budget <= 0] = 0.0
    rows = np.flatnonzero(budget > 0)
    prev = np.full(N, -1)
    for _ in range(M + 2):  # Newton steps
        if not rows.size:
            return b
        whole = rows.size > N // 2  # a row subset is a copy: worth it once most rows are done
        part = L if whole else L[rows]
        active = np.greater(part, -(b if whole else b[rows])[:, None], out=work[: len(part)])
        n = np.count_nonzero(active, axis=1)
        total = np.einsum("ij,ij->i", part, active)
        if whole:
            n, total = n[rows], total[rows]
        empty = n == 0  # left of every cell: restart at the right
        done = n == prev[rows]
        if empty.any():
            b[rows[empty]] = right(rows[empty])
        step = ~done & ~empty
        b[rows[step]] = (budget[rows[step]] - total[step]) / n[step]
        prev[rows] = np.where(empty, -1, n)
        rows = rows[~done]
    raise RuntimeError("solve_offset: Newton's method did not settle (non-finite input?)")


def features(coords: np.ndarray) -> np.ndarray:
    """(M, 4) features (1, c, |c|^2) of the cell coordinates: P and V need sums against these only."""
    x, y = coords[:, 0], coords[:, 1]
    return np.column_stack([np.ones(len(x)), x, y, x * x + y * y])


class Cells:
    """The grid in Alg. 1's coordinates: centres c centred and scaled by the side W; monomials of c."""

    # exponents (i, j) of x^i y^j up to degree 4, and where each product of two lands
    EXP: ClassVar[tuple] = tuple((i, d - i) for d in range(5) for i in range(d, -1, -1))
    INDEX: ClassVar[dict] = {e: k for k, e in enumerate(EXP)}

    def __init__(self, centres: np.ndarray, size: float):
        self.c = centres / size - 0.5
        x, y = self.c[:, 0], self.c[:, 1]
        self.cT = np.ascontiguousarray(self.c.T)
        self.cmax = np.abs(self.c).max(axis=0)  # max |x|, max |y|
        self.monoT = np.array([x**i * y**j for i, j in self.EXP])  # (15, M)
        self.mono = self.monoT.T
        self.phi = features(self.c)


def _sums(phi: np.ndarray, s2: np.ndarray, g2x2: np.ndarray):
    """(S, T) = (sum_m s2 (1, c), sum_m t (1, c, |c|^2)) per user, t = s2 (s2 + 2 g2); g2x2 = 2 g2."""
    t = np.add(s2, g2x2)
    t *= s2
    return (s2 @ phi)[:, :3], t @ phi


def _terms(G, S, T, tot, dev, p, M):
    """(P, V) from G = sum g2 (1, c), (S, T) of ``_sums``, tot = sum E[G~^2], dev = sum (g2 - tot / M)^2.

    E[G~^2] = g2 + s2 and Var[G~^2] = 2 t, so the centroid is (G + S)[c] / tot, the delta-method
    spread sum 2 t |c - centroid|^2 / tot^2 expands in T, and sum (E[G~^2] - tot / M)^2 = dev + T[1]
    - 2 (tot / M) S[1].
    """
    kappa = (G[:, 1:3] + S[:, 1:3]) / tot[:, None]
    spread = (
        2
        * (T[:, 3] - 2 * np.einsum("ij,ij->i", kappa, T[:, 1:3]) + np.einsum("ij,ij->i", kappa, kappa) * T[:, 0])
        / tot
        / tot
    )
    P = np.sum((kappa - p) ** 2, axis=1) + spread
    V = (dev + T[:, 0] - 2 * tot / M * S[:, 0] + (1 - 1 / M) * 2 * T[:, 0]) / M
    return P, V


def objective_terms(g2: np.ndarray, s2: np.ndarray, coords: np.ndarray, users: np.ndarray):
    """(P, V) of eqs. (34)-(36) for noise variances s2 (N, M), cell coordinates (M, 2), users (N, 2)."""
    phi = features(coords)
    G = g2 @ phi[:, :3]
    S, T = _sums(phi, s2, g2 + g2)
    # a user whose clipped gradient is all zero and who gets no noise: guard 0/0
    tot = np.maximum(G[:, 0] + S[:, 0], TINY)
    M = g2.shape[1]
    return _terms(G, S, T, tot, ((g2 - (tot / M)[:, None]) ** 2).sum(axis=1), users, M)


def plane_variance(g2: np.ndarray, coords: np.ndarray, a: np.ndarray, budget: np.ndarray, start=None):
    """sigma^2 = max(0, a . c + b - g2) (eq. 37) for slopes a (N, 2), b spending the budgets (eq. 44)."""
    L = a @ coords.T
    L -= g2
    L += solve_offset(L, budget, start)[:, None]
    return np.maximum(L, 0.0, out=L)


class Objective:
    """J = P - rho V / V_0 of one epoch's users from their cell sums (``_terms``)."""

    def __init__(self, cells: Cells, g2: np.ndarray, budget: np.ndarray, users: np.ndarray, size: float, rho: float):
        self.cells, self.g2, self.rho = cells, g2, rho
        self.p = users / size - 0.5
        self.M = M = g2.shape[1]
        self.g2x2 = np.empty_like(g2)
        G = g2 @ cells.phi
        self.G = G[:, :3]  # sum g2 (1, c)
        self.tot = np.maximum(self.G[:, 0] + budget, TINY)  # every allocation spends the budget exactly
        dev = np.subtract(g2, (self.tot / M)[:, None], out=self.g2x2)  # g2x2 as scratch, set below
        self.dev = np.einsum("ij,ij->i", dev, dev)
        np.add(g2, g2, out=self.g2x2)
        # uniform noise of the same budget, s2 = B / M on every cell: the sums of _sums in closed form
        level = (budget / M)[:, None]
        grid = cells.phi.sum(axis=0)
        self.V0 = np.maximum(self.terms(level * grid[:3], level * level * grid + 2 * level * G)[1], TINY)

    def terms(self, S, T, rows=slice(None)):
        """(P, V) of ``rows`` from their sums S, T."""
        return _terms(self.G[rows], S, T, self.tot[rows], self.dev[rows], self.p[rows], self.M)

    def J(self, S, T, rows=slice(None)):
        P, V = self.terms(S, T, rows)
        return P - self.rho * V / self.V0[rows]


# products of monomials: E[k, j, l] = 1 if monomial k (degree <= 2) times feature j (1, x, y, x^2 + y^2)
# has monomial l (degree <= 4)
def _product_table() -> np.ndarray:
    feats = [[(0, 0)], [(1, 0)], [(0, 1)], [(2, 0), (0, 2)]]
    E = np.zeros((6, 4, len(Cells.EXP)))
    for k, (i, j) in enumerate(Cells.EXP[:6]):
        for f, terms in enumerate(feats):
            for a, b in terms:
                E[k, f, Cells.INDEX[(i + a, j + b)]] += 1.0
    return E


_PRODUCT = _product_table()


def _affine_product(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Coefficients (N, 6) on (1, x, y, x^2, xy, y^2) of the product of two affine maps (N, 3) of c."""
    return np.column_stack(
        [
            p[:, 0] * q[:, 0],
            p[:, 0] * q[:, 1] + p[:, 1] * q[:, 0],
            p[:, 0] * q[:, 2] + p[:, 2] * q[:, 0],
            p[:, 1] * q[:, 1],
            p[:, 1] * q[:, 2] + p[:, 2] * q[:, 1],
            p[:, 2] * q[:, 2],
        ]
    )


class Plane:
    """Per user: the allocation sigma^2 = max(0, a . c + b - g2) at slope a (N, 2), and J at a + d.

    ``move`` solves eq. (44) on every cell, for the rows whose slope moved (Alg. 1 often leaves r at
    a bound, where the plane does not move).  ``perturbed`` then gives J at a + d for any d with
    2 max_m |d . c_m| <= the row's ``reach``: every cell whose margin omega = a . c + b - g2 has
    |omega| > reach keeps its side (module doc), so the sums over those cells are the base's,
    corrected by polynomial moments (the shift d . c + delta is affine in c), and the cells within
    the reach are summed one by one.
    """

    def __init__(self, objective: Objective, budget: np.ndarray):
        N = len(budget)
        self.objective, self.budget = objective, budget
        self.a = np.full((N, 2), np.nan)  # nothing solved yet
        self.reach = np.zeros(N)
        self.b = None
        # per user: sums S, T and monomial moments over the cells active whatever the perturbation,
        # lambda = (b, a) and |A|, sum_A c of the whole active set A (for the next start)
        self.S, self.T = np.zeros((N, 3)), np.zeros((N, 4))
        self.moments, self.lam = np.zeros((N, len(Cells.EXP))), np.zeros((N, 3))
        self.active = np.zeros((N, 3))
        self.work = _work(*objective.g2.shape)
        # the cells near the boundary, one entry per (user, cell)
        self.row, self.omega_k, self.g2_k = np.zeros(0, int), np.zeros(0), np.zeros(0)
        self.c_k, self.phi_k = np.zeros((0, 2)), np.zeros((0, 4))

    def move(self, a: np.ndarray, reach: np.ndarray) -> None:
        """Base the perturbations at slope a, within ``reach`` (N,); rows re-solved only where needed."""
        rows = np.flatnonzero(np.any(a != self.a, axis=1) | (reach > self.reach))
        if rows.size:
            self._solve(rows, a[rows], reach[rows])

    def _solve(self, rows, a, reach):
        obj, cells, n = self.objective, self.objective.cells, len(rows)
        # (n, M) work arrays in reused buffers: a fresh 8 MB array per step costs page faults (~30 %)
        omega, s2, t, mask, g2, g2x2 = (w[:n] for w in self.work)
        if n == len(self.a):
            g2, g2x2 = obj.g2, obj.g2x2
        else:
            np.take(obj.g2, rows, axis=0, out=g2)
            np.take(obj.g2x2, rows, axis=0, out=g2x2)
        np.matmul(a, cells.cT, out=omega)
        omega -= g2
        start = None
        if self.b is not None:  # the previous offset moved as if no cell changed side: a close start
            start = self.b[rows] - np.einsum("ij,ij->i", a - self.a[rows], self.active[rows, 1:]) / np.maximum(
                self.active[rows, 0], 1
            )
        b = solve_offset(omega, self.budget[rows], start, mask)
        omega += b[:, None]
        np.maximum(omega, 0.0, out=s2)
        np.add(s2, g2x2, out=t)
        t *= s2
        S, T = (s2 @ cells.phi)[:, :3], t @ cells.phi  # as _sums
        moments = np.greater(omega, 0.0, out=t) @ cells.mono
        near_r, col = np.divmod(
            np.flatnonzero(np.less_equal(np.abs(omega, out=s2), reach[:, None], out=mask)), omega.shape[1]
        )
        omega_k, g2_k = omega[near_r, col], g2[near_r, col]
        c_k, phi_k = cells.c[col], cells.phi[col]
        on = omega_k > 0
        w = np.where(on, omega_k, 0.0)
        # sums and moments over the cells that stay active within the reach: all active minus the near
        self.active[rows] = moments[:, :3]
        self.moments[rows] = moments - _per_row(near_r, cells.mono[col] * on[:, None], n)
        self.S[rows] = S - _per_row(near_r, w[:, None] * phi_k[:, :3], n)
        self.T[rows] = T - _per_row(near_r, (w * (w + 2 * g2_k))[:, None] * phi_k, n)
        self.lam[rows] = np.column_stack([b, a])  # on an active cell omega + g2 = a . c + b
        if self.b is None:
            self.b = b
        self.b[rows], self.a[rows], self.reach[rows] = b, a, reach
        keep = ~np.isin(self.row, rows)
        self.row = np.concatenate([self.row[keep], rows[near_r]])
        self.omega_k = np.concatenate([self.omega_k[keep], omega_k])
        self.g2_k = np.concatenate([self.g2_k[keep], g2_k])
        self.c_k = np.concatenate([self.c_k[keep], c_k])
        self.phi_k = np.concatenate([self.phi_k[keep], phi_k])

    def perturbed(self, d: np.ndarray) -> np.ndarray:
        """J at slope a + d (N, 2), exact to rounding, for 2 max |d . c| within each row's reach."""
        N = len(d)
        mono, S, T, budget, row = self.moments, self.S, self.T, self.budget, self.row
        v = self.omega_k + np.einsum("ij,ij->i", d[row], self.c_k)
        # Newton from the right (every near cell active), as in solve_offset
        fixed = S[:, 0] + d[:, 0] * mono[:, 1] + d[:, 1] * mono[:, 2]  # sum of omega + d . c on far active cells
        n = mono[:, 0] + np.bincount(row, minlength=N)
        delta = (budget - fixed - np.bincount(row, weights=v, minlength=N)) / np.maximum(n, 1)
        for _ in range(len(v) + 2):
            on = v + delta[row] > 0
            n_on = mono[:, 0] + np.bincount(row, weights=on, minlength=N)
            if np.array_equal(n_on, n):
                break
            n = n_on
            delta = (budget - fixed - np.bincount(row, weights=np.where(on, v, 0.0), minlength=N)) / np.maximum(n, 1)
        s2_k = np.maximum(v + delta[row], 0.0)
        e = np.column_stack([delta, d])  # the shift on far active cells
        q = _affine_product(e, 2 * self.lam + e)  # there t' - t = e (2 lambda + e)
        S_new = (
            S
            + np.einsum("nk,kjl,nl->nj", e, _PRODUCT[:3, :3], mono)
            + _per_row(row, s2_k[:, None] * self.phi_k[:, :3], N)
        )
        T_new = (
            T
            + np.einsum("nk,kjl,nl->nj", q, _PRODUCT, mono)
            + _per_row(row, (s2_k * (s2_k + 2 * self.g2_k))[:, None] * self.phi_k, N)
        )
        return self.objective.J(S_new, T_new)

    def allocation(self, a: np.ndarray) -> np.ndarray:
        """sigma^2 (N, M) at slope a."""
        return plane_variance(self.objective.g2, self.objective.cells.c, a, self.budget, self.b)


@functools.lru_cache(maxsize=1)
def _work(N: int, M: int) -> tuple:
    """Plane's (N, M) work arrays, kept from one epoch to the next (fresh 48 MB per epoch: page faults)."""
    return tuple(np.empty((N, M), bool if k == 3 else float) for k in range(6))


def _per_row(row: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Sums of ``values``' rows per row index, (n, k)."""
    k = values.shape[1]
    flat = (row[:, None] * k + np.arange(k)).ravel()
    return np.bincount(flat, weights=values.ravel(), minlength=n * k).reshape(n, k)


def _reach(cells: Cells, *shifts: np.ndarray) -> np.ndarray:
    """Per user, twice the largest |d . c_m| over the shifts d (N, 2), with room for rounding."""
    bound = np.max([np.abs(d) @ cells.cmax for d in shifts], axis=0)
    return 2.0 * bound * (1 + 1e-6) + 1e-300


def geo_variance(
    gbar: np.ndarray,
    budget: np.ndarray,
    centres: np.ndarray,
    users: np.ndarray,
    size: float,
    rho: float,
    settings: GeoSettings,
) -> tuple[np.ndarray, dict]:
    """Alg. 1 for every user with noise budget ``budget`` (N,): the optimal sigma^2 (N, M) and a summary.

    A user without budget gets no noise (and r = 0, u = 0 in the summary).
    """
    N, M = gbar.shape
    s2 = np.zeros((N, M))  # users without budget keep 0
    info = {"J": np.zeros(N), "P": np.zeros(N), "V": np.zeros(N), "r": np.zeros(N), "u": np.zeros((N, 2))}
    rows = np.flatnonzero(budget > 0)
    if not rows.size:
        return s2, info
    g2, budget, users = gbar[rows] ** 2, budget[rows], users[rows]
    cells = Cells(centres, size)
    obj = Objective(cells, g2, budget, users, size, rho)
    plane = Plane(obj, budget)
    s = (obj.G[:, 0] + budget) / M  # mean level of the noisy squared gradient
    delta_g = obj.G[:, 1:3] / np.maximum(obj.G[:, :1], TINY) - obj.p  # eq. (42)
    norm = np.linalg.norm(delta_g, axis=1)
    u = np.where(norm[:, None] > 0, delta_g / np.maximum(norm, 1e-300)[:, None], [1.0, 0.0])
    r = np.full(len(rows), settings.r_max)
    eps = settings.fd_eps

    def fd_shifts(r, u):
        """The slope shifts of eqs. (45) (J(u, r +- eps)) and (46) (J(u +- eps e_k, r)) at (u, r)."""
        e1 = np.column_stack([eps * r * s, np.zeros_like(r)])
        return (eps * s)[:, None] * u, e1, e1[:, ::-1]

    for _ in range(settings.outer_iters):
        for _ in range(settings.inner_iters):
            shifts = fd_shifts(r, u)  # one reach for both kinds: a row whose r stays put is not re-solved
            plane.move((r * s)[:, None] * u, _reach(cells, *shifts))
            dr = (plane.perturbed(shifts[0]) - plane.perturbed(-shifts[0])) / (2 * eps)  # eq. (45)
            r = np.clip(r + settings.step_r * dr, 0.0, settings.r_max)
            if np.all(np.abs(dr) <= settings.tol_r):
                break
        _, e1, e2 = shifts = fd_shifts(r, u)
        plane.move((r * s)[:, None] * u, _reach(cells, *shifts))
        du = np.column_stack(
            [
                (plane.perturbed(e1) - plane.perturbed(-e1)) / (2 * eps),  # eq. (46)
                (plane.perturbed(e2) - plane.perturbed(-e2)) / (2 * eps),
            ]
        )
        u = u + settings.step_u * du
        u = u / np.maximum(np.linalg.norm(u, axis=1), 1e-300)[:, None]
        if np.all(np.linalg.norm(du, axis=1) <= settings.tol_u):
            break
    final = plane.allocation((r * s)[:, None] * u)  # eq. (47)
    if rows.size == N:
        s2 = final
    else:
        s2[rows] = final
    P, V = obj.terms(*_sums(cells.phi, final, obj.g2x2))
    info["J"][rows], info["P"][rows], info["V"][rows] = P - rho * V / obj.V0, P, V / obj.V0
    info["r"][rows], info["u"][rows] = r, u
    return s2, info
