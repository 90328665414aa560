"""``hdg``: HDG (Yang, Wang, Li, Cheng, Yuan, Tian, VLDB 2021) as an LDP mechanism of the location
DAG; ``variant: tdg`` is its 2-D-only variant TDG.  The algorithm, its reference (the authors'
privmdr code) and where we differ from it: ``locpriv.sldp.hdg``.

Client: user u belongs to group ``sldp.hdg.assign_groups(u)`` (a fixed hash of its id: public,
data-independent, the same in any shard) and sends one OUE report over its group's grid, the 1-D
grid of x or of y (g1 cells) or the 2-D grid (g2 x g2), with the whole ε.  The granularities
follow the paper's guideline from N and ε, N being the users of the run.

Server: debiased counts, consistency, and the weighted update's fine matrix (2^fine_level cells
per side), whose counts spread uniformly over each fine cell are the density on the grid.

Sharding: the protocol is one non-interactive round (a user needs only N and its own id), but
the server's statistic is three count vectors, which the DAG's ``partial`` (a sum of surfaces on
the evaluation grid) cannot carry.  So one randomize job holds every user (``interactive``) and
the server's consistent counts travel in the view's attrs (``release``) like the partitions'.

View (compact): per user its ``group`` (0 = x, 1 = y, 2 = (x, y); TDG: 0 = (x, y)) and the set
bits of its report (``ones``, cell indices of its group's grid; 2-D cell = x index * g2 + y index).

Attack surface and likelihood: the exact P(report | user in grid cell c) under a uniform location
inside c: the OUE likelihood of the report is e^ε on the reported ones and 1 elsewhere (times a
constant), averaged over the group cells c overlaps, weighted by the overlap (a grid cell inside
one group cell gets that cell's value).  Normalised, it is the posterior under a uniform prior.

Guarantee: ε-LDP for any two locations of one user, covering the location after clamping to the
public box.  Proof sketch: the user's whole output is (group, report); the group is a function of
its id only, so it has the same law under both locations; the report is OUE over the group's
cells, whose probability ratio between any two inputs is at most p (1 - q) / (q (1 - p)) = e^ε
(p = 1/2, q = 1/(e^ε + 1): bits of other cells have the same law under both, the two cells whose
bits change contribute p / q and (1 - p) / (1 - q) at most); g1, g2 depend on N and ε only; the
release is computed from the reports alone (post-processing).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..adversary import informed
from ..params import Param
from ..sldp import hdg as lib
from .base import clamp_to_domain
from .partitions import (
    EPSILON,
    Released,
    domain_box,
    ones_column,
    oue_guarantee,
    oue_noise,
    oue_point_log_likelihood,
)


def _edges(centres: np.ndarray) -> np.ndarray:
    """Cell edges of a regular grid from its centres."""
    half = (centres[1] - centres[0]) / 2
    return np.concatenate([centres - half, [centres[-1] + half]])


def _cell_edges(lo: float, hi: float, cells: int) -> tuple[np.ndarray, np.ndarray]:
    edges = np.linspace(lo, hi, cells + 1)
    return edges[:-1], edges[1:]


class HDG(Released):
    """HDG (Yang et al. 2021): user groups over 1-D and 2-D grids, OUE, consistency, weighted update (tdg: 2-D only).

    Trust model ``local``: each user perturbs its own OUE report before sending it.
    """

    name = "hdg"
    trust_model = "local"
    params = {
        "epsilon": EPSILON,
        "variant": Param(
            "variant",
            "choice",
            "hdg (1-D grids of x and y and a 2-D grid, three user groups) or tdg (the 2-D grid only, one group)",
            default="hdg",
            choices=lib.VARIANTS,
        ),
        # the weighted update's matrix: 4^8 doubles, 0.5 MB; finer than any evaluation grid of 256 x 256
        "fine_level": Param(
            "fine_level",
            "int",
            "fine grid of the weighted update: 2^fine_level cells per side (also caps the granularities)",
            default=8,
            low=0,
            high=10,
        ),
    }

    def claim(self):
        return oue_guarantee(
            self.settings["epsilon"],
            covers="each user's location (clamped to the public domain box first); every user sends one "
            "report, in one group fixed by its id",
            note=f"{self.settings['variant'].upper()} (Yang et al. 2021) as in locpriv.sldp.hdg: user groups by a "
            "public hash of the id, OUE over the group's grid, granularities from N and epsilon; consistency "
            "and the weighted update are post-processing",
        )

    def communication(self, grid):
        """Upper bound: a 1-D report has at most 2^fine_level bits, a 2-D one g2^2 <= 4^fine_level (g2 follows
        N, which this method is not given; the mean bits sent per user is the view's ``communication``)."""
        return float(4 ** self.settings["fine_level"])

    def randomize_points(self, points, grid, rng):
        s = self.settings
        xy, moved = clamp_to_domain(points, grid)
        variant, resolution = s["variant"], 2 ** s["fine_level"]
        n = len(xy)
        g1, g2 = lib.granularities(max(n, 1), s["epsilon"], variant, resolution)
        group = lib.assign_groups(points["user"].to_numpy(), len(lib.GROUPS[variant]))
        reports = lib.client_reports(xy, group, domain_box(grid), variant, g1, g2, s["epsilon"], rng)
        ones = pd.Series([None] * n, dtype=object)
        sums, sizes = {}, {}
        for j, (name, bits) in enumerate(zip(lib.GROUPS[variant], reports, strict=True)):
            members = np.flatnonzero(group == j)
            ones.iloc[members] = ones_column(bits).to_numpy()
            sums[name], sizes[name] = bits.sum(axis=0), len(members)
        grids = lib.release(sums, sizes, n, s["epsilon"], g1, g2)
        view = pd.DataFrame({"user": points["user"].to_numpy(), "group": group, "ones": ones})
        view.attrs["release"] = {"n": n, "g1": g1, "g2": g2, **{k: v.tolist() for k, v in grids.items()}}
        view.attrs["communication"] = (
            float(np.mean([lib.domain_size(lib.GROUPS[variant][j], g1, g2) for j in group])) if n else 0.0
        )
        view.attrs["clamped_to_box"] = moved
        view.attrs["noise"] = {"epsilon": s["epsilon"]}  # every group's OUE epsilon
        return view

    def partial(self, view, grid):
        """The weighted update's counts, each spread uniformly over its fine cell, as a density on the grid."""
        r = view.attrs["release"]
        if r["n"] == 0:
            return np.zeros(grid.shape)
        grids = {k: np.asarray(r[k], dtype=float) for k in lib.GROUPS[self.settings["variant"]]}
        resolution = 2 ** self.settings["fine_level"]
        matrix = lib.weighted_update(grids, r["n"], r["g1"], r["g2"], resolution)
        xmin, xmax, ymin, ymax = domain_box(grid)
        gx, gy = _edges(grid.x), _edges(grid.y)
        fx = lib.overlap_fractions(gx[:-1], gx[1:], np.linspace(xmin, xmax, resolution + 1))
        fy = lib.overlap_fractions(gy[:-1], gy[1:], np.linspace(ymin, ymax, resolution + 1))
        return fx @ matrix @ fy.T / grid.cell_area

    def likelihood(self, view, grid):
        """P(report | user uniform in grid cell c) up to a factor per user: (n, P, Q), the OUE's eps as the view
        records it (the informed adversary's too: a per-user report)."""
        epsilon = informed.recorded_noise(view, self.name)["epsilon"]
        r = view.attrs["release"]
        g1, g2 = r["g1"], r["g2"]
        xmin, xmax, ymin, ymax = domain_box(grid)
        gx, gy = _edges(grid.x), _edges(grid.y)
        # fraction of each grid column (row) inside each group cell along x (y), at g1 and g2 cells
        frac = {
            (axis, g): lib.overlap_fractions(*_cell_edges(lo, hi, g), edges)
            for axis, lo, hi, edges in (("x", xmin, xmax, gx), ("y", ymin, ymax, gy))
            for g in {g1, g2}
        }
        out = np.empty((len(view), *grid.shape))
        groups = view["group"].to_numpy()
        for j, name in enumerate(lib.GROUPS[self.settings["variant"]]):
            rows = np.flatnonzero(groups == j)
            if not len(rows):
                continue
            weight = np.ones((len(rows), lib.domain_size(name, g1, g2)))
            ones = view["ones"].iloc[rows].to_numpy()
            weight[np.repeat(np.arange(len(rows)), [len(o) for o in ones]), np.concatenate(ones).astype(np.int64)] = (
                math.exp(epsilon)
            )
            if name == "x":
                out[rows] = (weight @ frac["x", g1])[:, :, None]
            elif name == "y":
                out[rows] = (weight @ frac["y", g1])[:, None, :]
            else:
                # fx^T W fy per report as two matrix products, O(P g2 (g2 + Q)) each, where einsum's
                # single loop costs O(P Q g2^2): 14x more at g2 = 16 (Geolife, N = all, eps = 4)
                out[rows] = frac["x", g2].T @ weight.reshape(-1, g2, g2) @ frac["y", g2]
        return out

    def surfaces(self, view, grid):
        """The posterior of each user under a uniform prior, as a pdf on the grid."""
        lik = self.likelihood(view, grid)
        return lik / (lik.sum(axis=(1, 2), keepdims=True) * grid.cell_area)

    def realised_noise(self, view, points, grid):
        """Per group: each member's report's bits set outside its own cell of the group's grid (clamped
        location), OUE at the recorded epsilon."""
        xy, _ = clamp_to_domain(points, grid)
        r, epsilon = view.attrs["release"], informed.recorded_noise(view, self.name)["epsilon"]
        group = view["group"].to_numpy()
        out = []
        for j, name in enumerate(lib.GROUPS[self.settings["variant"]]):
            rows = np.flatnonzero(group == j)
            own = lib.values(xy[rows], domain_box(grid), name, r["g1"], r["g2"])
            bits = lib.domain_size(name, r["g1"], r["g2"])
            out.append(
                oue_noise(
                    view["ones"].to_numpy()[rows],
                    own,
                    bits,
                    epsilon,
                    f"group {name}: OUE bits set outside the own cell",
                )
            )
        return out

    def point_log_likelihood(self, view, xy, grid):
        """The OUE likelihood at points, exactly: eps (as the view records it) where the row's report set the bit
        of the cell of its group's grid holding the (clamped) point, 0 elsewhere (up to a constant per row)."""
        epsilon = informed.recorded_noise(view, self.name)["epsilon"]
        r, box = view.attrs["release"], domain_box(grid)
        xy = np.clip(np.asarray(xy, dtype=float), [box[0], box[2]], [box[1], box[3]])
        cells = np.array([lib.values(xy, box, name, r["g1"], r["g2"]) for name in lib.GROUPS[self.settings["variant"]]])
        return oue_point_log_likelihood(view["ones"].to_numpy(), cells[view["group"].to_numpy()], epsilon)

    def audit_case(self, grid):
        """The relation's worst-case pairs (``audit.cases.relation_pairs``: corners, outside the box, centre), each
        user scored by the exact log-likelihood ratio of everything it sends (its group is a function of its id:
        the same under both inputs); the output law does not depend on the box."""
        from ..audit.cases import relation_pairs

        return relation_pairs(self, grid, box_free=True)
