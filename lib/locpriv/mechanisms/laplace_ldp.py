"""Laplace local DP for locations ([Deconv-LDP]) as a branch of the location DAG.

Each user clamps its location to the public domain box (counted in the view's
metadata; clamping is a public map, so the guarantee holds for every input) and
reports it with Laplace noise b_j = 2 (box side_j) / ε per coordinate (Theorem 1,
q = 2), sampled exactly as discrete Laplace on a public power-of-two grid
(``locpriv.laplace_ldp``: ε-LDP for any two locations, proof there).  The server estimates the
density by the naive KDE of the reports or by the deconvoluting KDE (eq. 5), both in the
separable GEMM form; the attack's surface is the exact kernel at the report, so its best guess
is the report.
"""

from __future__ import annotations

import numpy as np

from .. import laplace_ldp
from ..adversary import informed, likelihoods
from ..dp import Guarantee
from ..params import Param
from .base import BANDWIDTH, PERSON_REPORTS, TIMING, as_grid, clamp_to_domain
from .fedkde import KDE, FedKDE


def _bounds(grid) -> np.ndarray:
    d = grid.domain
    return np.array([[d.xmin, d.xmax], [d.ymin, d.ymax]])


class LaplaceLDP(FedKDE):
    """Laplace LDP reports of the location (Farokhi 2020), naive or deconvoluting KDE on the server.

    Trust model ``local``: each user adds the noise to its own location before sending it.
    """

    name = "laplace_ldp"
    trust_model = "local"
    needs_domain = True
    params = {
        "h": BANDWIDTH,
        "epsilon": Param("epsilon", "float", "LDP budget for the whole 2-D location", low=0.0),
        "estimator": Param(
            "estimator",
            "choice",
            "server density estimator: naive KDE of the reports or the deconvoluting KDE ([Deconv-LDP] eq. 5)",
            default="deconv",
            choices=("naive", "deconv"),
        ),
        "kde": KDE,
        "timing": TIMING,
        "person_reports": PERSON_REPORTS,
    }

    def claim(self):
        eps = self.report_epsilon
        fixed = (
            (
                "; timing: fixed work per draw, delta = (1 + e^eps) x the sampler's total-variation bound at the "
                "largest scale any box gives (laplace_ldp.timing_safe_delta)"
            )
            if self.timing_safe
            else ""
        )
        return Guarantee(
            model="(epsilon, delta)-LDP" if self.timing_safe else "epsilon-LDP",
            epsilon=eps,
            delta=laplace_ldp.timing_safe_delta(eps) if self.timing_safe else 0.0,
            relation="any two inputs (local)",
            covers="each user's location (clamped to the public domain box first)",
            discretisation="each coordinate snapped to the public grid of step = largest power of two <= "
            "box side / 1024, plus exact discrete Laplace noise of scale 2 (side / step) / "
            "epsilon grid steps (Canonne, Kamath & Steinke 2020); reports on that grid",
            note="Farokhi 2020 Theorem 1 with q = 2; the sampler rounds its scale up, so the exact "
            "epsilon is slightly below the recorded one" + fixed,
        )

    def variance(self, domain) -> np.ndarray:
        """Per-coordinate (x, y) variance of a report around the user's snapped location.

        ``domain``: the public box (Grid, Domain or [xmin, xmax, ymin, ymax]).  The noise is exact
        discrete Laplace of scale b_j / step_j grid steps (``laplace_ldp.noise_variance``):
        2 b_j² up to a relative 1e-6, b_j = 2 (box side_j) / epsilon (Farokhi 2020, Theorem 1, q = 2).
        """
        return laplace_ldp.noise_variance(_bounds(as_grid(domain)), self.report_epsilon)

    def communication(self, grid):
        return 2.0

    def randomize_points(self, points, grid, rng):
        clamped, moved = clamp_to_domain(points, grid)
        epsilon = self.report_epsilon
        noisy = laplace_ldp.randomize(
            clamped, _bounds(grid), epsilon, rng, names=("x", "y"), timing_safe=self.timing_safe
        )
        view = points[["user"]].reset_index(drop=True)
        view["x"], view["y"] = noisy[:, 0], noisy[:, 1]
        view.attrs["clamped_to_box"] = moved
        # the per-coordinate scales (data units) the sampler drew with
        view.attrs["noise"] = {"scales": laplace_ldp.scales(_bounds(grid), epsilon).tolist()}
        return view

    def partial(self, view, grid):
        b = (
            tuple(laplace_ldp.scales(_bounds(grid), self.report_epsilon))
            if self.settings["estimator"] == "deconv"
            else (0.0, 0.0)
        )
        return self.kde_partial(view, grid, laplace_b=b)

    def log_likelihood(self, view, grid):
        """sum_j -|report_j - c_j| / b_j at each cell centre c (Farokhi 2020, Theorem 1), b_j as the view records.

        Cell centres lie in the box, so clamping is the identity there; the released report
        is the snapped coordinate plus discrete Laplace noise, P proportional to
        exp(-|z_j - ĉ_j| / b_j) on the grid with b_j = ``laplace_ldp.scales`` in data units
        and a normaliser free of ĉ: exact up to snapping the centre (<= box side / 2048).  The
        informed adversary's is the same (a per-user report); its statistic, max - min over the
        cells, is at most sum_j (box side_j) / b_j = the exact epsilon.
        """
        scales = informed.recorded_noise(view, self.name)["scales"]
        return likelihoods.product_laplace_logpdf(view[["x", "y"]].to_numpy(), grid, scales)

    noise_per_report = True  # one report, one independent draw

    def realised_noise(self, view, points, grid):
        """Per report and coordinate: |report − snapped clamped location| in grid steps, discrete Laplace of the
        scale the view records (``scales`` / step)."""
        from ..audit.noise import DiscreteLaplace, Noise

        bounds = _bounds(grid)
        noise = laplace_ldp.noise_steps(view[["x", "y"]].to_numpy(), clamp_to_domain(points, grid)[0], bounds)
        scales = np.asarray(informed.recorded_noise(view, self.name)["scales"]) / laplace_ldp.grid_steps(bounds)
        return [
            Noise(f"|report - snapped location| in {axis}, grid steps", np.abs(noise[:, j]), DiscreteLaplace(scales[j]))
            for j, axis in enumerate("xy")
        ]

    def point_log_likelihood(self, view, xy, grid):
        """Exact at the points: the likelihood is evaluated at cell centres (``log_likelihood_at_points``)."""
        return self.log_likelihood_at_points(view, xy, grid)

    def audit_case(self, grid):
        """The relation's worst-case pairs (``audit.cases.relation_pairs``): opposite corners along both diagonals,
        a point outside the box (clamped) against the far corner, the centre against a corner (the
        floating-point attack on continuous samplers lives there, Mironov 2012); each draw scored by the exact
        log-likelihood ratio of the report, with the report's coordinates (and their granularity) beside it."""
        from ..audit.cases import relation_pairs, xy_of

        return relation_pairs(self, grid, raw=xy_of)
