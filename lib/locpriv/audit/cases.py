"""What an audit case is made of: the :class:`Pair` type and the helpers the mechanisms' cases share.

Each mechanism states its own worst-case neighbouring inputs (``Mechanism.audit_pairs(grid)``, on
its class beside the guarantee it audits): pairs of samplers (outputs at x and at x′, through the
mechanism's own client code: ``Mechanism.randomize`` or the per-user randomizer it calls) for its
parameter setting on one public domain.  A mechanism whose guarantee states no ε has none (``[]``);
one that states an ε and defines none is refused by the config check.

Every feature the estimator sees is a public function of the released output,
so an event on it is an output event and the bound is sound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..domain import Grid

Sampler = Callable[[int, np.random.Generator], np.ndarray]

# Parameters that only change what the server computes from the reports (or the
# run's size): they cannot change a user's output law, so audits ignore them.
SERVER_SIDE = {"n", "h", "estimator", "kde"}
# Central-DP curators run on the whole dataset per draw (~3 ms of CPU), so their draws are capped.
CENTRAL_MAX_DRAWS = 1_000
# Users per randomize call for mechanisms whose view is large per user (OUE: 4^level bits each).
CHUNK = 20_000


@dataclass(frozen=True)
class Pair:
    name: str                       # which neighbouring inputs
    sample_x: Sampler
    sample_xp: Sampler
    statistic: Callable[[np.ndarray], np.ndarray] | None = None
    distance: float = 1.0           # d(x, x′) for metric DP, else 1
    max_draws: int | None = None    # cost cap, recorded in the result
    # the output law is the same on every domain box (outputs are cell codes, bits or counts
    # of points placed at the same relative positions), so one audit serves every dataset
    box_free: bool = False
    # the neighbouring relation the pair instantiates, when it is not the guarantee's main one
    relation: str | None = None


def audit_params(params: dict) -> dict:
    """The parameters that can change a user's output law (the audit's identity)."""
    return {k: v for k, v in sorted(params.items()) if k not in SERVER_SIDE}


def _points(xy, n: int) -> pd.DataFrame:
    return pd.DataFrame({"user": np.arange(n, dtype=np.int64), "x": float(xy[0]), "y": float(xy[1])})


def randomized(mech, grid: Grid, xy, columns) -> Sampler:
    """Sampler: n users at xy through the configured mechanism's client side, ``columns(view)`` as (n, k)."""
    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        parts = [columns(mech.randomize(_points(xy, min(CHUNK, n - i)), rng=rng, domain=grid))
                 for i in range(0, n, CHUNK)]
        return np.concatenate(parts)
    return sample


def domain_corners(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """The box's lower-left and upper-right corners."""
    d = grid.domain
    return np.array([d.xmin, d.ymin]), np.array([d.xmax, d.ymax])


def xy_of(view: pd.DataFrame) -> np.ndarray:
    return view[["x", "y"]].to_numpy()
