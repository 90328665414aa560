"""What every mechanism plugin declares and implements.

Surface mechanisms ([RFF-KDE] and its baselines) answer a density query on
the broadcast grid.  Their stages are:

* ``randomize(points, params, grid, rng)`` – client side, one user shard in,
  the server's view of those users out (a DataFrame in the report's exact
  compact parametrisation, never N x P x Q floats);
* ``partial(view, params, grid)`` – server side, the shard's contribution to
  the aggregate; partials merge with ``combine`` (associative, commutative),
  so shards can be reduced anywhere in any order;
* ``estimate(total, n_users, params, grid)`` – density on the grid (a pdf);
* ``surfaces(view, params, grid)`` – the per-user surfaces the server could
  reconstruct, for the attacks (a batch (n, P, Q));
* ``likelihood(view, params, grid)`` – P(view row | user in grid cell c) for the
  Bayes adversary (``locpriv.adversary``), a batch (n, P, Q).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..domain import Grid
from ..dp import Guarantee
from ..params import Param, validate_params

BANDWIDTH = Param("h", "float", "Gaussian kernel bandwidth, in the dataset's distance units, or 'knn' "
                  "for the k-th-nearest-neighbour rule of [RFF-KDE] §4.2.4", low=0.0, special=("knn",))


KNN_LEAK = "h: knn bandwidth computed from every user's raw location"


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
    # the server sees no per-user report (a central curator's or an aggregator's release only):
    # the Bayes adversary learns nothing about one user beyond its prior
    aggregate_only: bool = False

    def validate(self, given: dict, where: str) -> dict:
        return validate_params(self.params, given, where)

    def guarantee(self, params: dict) -> dict:
        """``locpriv.dp.Guarantee(...).as_dict()``; epsilon None where no formal DP holds."""
        raise NotImplementedError

    def run_guarantee(self, raw_params: dict, params: dict) -> dict:
        """The guarantee of a run as configured (``raw_params``) and resolved (``params``).

        ``h: knn`` is computed from every user's raw location (``stages.prepare``) and then
        shapes and is published with the released estimate, with no budget spent on it:
        the run's guarantee does not hold, so it is recorded void (no epsilon) with the leak named.
        """
        record = self.guarantee(params)
        if raw_params.get("h") == "knn" and record["epsilon"] is not None:
            return Guarantee(**record).leaked(KNN_LEAK).as_dict()
        return record

    def for_users(self, params: dict, n_users: int | None) -> dict:
        """``params`` with the values a public rule derives from the run's size N filled in.

        Resolved where N is known: when the workflow expands its runs (n, or a synthetic
        dataset's n_users for n: all; None where the size is known only once the data are
        read) and by the API from the users it is given.  A mechanism without such a rule
        returns ``params`` unchanged; one that cannot resolve with N None raises ValueError.
        """
        return params

    def state_params(self, params: dict) -> dict | None:
        """Parameters that identify a user's persistent randomness, if it has any.

        None: every run draws fresh randomness (keyed by all its parameters).
        A dict: users keep one random state across every run that shares these
        values ([RFF-KDE] Alg. 3: frequencies drawn once, reused for all queries),
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

    def likelihood(self, view: pd.DataFrame, params: dict, grid: Grid) -> np.ndarray:
        """Row i proportional over grid cells c to P(view row i | user i in cell c): (n, P, Q).

        Any positive factor per user is allowed (the posterior is normalised); every row
        is positive somewhere.  Aggregate-only mechanisms release nothing per user, so
        their likelihood is constant and the posterior is the prior.
        """
        if self.aggregate_only:
            return np.ones((len(view), *grid.shape))
        raise NotImplementedError(f"mechanism {self.name!r} declares no likelihood for the Bayes adversary")
