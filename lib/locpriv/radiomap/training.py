"""Federated radio-map training ([GeoDP-Radio] §II-B, eqs. 8-11) with clipped, noised uploads.

Per epoch: broadcast (h, theta); every user computes its gradients (8)-(9)
(vectorised over users); the obstacle gradient is clipped to norm C (20) and
noised (21) by the chosen scheme; the server averages with weights J_i / J and
takes one gradient step (10)-(11).  theta's gradient is uploaded unclipped and
without noise, as in the paper (only h carries location, §IV) -- which voids any
formal guarantee -- unless ``theta`` is "frozen": theta then stays public at its
initial value and only the clipped, noised h gradient leaves the user.

Simulation: in the epochs whose uploads are kept (for the attack) every user's upload is drawn
by the client's own code (``noise.upload``, exact discrete Gaussian); in the other epochs only
their weighted sum reaches the model, and it is drawn from its law directly (``noise.aggregate``:
one Gaussian per cell, within 0.27 grid steps in W1 of the exact sum), which spares N M exact
draws per epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .geo import GeoSettings
from .geometry import Links
from .model import entry_index, local_gradients, smooth_gain
from .noise import aggregate, clip, noise_budget, noise_variance, upload


@dataclass
class Problem:
    """Everything the protocol needs: the measurement links and the evaluation links."""

    links: Links  # one link per measurement
    user: np.ndarray  # (L,) owner of each measurement
    y: np.ndarray  # (L,) measured RSS, dB
    users: np.ndarray  # (N, 2) true user positions (used by Alg. 1 locally, and to score)
    centres: np.ndarray  # (M, 2) cell centres
    size: float  # side W of the area
    eval_links: Links  # links on which the map is scored
    eval_truth: np.ndarray  # true gain of each evaluation link (eq. 1 with h*, theta*)

    @property
    def n_users(self) -> int:
        return len(self.users)


@dataclass
class Settings:
    epochs: int
    eta_h: float
    eta_theta: float
    clip: float
    psi_scale: float
    h_init: float
    theta_init: tuple
    scheme: str
    mu: float = 0.0
    rho: float = 0.0
    geo: GeoSettings = field(default_factory=GeoSettings)
    theta: str = "learned"  # or "frozen": theta public, its gradient never uploaded
    calibration: str = "clip"  # noise budget mu C^2 ("clip") or mu ||g_bar||^2 ("paper", no guarantee)


@dataclass
class History:
    mae: list = field(default_factory=list)  # per epoch, after its update
    loss: list = field(default_factory=list)  # global loss F (eq. 5) before the update
    clipped: list = field(default_factory=list)  # fraction of users clipped per epoch
    heights: list = field(default_factory=list)  # h after each epoch
    theta: list = field(default_factory=list)  # theta after each epoch
    uploads: dict = field(default_factory=dict)  # epoch -> (N, M) noisy gradients
    clean: dict = field(default_factory=dict)  # epoch -> (N, M) clipped gradients


def mae(problem: Problem, heights: np.ndarray, theta: np.ndarray, scale: float) -> float:
    pred, _, _ = smooth_gain(problem.eval_links, heights, theta, scale)
    return float(np.mean(np.abs(pred - problem.eval_truth)))


def train(problem: Problem, s: Settings, rng: np.random.Generator, keep_epochs=()) -> History:
    """Run the protocol; ``keep_epochs`` (1-based) are the epochs whose uploads are kept."""
    M = problem.centres.shape[0]
    h = np.full(M, float(s.h_init))
    theta = np.asarray(s.theta_init, float).copy()
    J = np.bincount(problem.user, minlength=problem.n_users).astype(float)
    weight = J / J.sum()
    hist = History()
    keep = set(int(e) for e in keep_epochs)
    index = entry_index(problem.links, problem.user)
    work = tuple(np.empty(problem.links.matrix.nnz) for _ in range(3))
    for epoch in range(1, s.epochs + 1):
        loss, g, g_theta = local_gradients(
            problem.links, problem.user, problem.y, h, theta, s.psi_scale, problem.n_users, index, work
        )
        gbar, was_clipped = clip(g, s.clip)
        budget = noise_budget(gbar, s.mu, s.clip, s.calibration)
        s2, _ = noise_variance(s.scheme, gbar, budget, problem.centres, problem.users, problem.size, s.rho, s.geo)
        if epoch in keep:
            sent = upload(gbar, s2, s.clip, rng)  # on a grid, discrete Gaussian noise
            hist.uploads[epoch] = sent
            hist.clean[epoch] = gbar
            mean = weight @ sent
        else:
            mean = aggregate(gbar, s2, weight, s.clip, rng)
        h = h - s.eta_h * mean  # eq. (10)
        if s.theta == "learned":
            theta = theta - s.eta_theta * (weight @ g_theta)  # eq. (11)
        hist.loss.append(float(weight @ loss))
        hist.clipped.append(float(np.mean(was_clipped)))
        hist.mae.append(mae(problem, h, theta, s.psi_scale))
        hist.heights.append(h.copy())
        hist.theta.append(theta.copy())
    return hist
