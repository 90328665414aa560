"""``ldp_oue_grid``: optimized unary encoding over a grid (Wang et al., USENIX Security 2017), [SLDP]'s LDP baseline.

Each user sends a perturbed bit vector over a 2^level x 2^level grid of the public box (the bit
of its own cell kept w.p. p = 1/2, the others set w.p. q = 1/(e^ε + 1)); shardable.  ``level: auto``
takes the level from the granularity guideline (N and ε only, ``sldp.ldp_grid.grid_level``), resolved
with the run's N before any stage (``for_users``), so a run's path shows the level used.  The attack
surface is the exact posterior over cells under a uniform prior: weight e^ε on reported ones, 1
on zeros.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..adversary import informed
from ..dp import Guarantee
from ..params import Param
from ..quadtree import cell_codes
from ..sldp.ldp_grid import grid_level, oue_bits, oue_probabilities
from .base import PERSON_REPORTS, Mechanism, clamp_to_domain
from .partitions import EPSILON, domain_box, level_area, ones_column, oue_noise, oue_point_log_likelihood


class OUEGrid(Mechanism):
    """Optimized unary encoding over a 2^level x 2^level grid of the box (Wang et al. 2017).

    Trust model ``local``: each user perturbs its own bit vector before sending it.
    """

    name = "ldp_oue_grid"
    trust_model = "local"
    partial_per_area = True  # _cell_surface: bit counts over each cell's area
    params = {
        "epsilon": EPSILON,
        # each user's bit vector is materialised per shard: 4^6 bits x 5000 users = 20 MB
        "level": Param(
            "level",
            "int",
            "grid of 2^level x 2^level cells, or 'auto': the granularity "
            "guideline from the run's N and epsilon (locpriv.sldp.ldp_grid.grid_level)",
            default=4,
            low=0,
            high=6,
            special=("auto",),
        ),
        "person_reports": PERSON_REPORTS,
    }

    @classmethod
    def for_users(cls, params, n_users):
        if params["level"] != "auto":
            return params
        if n_users is None:
            raise ValueError(
                "level: 'auto' sizes the grid from the run's number of users, which is known only "
                "once the dataset is read here; give n as numbers or an explicit level"
            )
        # the guideline is for the epsilon each report is drawn at
        report_eps = params["epsilon"] / cls.params["person_reports"].value(params)
        return {**params, "level": grid_level(n_users, report_eps, cls.params["level"].high)}

    @property
    def level(self) -> int:
        """The grid's level; 'auto' is resolved from the users first (``sized``: randomize and estimate do it)."""
        level = self.settings["level"]
        if level == "auto":
            raise ValueError(
                f"{self!r}: level 'auto' follows the number of users; use .sized(n_users) (randomize "
                "and estimate resolve it from the users they are given)"
            )
        return level

    def claim(self):
        return Guarantee(
            model="epsilon-LDP",
            epsilon=self.report_epsilon,
            delta=0.0,
            relation="any two inputs (local)",
            covers="each user's location (clamped to the public domain box first)",
            discretisation="bits only (no real values released); each bit's probability is a double, so the "
            "exact epsilon exceeds the recorded one by at most float rounding (< 1e-15)",
            note="optimized unary encoding (Wang et al. 2017) over a uniform grid of the public box",
        )

    def variance(self, n: int, frequency: float = 0.0) -> float:
        """Variance of the unbiased estimate of one cell's user fraction from ``n`` users.

        The estimate is f̂ = (ones / n − q) / (p − q) (before ``density`` clips negatives and
        renormalises); with a fraction f = ``frequency`` of the users in the cell, the cell's bit
        count is a sum of n f Bernoulli(p) and n (1 − f) Bernoulli(q), so
        Var f̂ = (f p (1 − p) + (1 − f) q (1 − q)) / (n (p − q)²).  At f = 0 it is Wang et al.
        2017's q (1 − q) / (n (p − q)²) = 4 e^ε / (n (e^ε − 1)²).
        """
        if not (isinstance(n, (int, np.integer)) and n >= 1 and 0.0 <= frequency <= 1.0):
            raise ValueError(
                f"variance needs an integer n >= 1 and 0 <= frequency <= 1, got n={n!r}, frequency={frequency!r}"
            )
        p, q = oue_probabilities(self.report_epsilon)
        return (frequency * p * (1 - p) + (1 - frequency) * q * (1 - q)) / (n * (p - q) ** 2)

    def communication(self, grid):
        return float(4**self.level)

    def randomize_points(self, points, grid, rng):
        xy, moved = clamp_to_domain(points, grid)
        level = self.level
        own = cell_codes(xy, domain_box(grid), level)
        epsilon = self.report_epsilon
        view = pd.DataFrame(
            {"user": points["user"].to_numpy(), "ones": ones_column(oue_bits(own, 4**level, epsilon, rng))}
        )
        view.attrs["clamped_to_box"] = moved
        view.attrs["noise"] = {"epsilon": epsilon}  # the OUE probabilities' epsilon (p = 1/2, q = 1/(e^eps + 1))
        return view

    def _on_grid(self, values: np.ndarray, grid) -> np.ndarray:
        """(n, 4^level) cell values as (n, P, Q): each grid cell takes its centre's cell's value."""
        gx, gy = np.meshgrid(grid.x, grid.y, indexing="ij")
        code = cell_codes(np.column_stack([gx.ravel(), gy.ravel()]), domain_box(grid), self.level)
        return values[:, code].reshape(len(values), *grid.shape)

    def _cell_surface(self, values: np.ndarray, grid) -> np.ndarray:
        """(n, 4^level) cell values as (n, P, Q) densities on the grid (value / cell area)."""
        return self._on_grid(values / level_area(self.level, domain_box(grid)), grid)

    def partial(self, view, grid):
        ones = np.bincount(np.concatenate(view["ones"].to_numpy()).astype(np.int64), minlength=4**self.level)
        return self._cell_surface(ones[None, :].astype(float), grid)[0]

    def density(self, total, n_users, grid):
        p, q = oue_probabilities(self.report_epsilon)
        area = level_area(self.level, domain_box(grid))
        dens = (total - n_users * q / area) / (p - q) / n_users  # unbiased per cell (OUE)
        dens = np.maximum(dens, 0.0)
        mass = dens.sum() * grid.cell_area
        return dens / mass if mass > 0 else dens

    def _log_weights(self, view) -> np.ndarray:
        """(n, 4^level): log P(bits | own cell) up to a constant: eps (as the view records it) on reported
        ones, 0 on zeros (``adversary.likelihoods.oue_log_probability``)."""
        log_weight = np.zeros((len(view), 4**self.level))
        ones = view["ones"].to_numpy()
        log_weight[np.repeat(np.arange(len(view)), [len(o) for o in ones]), np.concatenate(ones).astype(np.int64)] = (
            informed.recorded_noise(view, self.name)["epsilon"]
        )
        return log_weight

    def log_likelihood(self, view, grid):
        """The bit probabilities as a function of the own cell, a grid cell's being its centre's (the informed
        adversary's too: a per-user report)."""
        return self._on_grid(self._log_weights(view), grid)

    def surfaces(self, view, grid):
        weight = np.exp(self._log_weights(view))
        return self._cell_surface(weight / weight.sum(axis=1, keepdims=True), grid)

    def realised_noise(self, view, points, grid):
        """Per report: the bits set outside the user's own cell (clamped location), OUE at the recorded epsilon."""
        own = cell_codes(clamp_to_domain(points, grid)[0], domain_box(grid), self.level)
        epsilon = informed.recorded_noise(view, self.name)["epsilon"]
        return [oue_noise(view["ones"].to_numpy(), own, 4**self.level, epsilon, "OUE bits set outside the own cell")]

    def point_log_likelihood(self, view, xy, grid):
        """The OUE likelihood at points, exactly: eps (as the view records it) where the report set the bit of the
        cell holding the (clamped) point (without the (rows, 4^level) weights ``log_likelihood`` builds)."""
        box = domain_box(grid)
        xy = np.clip(np.asarray(xy, dtype=float), [box[0], box[2]], [box[1], box[3]])
        cells = np.broadcast_to(cell_codes(xy, box, self.level), (len(view), len(xy)))
        return oue_point_log_likelihood(
            view["ones"].to_numpy(), cells, informed.recorded_noise(view, self.name)["epsilon"]
        )

    def audit_case(self, grid):
        """The relation's worst-case pairs (``audit.cases.relation_pairs``: corners, outside the box, centre), each
        user scored by the exact log-likelihood ratio of its report; the output law does not depend on the box."""
        from ..audit.cases import relation_pairs

        return relation_pairs(self, grid, box_free=True)
