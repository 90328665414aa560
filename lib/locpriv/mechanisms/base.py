"""What every mechanism plugin declares and implements.

Surface mechanisms (seed 000 and its baselines) answer a density query on
the broadcast grid.  Their stages are:

* ``randomize(points, params, grid, rng)`` – client side, one user shard in,
  the server's view of those users out (a DataFrame in the report's exact
  compact parametrisation, never N x P x Q floats);
* ``partial(view, params, grid)`` – server side, the shard's contribution to
  the aggregate; partials merge with ``combine`` (associative, commutative),
  so shards can be reduced anywhere in any order;
* ``estimate(total, n_users, params, grid)`` – density on the grid (a pdf);
* ``surfaces(view, params, grid)`` – the per-user surfaces the server could
  reconstruct, for the attacks (a batch (n, P, Q)).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..domain import Grid
from ..params import Param, validate_params

BANDWIDTH = Param("h", "float", "Gaussian kernel bandwidth, in the dataset's distance units, or 'knn' "
                  "for the k-th-nearest-neighbour rule of seed 000 §4.2.4", low=0.0, special=("knn",))


def clamp_to_domain(points: pd.DataFrame, grid: Grid) -> tuple[np.ndarray, int]:
    """Locations clamped to the public domain box, and how many moved.

    Clamping is a public, data-independent map, so a guarantee stated for inputs in
    the box holds for every input; the count goes into the view's metadata.
    """
    xy = points[["x", "y"]].to_numpy()
    d = grid.domain
    clamped = np.clip(xy, [d.xmin, d.ymin], [d.xmax, d.ymax])
    return clamped, int((clamped != xy).any(axis=1).sum())


class Mechanism:
    name: str = ""
    kind: str = "surface"
    params: dict[str, Param] = {}
    # interactive protocols (and central-DP curators) need all of a run's users in one randomize job
    interactive: bool = False

    def validate(self, given: dict, where: str) -> dict:
        return validate_params(self.params, given, where)

    def guarantee(self, params: dict) -> dict:
        """{'model', 'epsilon', 'delta', 'note'}; epsilon None where no formal DP holds."""
        raise NotImplementedError

    def state_params(self, params: dict) -> dict | None:
        """Parameters that identify a user's persistent randomness, if it has any.

        None: every run draws fresh randomness (keyed by all its parameters).
        A dict: users keep one random state across every run that shares these
        values (seed 000 Alg. 3: frequencies drawn once, reused for all queries),
        so the client randomness is keyed by them alone.
        """
        return None

    def communication(self, params: dict, grid: Grid) -> float:
        """Numbers sent by one user for one query."""
        return float(np.prod(grid.shape))

    def randomize(self, points: pd.DataFrame, params: dict, grid: Grid,
                  rng: np.random.Generator) -> pd.DataFrame:
        raise NotImplementedError

    def partial(self, view: pd.DataFrame, params: dict, grid: Grid) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    def estimate(self, total: np.ndarray, n_users: int, params: dict, grid: Grid) -> np.ndarray:
        raise NotImplementedError

    def surfaces(self, view: pd.DataFrame, params: dict, grid: Grid) -> np.ndarray:
        raise NotImplementedError
