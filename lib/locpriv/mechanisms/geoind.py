"""Geo-indistinguishability baseline ([RFF-KDE] §4.2.3): planar Laplace, then exact KDE.

Each user moves its location by planar Laplace noise (eq. 18), released on a
public grid (``locpriv.planar_laplace``: exact, Mironov-safe), and answers the
query as exact federated KDE from the perturbed point.  The server's view is
the perturbed point itself (the surface is a deterministic function of it), so
everything after randomisation is the exact-KDE branch.
"""

from __future__ import annotations

import numpy as np

from .. import planar_laplace
from ..adversary import informed, likelihoods
from ..params import Param
from .base import BANDWIDTH, PERSON_REPORTS, TIMING
from .fedkde import KDE, FedKDE


class GeoInd(FedKDE):
    """Geo-indistinguishability (Andrés et al. 2013): planar Laplace on a public grid, then exact KDE.

    Trust model ``local``: each user perturbs its own location before sending it.
    """

    name = "geoind"
    trust_model = "local"
    params = {
        "h": BANDWIDTH,
        "epsilon": Param(
            "epsilon",
            "float",
            "geo-indistinguishability level per distance unit of the dataset (per metre for real data)",
            low=0.0,
        ),
        "kde": KDE,
        "timing": TIMING,
        "person_reports": PERSON_REPORTS,
    }

    def claim(self):
        return planar_laplace.guarantee(
            self.report_epsilon, "distance units of the dataset", timing_safe=self.timing_safe
        )

    def variance(self) -> float:
        """Per-coordinate variance of a report around the user's location: 3 / epsilon^2.

        The planar Laplace radius is Gamma(2, 1/epsilon) (Andrés et al. 2013, eq. 4), so
        E r^2 = 6 / epsilon^2, split evenly over the two coordinates by the uniform angle.  The
        released law is its restriction to the public grid of step Lambda <= 1 / (1024 epsilon):
        exact up to a relative O((epsilon Lambda)^2) < 1e-6, plus the snapping of the location
        to the grid (at most Lambda / 2 per coordinate, a deterministic shift, not noise).
        """
        return 3.0 / self.report_epsilon**2

    def randomize_points(self, points, grid, rng):
        view = points[["user"]].reset_index(drop=True)
        epsilon = self.report_epsilon
        moved = planar_laplace.perturb(points[["x", "y"]].to_numpy(), epsilon, rng, timing_safe=self.timing_safe)
        view["x"], view["y"] = moved[:, 0], moved[:, 1]
        view.attrs["noise"] = {"epsilon": epsilon}  # the planar Laplace's epsilon the reports were drawn at
        return view

    def log_likelihood(self, view, grid):
        """-eps ||report - c|| at each cell centre c (Andrés et al. 2013, eq. 18), eps as the view records it.

        The report's law is the planar Laplace restricted to the release grid, P(z | x̂)
        proportional to exp(-eps ||z - x̂||) with a normaliser that does not depend on x̂
        (translation invariance of the grid), so this is exact up to snapping the centre
        to the grid (a shift below 1/(1024 eps)).  The informed adversary's is the same (a
        per-user report).
        """
        epsilon = informed.recorded_noise(view, self.name)["epsilon"]
        return likelihoods.planar_laplace_logpdf(view[["x", "y"]].to_numpy(), grid, epsilon)

    def informed_statistic(self, view, log_lik):
        """The metric relation's statistic: sup over x != x' of (log L(x) - log L(x')) / ||x - x'||, which is
        the recorded eps for every report (triangle inequality: | ||z - x'|| - ||z - x|| | <= ||x - x'||,
        with equality along rays from the report z), per distance unit as the guarantee states it."""
        return np.full(len(view), float(informed.recorded_noise(view, self.name)["epsilon"]))

    noise_per_report = True  # one report, one independent draw

    def realised_noise(self, view, points, grid):
        """Per report: the radius Λ ||K|| of its lattice noise K (report minus snapped location), planar Laplace at
        the epsilon the view records."""
        from ..audit.noise import LatticePlanarLaplaceRadius, Noise

        epsilon = informed.recorded_noise(view, self.name)["epsilon"]
        step = planar_laplace.grid_step(epsilon)
        noise = planar_laplace.noise_of(view[["x", "y"]].to_numpy(), points[["x", "y"]].to_numpy(), epsilon)
        radius = step * np.hypot(noise[:, 0], noise[:, 1])
        return [Noise("|report - snapped location|, distance units", radius, LatticePlanarLaplaceRadius(epsilon, step))]

    def point_log_likelihood(self, view, xy, grid):
        """Exact at the points: the likelihood is evaluated at cell centres (``log_likelihood_at_points``)."""
        return self.log_likelihood_at_points(view, xy, grid)

    def audit_case(self, grid):
        """Pairs at distance about 1/eps (eps d ~ 1) from the domain centre in four directions (x, y and both
        diagonals) and from a corner (x axis, diagonal), on the mechanism's public grid (where its guarantee is
        exactly eps d; off it snapping adds a constant); each draw scored by the exact log-likelihood ratio of
        the report (``audit.cases.whole_report``), with the report's coordinates beside it; the bound is
        divided by d = ||a - b|| (metric DP)."""
        from ..audit.cases import domain_corners, metric_directions, whole_report, xy_of

        lo, hi = domain_corners(grid)
        step = planar_laplace.grid_step(self.report_epsilon)

        def on_grid(point):
            return step * np.round(np.asarray(point) / step)

        pairs = []
        for where, a, angles in (("centre", (lo + hi) / 2, (0.0, 45.0, 90.0, 135.0)), ("corner", lo, (0.0, 45.0))):
            a = on_grid(a)
            for label, b in metric_directions(a, 1.0 / self.report_epsilon, angles):
                b = on_grid(b)
                name = f"two grid points at distance ~1/epsilon along the {label}, domain {where}"
                pairs.append(whole_report(self, grid, name, a, b, raw=xy_of, distance=float(np.linalg.norm(b - a))))
        return pairs
