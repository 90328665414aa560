"""What an audit case is made of: the :class:`Pair` type and the helpers the mechanisms' cases share.

Each mechanism states its own worst-case neighbouring inputs (``Mechanism.audit_pairs(grid)``, on
its class beside the guarantee it audits): pairs of samplers (outputs at x and at x′) for its
parameter setting on one public domain.  A mechanism whose guarantee states no ε has none (``[]``);
one that states an ε and defines none is refused by the config check.

End to end: a sampler runs the mechanism's own client *and* server code on a whole (small,
constructed) dataset and scores what the mechanism releases -- not one building block of it
(issue 28: sampling SLDP's ``child_reports``, ldp_kdtree's root OUE bits or the heatmaps' shard
noise alone missed a protocol drawing the wrong scale, users reporting at every level and a last
round overspending).  Such a run costs milliseconds, so its draws are capped
(``END_TO_END_MAX_DRAWS``: enough to refute the planted faults of
``tests/privacy/test_audit_faults.py`` at the default draws).  A case whose mechanism accounts its
budget per run (Σ_t ε_t of the heatmaps' sub-queries) returns that as its last column
(``Pair.accounts``): the stage checks it against the claim at run time.

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
# End-to-end cases run the mechanism on a whole dataset per draw (1-5 ms of CPU), so their draws are
# capped: 3,000 per input refutes every planted fault of tests/privacy/test_audit_faults.py.
END_TO_END_MAX_DRAWS = 3_000
# Users per randomize call for mechanisms whose view is large per user (OUE: 4^level bits each).
CHUNK = 20_000


@dataclass(frozen=True)
class Pair:
    name: str  # which neighbouring inputs
    sample_x: Sampler
    sample_xp: Sampler
    statistic: Callable[[np.ndarray], np.ndarray] | None = None
    distance: float = 1.0  # d(x, x′) for metric DP, else 1
    max_draws: int | None = None  # cost cap, recorded in the result
    # the output law is the same on every domain box (outputs are cell codes, bits or counts
    # of points placed at the same relative positions), so one audit serves every dataset
    box_free: bool = False
    # the neighbouring relation the pair instantiates, when it is not the guarantee's main one
    relation: str | None = None
    # the samplers' last column is the ε the draw's run accounted for itself (Σ_t ε_t): checked
    # against the claim at run time, not shown to the estimator
    accounts: bool = False


def audit_params(params: dict) -> dict:
    """The parameters that can change a user's output law (the audit's identity)."""
    return {k: v for k, v in sorted(params.items()) if k not in SERVER_SIDE}


def _points(xy, n: int) -> pd.DataFrame:
    return pd.DataFrame({"user": np.arange(n, dtype=np.int64), "x": float(xy[0]), "y": float(xy[1])})


def randomized(mech, grid: Grid, xy, columns) -> Sampler:
    """Sampler: n users at xy through the configured mechanism's client side, ``columns(view)`` as (n, k)."""

    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        parts = [
            columns(mech.randomize(_points(xy, min(CHUNK, n - i)), rng=rng, domain=grid)) for i in range(0, n, CHUNK)
        ]
        return np.concatenate(parts)

    return sample


def per_run(run: Callable[[np.random.Generator], np.ndarray], width: int) -> Sampler:
    """Sampler: one whole run of the mechanism per draw, ``run(rng)`` its ``width`` features."""

    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty((n, width))
        for i in range(n):
            out[i] = run(rng)
        return out

    return sample


def moved_indicators(out: np.ndarray, a: int, b: int) -> np.ndarray:
    """The privacy-loss statistic of a one-hot moved from column a (under x) to column b (under x′) of
    noisy indicators: clip(y_a, 0, 1) − clip(y_b, 0, 1), which is 1 exactly on the event {y_a >= 1,
    y_b <= 0} where a Laplace pair's loss reaches its maximum (the sum of both coordinates' ε)."""
    return np.clip(out[:, a], 0, 1) - np.clip(out[:, b], 0, 1)


def domain_corners(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """The box's lower-left and upper-right corners."""
    d = grid.domain
    return np.array([d.xmin, d.ymin]), np.array([d.xmax, d.ymax])


def xy_of(view: pd.DataFrame) -> np.ndarray:
    return view[["x", "y"]].to_numpy()
