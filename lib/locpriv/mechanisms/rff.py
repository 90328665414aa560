"""Federated KDE with random Fourier features ([RFF-KDE], Alg. 2 and 3).

Each user draws ``max_features`` frequencies at the base bandwidth h0 once and
keeps them (``state_params``: every run sharing h0 and the policy reuses them);
a query (h, B) is answered with the first B of them rescaled by h0 / h, or
refused by the user-side policy of §3.3/§3.5.  The server view is one row per
user with the exact compact report (omega_b, phase_b), from which the server
can rebuild the user's surface (eq. 7); a refused query leaves an empty view
whose metadata carries the refusal, which is all the server learns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import rff
from ..adversary import likelihoods
from ..dp import no_guarantee
from ..kde import normaliser
from ..params import Param
from .base import BANDWIDTH, Mechanism

PARAMS = {
    "h": BANDWIDTH,
    "B": Param("B", "int", "random Fourier features per user answer", low=0),
    "h0": Param(
        "h0",
        "float",
        "base bandwidth the frequencies are drawn at (Lemma 4 allows h = (4n+1) h0); 'h' = the query's own bandwidth",
        default="h",
        low=0.0,
        special=("h",),
    ),
    "max_features": Param(
        "max_features",
        "int",
        "policy: most features a user answers with (also how many it draws once)",
        default=50,
        low=0,
    ),
    "risk": Param(
        "risk",
        "float",
        "policy: accepted probability C(gamma) of fewer than min_bands bands across the domain (Lemma 3)",
        default=0.5,
        low=0.0,
        high=0.999999,
    ),
    "min_bands": Param(
        "min_bands",
        "int",
        "policy: Lemma 3's j, bands required across the largest inscribed square (>= 2, §3.5)",
        default=2,
        low=1,
    ),
}


def _columns(B: int) -> list[str]:
    return [f"{c}_{b}" for b in range(B) for c in ("omega_x", "omega_y", "phase")]


class RFF(Mechanism):
    """Federated KDE with random Fourier features ([RFF-KDE] Alg. 2/3), with the users' refusal policy.

    Trust model ``none``: the report reveals the location up to the period of its cosines, and the
    paper makes no formal claim, so no trust arrangement turns it into a guarantee (its privacy is
    measured by the attacks).
    """

    name = "rff"
    trust_model = "none"
    params = PARAMS

    def _h0(self) -> float:
        return self.settings["h"] if self.settings["h0"] == "h" else self.settings["h0"]

    def state_params(self):
        return {"h0": self._h0(), "max_features": self.settings["max_features"]}

    def claim(self):
        return no_guarantee(
            "no formal DP: privacy from the periodicity of the answer (Lemmas 2-4); "
            "measured by the local-maxima attack's Z",
            covers="the location up to the answer's period (no formal claim)",
        )

    def communication(self, grid):
        """3B numbers (omega_b, phase_b) determine the surface the user sends."""
        return 3.0 * self.settings["B"]

    def randomize_points(self, points, grid, rng):
        s = self.settings
        policy = rff.RFFPolicy(s["max_features"], grid.domain.inscribed_square, s["risk"], s["min_bands"])
        users = rff.draw_users(len(points), s["max_features"], self._h0(), rng)
        B = s["B"]
        answer = rff.answer_query(users, points[["x", "y"]].to_numpy(), s["h"], B, policy)
        cols = _columns(B)
        if isinstance(answer, rff.Refusal):
            view = pd.DataFrame({"user": pd.Series(dtype="int64"), **{c: pd.Series(dtype="float64") for c in cols}})
            view.attrs["refusal"] = answer.record()
            return view
        omega, phase = answer
        table = np.concatenate([omega, phase[..., None]], axis=2).reshape(len(points), 3 * B)
        view = pd.DataFrame(table, columns=cols)
        view.insert(0, "user", points["user"].to_numpy())
        return view

    def _report(self, view: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        B = self.settings["B"]
        table = view[_columns(B)].to_numpy().reshape(len(view), B, 3)
        return table[..., :2], table[..., 2]

    def partial(self, view, grid):
        if view.empty:
            return np.zeros(grid.shape)
        return rff.rff_sum(*self._report(view), grid.x, grid.y)

    def density(self, total, n_users, grid):
        # eq. (6): the sum over users and features estimates N B k_h; dividing by the
        # Gaussian normaliser 2 pi h^2 makes it a pdf like the exact KDE
        return total / (n_users * self.settings["B"] * normaliser(self.settings["h"]))

    def surfaces(self, view, grid):
        return rff.rff_surfaces(*self._report(view), grid.x, grid.y)

    def log_likelihood(self, view, grid):
        """Cell-resolution measure of the singular report: the sum over features of the log
        length of the lines omega_b^T x = phase_b (mod 2 pi) inside each cell (the informed
        adversary's too: a per-user report).

        The frequencies are drawn independently of the location, so only the phases carry
        information.  Given x uniform in a cell, one phase has density proportional to its
        line length there (exact for B = 1); for B > 1 the phases are taken as independent
        given the cell — the cell-resolution approximation of their joint law, whose support
        is the intersection of the B line families.
        """
        return likelihoods.rff_log_lengths(*self._report(view), grid)
