"""Clipping, noise budgets and the noisy uploads of the obstacle gradients ([GeoDP-Radio] §IV).

Three schemes, registered by name in ``SCHEMES``:

* ``radio_fedavg``  – no noise (FedAvg).
* ``radio_uniform`` – DPFL baseline: i.i.d. Gaussian noise on every cell with total energy
  E||n_i||^2 = B_i, the user's noise budget.
* ``radio_geo``     – geometry-aligned allocation of the same budget, Alg. 1 (:mod:`.geo`).

The budget (``CALIBRATIONS``): ``clip`` (default) B_i = mu C^2 whatever the user's gradient, so the
uniform scheme is a Gaussian mechanism of fixed scale and has a guarantee (``guarantee``);
``paper`` B_i = mu ||g_bar_i||^2 as the paper's budget (22) is printed, a noise scale set by the
user's own data, under which no guarantee holds (a neighbouring dataset whose gradient is not
clipped gets far less noise: tests/test_radiomap_audit.py).

All work on every user at once ((N, M) arrays).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dp import Guarantee, gaussian
from ..dp.grid import grid_step
from .geo import GeoSettings, geo_variance

# grid of the released gradients: rounding moves two clipped uploads apart by at most
# sqrt(M) step <= 2C / GRID_CELLS in L2 (see dp.gaussian), i.e. inflates the sensitivity 2C by 2^-20;
# a fine grid because gradients are often orders of magnitude below C (a coarse one zeroes them)
GRID_CELLS = 2**20


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


CALIBRATIONS = ("clip", "paper")


def noise_budget(gbar: np.ndarray, mu: float, C: float, calibration: str) -> np.ndarray:
    """Each user's total noise energy B_i = E||n_i||^2 (N,): mu C^2 (``clip``) or mu ||g_bar_i||^2 (``paper``)."""
    if calibration == "clip":
        return np.full(len(gbar), mu * C * C)
    if calibration == "paper":
        return mu * np.sum(gbar**2, axis=1)
    raise ValueError(f"calibration: got {calibration!r}; allowed: {list(CALIBRATIONS)}")


def uniform_variance(budget: np.ndarray, M: int) -> np.ndarray:
    """Per-cell variance B_i / M (same on every cell), shape (N, M)."""
    return np.repeat((np.asarray(budget, float) / M)[:, None], M, axis=1)


def aggregate(gbar: np.ndarray, s2: np.ndarray, weight: np.ndarray, C: float, rng: np.random.Generator) -> np.ndarray:
    """The server's weighted sum sum_i w_i upload_i (M,), drawn from its law without drawing each upload.

    The clean part sum_i w_i Q(g_bar_i) is exact (each gradient rounded to the grid as ``upload`` does);
    the noise part sum_i w_i step Z_i, Z_i discrete Gaussian of variance s2_i / step^2, is drawn as one
    Gaussian per cell of the same variance sum_i w_i^2 s2_i.  Coupling each Z_i with a Gaussian of
    its variance, the Wasserstein-1 distance of the two laws is at most 0.27 grid steps per cell (the
    largest W1 between a discrete Gaussian and its continuous counterpart, over all scales, is 0.261:
    tests/test_radiomap.py), weights summing to 1; the uploads themselves, which the attack and the
    guarantee concern, always come from ``upload``.
    """
    step = gradient_step(C, gbar.shape[1])
    clean = weight @ (step * np.rint(gbar / step))
    return clean + np.sqrt((weight**2) @ s2) * rng.standard_normal(gbar.shape[1])


@dataclass(frozen=True)
class Scheme:
    name: str
    uses_mu: bool
    uses_rho: bool
    description: str


SCHEMES = {
    "radio_fedavg": Scheme("radio_fedavg", False, False, "FedAvg: clipped gradients, no noise"),
    "radio_uniform": Scheme("radio_uniform", True, False, "DPFL: i.i.d. Gaussian noise, E||n||^2 = the budget"),
    "radio_geo": Scheme("radio_geo", True, True, "geometry-aligned noise of Alg. 1, the same budget"),
}


def noise_variance(scheme: str, gbar, budget, centres, users, size, rho, settings: GeoSettings):
    """sigma^2 (N, M) of the named scheme for the users' budgets (N,) and a per-user summary dict."""
    if scheme == "radio_fedavg":
        return np.zeros_like(gbar), {}
    if scheme == "radio_uniform":
        return uniform_variance(budget, gbar.shape[1]), {}
    if scheme == "radio_geo":
        return geo_variance(gbar, budget, centres, users, size, rho, settings)
    raise ValueError(f"scheme: got {scheme!r}; allowed: {sorted(SCHEMES)}")


THETA_MODES = ("learned", "frozen")
DISCRETISATION = (
    "uploads rounded to a power-of-two grid (sqrt(M) step <= 2C/2^20) plus discrete Gaussian "
    "noise in grid units (Canonne, Kamath & Steinke 2020): every grid point reachable from every input"
)
RELATION = "any two datasets of one user: measurements and location (local: each upload is seen on its own)"


def guarantee(scheme: str, mu: float, M: int, delta: float, epochs: int, theta: str, calibration: str) -> dict:
    """The formal (epsilon, delta) of a trained run, or a plain statement that none holds.

    Only the uniform scheme with the ``clip`` calibration has one.  Proof sketch (local model: each
    upload is seen on its own).  In every epoch the user releases Q(g_bar) + step Z with g_bar the
    clipped gradient (eq. 20), Q the rounding to the public grid and Z ~ N_Z(0, sigma^2 / step^2)^M,
    sigma^2 = mu C^2 / M fixed in advance, whatever the data.  Any two datasets of the user (its
    measurements and its location) give ||g_bar|| <= C and ||g_bar'|| <= C, so the two clipped
    gradients are at most 2C apart in L2, and after rounding at most 2C + sqrt(M) step
    <= 2C (1 + 2^-20) (:func:`gradient_step`).  The discrete Gaussian mechanism on integer vectors at
    L2 distance Delta is Delta^2 / (2 sigma^2)-zCDP (Canonne, Kamath & Steinke 2020, Thm 4), so an
    epoch costs rho_1 <= (2C)^2 (1 + 2^-20)^2 / (2 mu C^2 / M) = (2 M / mu) (1 + 2^-20)^2.  The
    broadcast of epoch t is a function of earlier uploads (of every user), so the T epochs compose
    adaptively: rho = T rho_1 (Bun & Steinke 2016, Lemma 1.7), and epsilon = rho + 2 sqrt(rho ln(1/delta))
    (Prop. 1.3).  No gate on the data is needed, or allowed: a gate such as "every user clipped" is
    itself a function of the data.  theta's gradient must not be uploaded in the clear (``theta``
    "frozen"), or nothing holds.

    ``paper`` scales the noise by the user's own ||g_bar||: the noise law depends on the data, and a
    neighbouring dataset whose gradient is small gets almost no noise, so no (epsilon, delta) holds
    (audited: tests/test_radiomap_audit.py).
    """

    def none(note: str) -> dict:
        return Guarantee(
            model="none",
            epsilon=None,
            delta=None,
            relation=RELATION,
            covers="nothing formally",
            discretisation=DISCRETISATION,
            note=note,
        ).as_dict()

    if scheme not in SCHEMES:
        raise ValueError(f"scheme: got {scheme!r}; allowed: {sorted(SCHEMES)}")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration: got {calibration!r}; allowed: {list(CALIBRATIONS)}")
    if scheme == "radio_fedavg":
        return none("no noise: the clipped gradients are uploaded as they are; no DP guarantee")
    if scheme == "radio_geo":
        return none(
            "noise is allocated from the user's own gradient and location; sigma_m = 0 on cells "
            "above the plane, so a change of the user's data can be seen exactly there: no "
            "(epsilon, delta) guarantee holds, whatever the calibration"
        )
    if mu <= 0:
        return none("mu = 0: no noise")
    if calibration == "paper":
        return none(
            "calibration 'paper': the noise energy is mu ||g_bar_i||^2, set by the user's own gradient, "
            "so a neighbouring dataset with a small gradient gets almost no noise: no (epsilon, delta) "
            "holds (use calibration: clip)"
        )
    if theta != "frozen":
        return none(
            "theta's gradient is uploaded unclipped and without noise every epoch: no guarantee "
            "(set training.theta: frozen to keep theta public and unuploaded)"
        )
    # discrete Gaussian of std sqrt(mu/M) C on integer vectors whose L2 distance is at most 2C + sqrt(M) step
    # (rounding): rho per epoch = (2C + sqrt(M) step)^2 / (2 (mu/M) C^2) <= (2M/mu) (1 + 1/GRID_CELLS)^2
    rho = epochs * 2.0 * M / mu * (1.0 + 1.0 / GRID_CELLS) ** 2
    eps = rho + 2 * np.sqrt(rho * np.log(1 / delta))
    return Guarantee(
        model="(epsilon, delta)-LDP per user, Gaussian mechanism under zCDP composition",
        epsilon=float(eps),
        delta=float(delta),
        relation=RELATION,
        covers="the user's measurements and location through its h-gradient uploads over all epochs; theta is "
        "public and frozen",
        discretisation=DISCRETISATION,
        note=f"noise calibrated to the clip bound: std sqrt(mu/M) C = {np.sqrt(mu / M):.4g} C per cell whatever the "
        f"gradient; L2 sensitivity 2C (2C (1 + 2^-20) after rounding to the grid); rho = {rho:.4g} over "
        f"{epochs} epochs",
    ).as_dict()
