"""What every mechanism declares and implements: one class per mechanism, registered by its name.

A mechanism is a subclass of :class:`Mechanism` that declares a ``name`` (abstract bases declare
none); defining the class registers it (``__init_subclass__``), so the workflow, the config
schema, the audit and the public API (``locpriv.api``) find it by that name.  An instance is a
configured mechanism, in the style of IBM diffprivlib::

    mech = GeoInd(epsilon=1.0, h=0.5)  # keyword-only; validated (finite, in range); defaults filled

Class-level declarations: ``name``; ``params`` (:class:`~locpriv.params.Param` per keyword);
``trust_model`` (whom a user must trust for the guarantee to hold, one of
:data:`~locpriv.dp.TRUST_MODELS`); ``interactive`` (the protocol needs all of a run's users in one
randomize job); ``aggregate_only`` (the server sees no per-user report, so every row's surface is
the one published map); ``needs_domain`` (randomisation reads the public box).

The methods are the stages of a run ([RFF-KDE] and its baselines answer a density query on the
broadcast grid):

* ``randomize(xy, rng=, domain=)`` – client side: users' locations in, the server's view out (a
  DataFrame in the report's exact compact parametrisation, never N x P x Q floats); a subclass
  implements ``randomize_points(points, grid, rng)`` on the checked inputs;
* ``partial(view, grid)`` – server side, one shard's contribution; partials merge with
  ``combine`` (associative, commutative), so shards reduce anywhere in any order;
* ``density(total, n_users, grid)`` – the merged partials as a density on the grid (a pdf);
  ``estimate(view, grid=)`` and ``fit_estimate(xy, rng=, grid=)`` chain the steps on one view;
* ``surfaces(view, grid)`` – per-user surfaces the server could rebuild (the local-maxima attack);
* ``log_likelihood(view, grid)`` – log P(view row | user in grid cell c) (the population Bayes
  adversary; a plugin may implement ``likelihood`` instead, whose log is taken);
  ``informed_log_likelihood(view, grid, others)`` – the informed adversary's, which knows every
  other user's location (DP's threat model, ``locpriv.adversary.informed``), with the invariant
  statistic that ties it to the guarantee;
* ``realised_noise(view, points, grid)`` – the noise each released number carries, given the true data
  (checked against the record's law in every run, ``locpriv.audit.noise``);
* ``guarantee()`` – the :class:`~locpriv.dp.Guarantee` (a subclass implements ``claim()``; the
  record's ``trust_model`` is the class's), ``run_guarantee(raw_params)`` – the guarantee of a
  workflow run as configured, ``audit_pairs(grid)`` – the empirical audit's neighbouring inputs
  (a subclass implements ``audit_case(grid)``);
* ``communication(grid)`` – numbers one user sends; ``state_params()`` – persistent user state;
* ``for_users(params, n_users)`` (a classmethod) – parameters a public rule sizes from the run's N
  (``level: auto``) resolved before the object is built; ``sized(n_users)`` – the object so resolved.
"""

from __future__ import annotations

import dataclasses
import inspect
from types import MappingProxyType
from typing import ClassVar

import numpy as np
import pandas as pd

from ..adversary import likelihoods
from ..domain import Domain, Grid
from ..dp import REPORT_PREFIX, TIMING_BATCH, TIMING_FIXED_WORK, TRUST_MODELS, Guarantee
from ..dp.grid import finite
from ..params import USERS, Param, explicit_params, validate_params

# A device answering one user at a time can be timed (issue 28: laplace_ldp's report + CPU time gave
# an epsilon lower bound of 8.03 against 0.98 from the report alone).  Mechanisms whose client noise
# has a fixed-work sampler declare this parameter; the record states the timing model either way.
TIMING = Param(
    "timing",
    "choice",
    "response-time model: batch (vectorised noise; one user's response time "
    "is not covered) or fixed_work (every draw the same work, for a device answering one user at "
    "a time; delta includes the sampler's distance from exact)",
    default="batch",
    choices=("batch", "fixed_work"),
    omit_default=True,
)

# person_budget: split_epsilon (issue 28 item 8): each of a person's up to k reports at epsilon / k, so the
# record's epsilon is the person's (Guarantee.split_over).  Declared by the per-user local mechanisms,
# whose reports are independent, so basic composition over one person's reports applies.
PERSON_REPORTS = Param(
    "person_reports",
    "int",
    "reports one person may send (their rows, at most k): each is randomised at epsilon / k, so "
    "the recorded epsilon covers the whole person (the workflow sets it from a dataset's "
    "person_budget: split_epsilon and max_points_per_person)",
    default=1,
    low=0,
    omit_default=True,
)


BANDWIDTH = Param(
    "h",
    "float",
    "Gaussian kernel bandwidth, in the dataset's distance units, or 'knn' "
    "for the k-th-nearest-neighbour rule of [RFF-KDE] §4.2.4",
    low=0.0,
    special=("knn",),
    workflow_only={"knn": "h: knn bandwidth computed from every user's raw location"},
)

# name -> mechanism class; filled by Mechanism.__init_subclass__ (read it through locpriv.mechanisms.get)
REGISTRY: dict[str, type[Mechanism]] = {}


def clamp_to_domain(points: pd.DataFrame, grid: Grid) -> tuple[np.ndarray, int]:
    """Locations clamped to the public domain box, and how many moved.

    Clamping is a public, data-independent map, so a guarantee stated for inputs in
    the box holds for every finite input; the count goes into the view's metadata.  NaN and
    infinities are refused (``dp.grid.finite``): clamping would turn inf into a corner and NaN
    into garbage codes, neither of which the input's owner meant.
    """
    xy = finite(points[["x", "y"]].to_numpy(), "locations")
    d = grid.domain
    clamped = np.clip(xy, [d.xmin, d.ymin], [d.xmax, d.ymax])
    return clamped, int((clamped != xy).any(axis=1).sum())


def as_points(xy) -> pd.DataFrame:
    """Users' locations as the mechanisms take them: columns user (int64), x, y (float64).

    ``xy``: an (n, 2) array (users 0..n-1), or a DataFrame with columns x, y and optionally user.
    """
    if isinstance(xy, pd.DataFrame):
        missing = {"x", "y"} - set(xy.columns)
        if missing:
            raise ValueError(
                f"xy: DataFrame lacks column(s) {sorted(missing)}; give columns x and y (and optionally user)"
            )
        user = xy["user"].to_numpy(np.int64) if "user" in xy.columns else np.arange(len(xy), dtype=np.int64)
        xy = xy[["x", "y"]].to_numpy(float)
    else:
        xy = np.asarray(xy, dtype=float)
        if xy.ndim != 2 or xy.shape[1] != 2:
            raise ValueError(f"xy: expected an (n, 2) array of locations, got shape {xy.shape}")
        user = np.arange(len(xy), dtype=np.int64)
    if not np.isfinite(xy).all():
        raise ValueError("xy: locations must be finite numbers (drop rows with NaN or inf first)")
    return pd.DataFrame({"user": user, "x": xy[:, 0], "y": xy[:, 1]})


def as_grid(domain) -> Grid | None:
    """The public geometry at randomisation, from a Grid, a Domain or a box [xmin, xmax, ymin, ymax].

    Randomisation reads only the public domain box (to clamp, or to partition it); a
    Domain alone becomes a grid with no cells, so any use of cell centres fails loudly.
    """
    if domain is None or isinstance(domain, Grid):
        return domain
    if not isinstance(domain, Domain):
        domain = Domain.from_list(domain)
    return Grid(np.empty(0), np.empty(0), domain)


def as_generator(rng) -> np.random.Generator:
    """``rng`` as a numpy Generator: None (fresh OS entropy), an int seed, or a Generator as is."""
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"rng: expected None (OS entropy), an int seed or a numpy Generator, got {type(rng).__name__}")


def signature_of(params: dict[str, Param]) -> inspect.Signature:
    """The keyword-only signature ``(*, name: type = default, ...)`` of a class declaring ``params``
    (a parameter without a default is required), so ``help(GeoInd)`` lists its parameters."""
    return inspect.Signature(
        [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if p.default is None else p.default,
                annotation=p.annotation(),
            )
            for name, p in params.items()
        ]
    )


class Mechanism:
    """A configured location mechanism; subclasses with a ``name`` are registered (see the module docstring)."""

    name: ClassVar[str] = ""
    params: ClassVar[dict[str, Param]] = {}
    trust_model: ClassVar[str] = ""
    # interactive protocols (and central-DP curators) need all of a run's users in one randomize job
    interactive: ClassVar[bool] = False
    # partial()'s values are counts per unit area (True) or dimensionless sums of kernels or counts
    # (False): the units aggregate.nc states
    partial_per_area: ClassVar[bool] = False
    # the server sees no per-user report (a central curator's or an aggregator's release only):
    # the Bayes adversary learns nothing about one user beyond its prior
    aggregate_only: ClassVar[bool] = False
    # randomisation clamps to or partitions the public domain box, so needs it
    needs_domain: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.__signature__ = signature_of(cls.params)  # what inspect.signature, help() and IDEs show
        if not cls.__dict__.get("name"):
            return  # an abstract base (or a subclass reusing its parent's registration)
        if cls.trust_model not in TRUST_MODELS:
            raise TypeError(
                f"mechanism {cls.name!r} ({cls.__qualname__}): trust_model must be one of "
                f"{list(TRUST_MODELS)}, got {cls.trust_model!r}"
            )
        known = REGISTRY.get(cls.name)
        # a module executed again (importlib.reload) replaces its own class; another class is a clash
        if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise RuntimeError(
                f"mechanism {cls.name!r} registered twice: {known.__module__}.{known.__qualname__} "
                f"and {cls.__module__}.{cls.__qualname__}"
            )
        REGISTRY[cls.name] = cls

    def __init__(self, *args, **params):
        cls = type(self)
        if not cls.name:
            raise TypeError(f"{cls.__qualname__} is an abstract mechanism (it declares no name)")
        if args:
            raise TypeError(
                f"{cls.__name__}() takes keyword arguments only, e.g. {cls.__name__}(epsilon=1.0); "
                f"got {len(args)} positional"
            )
        settings = cls.validate(params, cls.__name__, workflow=False)
        object.__setattr__(self, "_settings", MappingProxyType(settings))

    @classmethod
    def validate(cls, given: dict, where: str, workflow: bool = True) -> dict:
        """``given`` checked against ``params`` (one-line ValueError naming ``where``), defaults filled.

        ``workflow``: admit the values only the workflow resolves (``h: knn``), as the config does.
        """
        return validate_params(cls.params, given, where, workflow)

    @classmethod
    def grid_schema(cls) -> dict:
        """The JSON schema of this mechanism's parameter grid in a config: ``n`` and the declared
        parameters, each a value or a list; described by the class docstring's first paragraph."""
        params = {"n": USERS, **cls.params}
        summary = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        node = {
            "type": ["object", "null"],
            "additionalProperties": False,
            "description": f"{cls.name}: {summary}",
            "properties": {name: p.to_schema() for name, p in params.items()},
        }
        required = [name for name, p in params.items() if p.default is None]
        return {**node, "required": required} if required else node

    @classmethod
    def for_users(cls, params: dict, n_users: int | None) -> dict:
        """Validated ``params`` with the values a public rule derives from the run's size N filled in.

        Resolved before the object is built, where N is known: when the workflow expands its runs
        (n, or a synthetic dataset's n_users for n: all; None where the size is known only once the
        data are read), so a run's path and parameters show the value used; and by ``sized`` (the
        API's ``randomize`` and ``estimate``) from the users given.  A mechanism without such a rule
        returns ``params`` unchanged; one that cannot resolve with N None raises ValueError.
        """
        return params

    def sized(self, n_users: int) -> Mechanism:
        """This mechanism as it runs on ``n_users`` users (``for_users``): itself when nothing depends on N."""
        resolved = self.for_users(dict(self._settings), n_users)
        return self if resolved == dict(self._settings) else type(self)(**resolved)

    @property
    def settings(self) -> MappingProxyType:
        """The validated parameters, defaults filled in (read-only)."""
        return self._settings

    def explicit_settings(self) -> dict:
        """``settings`` without the ``omit_default`` parameters at their default: a workflow run's
        parameters as its path, seeds and files record them (``locpriv.params.explicit_params``)."""
        return explicit_params(self.params, dict(self._settings))

    def __setattr__(self, key, value):
        raise AttributeError(f"{type(self).__name__} is immutable: build a new one with other parameters")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._settings.items())})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._settings == self._settings

    def __hash__(self) -> int:
        return hash((type(self), tuple(self._settings.items())))

    # ---- privacy ------------------------------------------------------------------------------

    def claim(self) -> Guarantee:
        """The privacy claim of these settings (``trust_model`` is filled in by ``guarantee``)."""
        raise NotImplementedError(f"mechanism {self.name!r} states no guarantee")

    def guarantee(self) -> Guarantee:
        """The privacy record: model, epsilon, delta, neighbouring relation, what it covers, trust model.

        epsilon None where no formal DP holds; ``.map(d_in)`` is its privacy map, ``.as_dict()`` its file form.
        """
        record = dataclasses.replace(self.claim(), trust_model=self.trust_model, timing=self.timing_model)
        k = self.person_reports
        return record if k == 1 or record.epsilon is None else record.split_over(k)

    @property
    def person_reports(self) -> int:
        """Reports per person sharing the budget (``person_reports``, where declared; else 1)."""
        return int(self.settings.get("person_reports", 1))

    @property
    def report_epsilon(self) -> float:
        """The epsilon each report is randomised at: the configured one over ``person_reports``.

        ``claim()`` states the guarantee of one report at this epsilon; ``guarantee()`` lifts it to
        the person (``Guarantee.split_over``)."""
        return self.settings["epsilon"] / self.person_reports

    @property
    def timing_safe(self) -> bool:
        """Whether the client noise is drawn in fixed-work mode (the ``timing`` parameter, where declared)."""
        return self.settings.get("timing") == "fixed_work"

    @property
    def timing_model(self) -> str:
        return TIMING_FIXED_WORK if self.timing_safe else TIMING_BATCH

    @classmethod
    def leaks(cls, raw_params: dict) -> list[str]:
        """The private data a workflow run configured with ``raw_params`` reads without accounting."""
        return [
            p.workflow_only[raw_params[k]]
            for k, p in cls.params.items()
            if isinstance(raw_params.get(k), str) and raw_params[k] in p.workflow_only
        ]

    def run_guarantee(self, raw_params: dict) -> Guarantee:
        """The guarantee of a workflow run as configured (``raw_params``), this object being it resolved.

        ``h: knn`` is computed from every user's raw location (``stages.prepare``) and then
        shapes and is published with the released estimate, with no budget spent on it:
        the run's guarantee does not hold, so it is recorded void (no epsilon) with the leak named.
        """
        record = self.guarantee()
        leaks = self.leaks(raw_params)
        return record.leaked("; ".join(leaks)) if leaks and record.epsilon is not None else record

    def audit_pairs(self, grid: Grid) -> list:
        """Worst-case neighbouring inputs for the empirical audit (``locpriv.audit.cases.Pair`` list).

        A setting whose guarantee states no epsilon has nothing to audit (``[]``); otherwise the
        class's ``audit_case(grid)``, which a mechanism that can state an epsilon must implement
        (``locpriv.config`` refuses such a run before any job otherwise).  With ``person_reports`` k > 1
        the case's pairs are single reports, audited against one report's epsilon / k
        (``Guarantee.split_over``): a report drawn at the whole epsilon is refuted.
        """
        if self.guarantee().epsilon is None:
            return []
        pairs = self.audit_case(grid)
        if self.person_reports == 1:
            return pairs
        own = self.claim().relation
        return [dataclasses.replace(p, relation=REPORT_PREFIX + (p.relation or own)) for p in pairs]

    def audit_case(self, grid: Grid) -> list:
        """The pairs of ``audit_pairs`` for a setting that states an epsilon.

        Default, for a mechanism that brings its own likelihood of a per-user report (``log_likelihood`` or
        ``likelihood``, e.g. a plugin): the worst-case pairs of its guarantee's relation, each draw scored by
        the exact log-likelihood ratio of the user's whole report (``audit.cases.relation_pairs``)."""
        if not self.brings_likelihood():
            raise NotImplementedError(
                f"mechanism {self.name!r} states an epsilon but defines no audit case: implement audit_case(grid) "
                "or log_likelihood(view, grid)"
            )
        from ..audit.cases import relation_pairs

        return relation_pairs(self, grid)

    @classmethod
    def brings_likelihood(cls) -> bool:
        """The class states the likelihood of a per-user report itself (so the audit can score it)."""
        own = cls.log_likelihood is not Mechanism.log_likelihood or cls.likelihood is not Mechanism.likelihood
        return own and not cls.aggregate_only

    @classmethod
    def has_audit_case(cls) -> bool:
        return cls.audit_case is not Mechanism.audit_case or cls.brings_likelihood()

    # ---- client side --------------------------------------------------------------------------

    def state_params(self) -> dict | None:
        """Parameters that identify a user's persistent randomness, if it has any.

        None: every run draws fresh randomness (keyed by all its parameters).
        A dict: users keep one random state across every run that shares these
        values ([RFF-KDE] Alg. 3: frequencies drawn once, reused for all queries),
        so the client randomness is keyed by them alone.
        """
        return None

    def communication(self, grid: Grid) -> float:
        """Numbers sent by one user for one query."""
        return float(np.prod(grid.shape))

    def randomize(self, xy, *, rng=None, domain=None) -> pd.DataFrame:
        """The server's view of the users at ``xy``.

        ``xy``: an (n, 2) array of locations (users 0..n-1), or a DataFrame with columns x, y
        and optionally user (the workflow passes its shard's user, x, y).
        ``rng``: None draws fresh OS entropy (``np.random.default_rng()``: what a deployment
        wants); an int seeds a new Generator (reproducible, for simulation and tests only: noise
        from a seed someone can guess protects nothing); a numpy Generator is used as is (the
        workflow passes one keyed by the run, ``locpriv.seeding.rng``).  Anything else: TypeError.
        ``domain``: the public box, as a Grid, a Domain or [xmin, xmax, ymin, ymax]; required by
        mechanisms that clamp to it or partition it (``needs_domain``).
        Server-side releases (a partition with counts, a refusal) travel in the view's ``attrs``.
        """
        grid = as_grid(domain)
        if grid is None and self.needs_domain:
            raise ValueError(
                f"{type(self).__name__}.randomize: domain= is required (the public box "
                "[xmin, xmax, ymin, ymax], a Domain or a Grid)"
            )
        generator = as_generator(rng)
        points = as_points(xy)
        return self.sized(len(points)).randomize_points(points, grid, generator)

    def randomize_points(self, points: pd.DataFrame, grid: Grid | None, rng: np.random.Generator) -> pd.DataFrame:
        """``randomize`` on checked inputs: ``points`` (user, x, y), ``grid`` the public geometry."""
        raise NotImplementedError

    # ---- server side --------------------------------------------------------------------------

    def partial(self, view: pd.DataFrame, grid: Grid) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    def density(self, total: np.ndarray, n_users: int, grid: Grid) -> np.ndarray:
        """The merged partials of ``n_users`` users as a density (pdf) on ``grid``."""
        raise NotImplementedError

    def estimate(self, view: pd.DataFrame, *, grid: Grid) -> np.ndarray:
        """Density (a pdf, (P, Q) array indexed [x, y]) on ``grid`` from a view of ``randomize``.

        Uses the same domain as ``randomize``.  A view with no users (e.g. every user
        refused the query) has no estimate: all NaN, as in the workflow.
        """
        if not isinstance(view, pd.DataFrame):
            raise TypeError(f"view: expected the DataFrame randomize returned, got {type(view).__name__}")
        if not isinstance(grid, Grid):
            raise TypeError(
                f"grid: expected a locpriv.Grid (e.g. Grid.regular(Domain(...), P, Q)), got {type(grid).__name__}"
            )
        if len(view) == 0:
            return np.full(grid.shape, np.nan)
        mech = self.sized(len(view))
        return mech.density(mech.partial(view, grid), len(view), grid)

    def fit_estimate(self, xy, *, rng=None, grid: Grid) -> np.ndarray:
        """``estimate(randomize(xy, rng=rng, domain=grid), grid=grid)``."""
        return self.estimate(self.randomize(xy, rng=rng, domain=grid), grid=grid)

    # ---- what the adversaries see -------------------------------------------------------------

    def surfaces(self, view: pd.DataFrame, grid: Grid) -> np.ndarray:
        """The per-user surfaces (n, P, Q) the server could rebuild from the view."""
        raise NotImplementedError

    def log_likelihood(self, view: pd.DataFrame, grid: Grid) -> np.ndarray:
        """Row i: log P(view row i | user i in grid cell c) over the cells, up to a constant per row: (n, P, Q).

        The population adversary's (Shokri et al. 2011): it sees the row and ``view.attrs`` (what
        the server received beside the rows: releases, the noise parameters the randomiser
        recorded) and knows nothing of the other users.  -inf where the row rules a cell out;
        every row is finite somewhere.  Aggregate-only mechanisms release nothing per user: 0
        everywhere, the posterior is the prior.  A mechanism that implements ``likelihood``
        instead (e.g. a plugin) gets its log.
        """
        if type(self).likelihood is not Mechanism.likelihood:
            with np.errstate(divide="ignore"):  # a zero likelihood is a cell the report rules out
                return np.log(self.likelihood(view, grid))
        if self.aggregate_only:
            return np.zeros((len(view), *grid.shape))
        raise NotImplementedError(f"mechanism {self.name!r} declares no likelihood for the Bayes adversary")

    def point_log_likelihood(self, view: pd.DataFrame, xy, grid: Grid) -> np.ndarray:
        """log P(view row | user at point xy_j) for k points xy (k, 2): (rows, k), up to a constant per row.

        The audit's whole-report ratio (``locpriv.audit.cases.whole_report``).  Default: ``log_likelihood`` on
        ``grid`` at the cells holding the points (``likelihoods.cell_of``; points outside the box go to the
        nearest cell, as a clamping mechanism moves them), rows in slices so the (rows, P, Q) array stays
        small: exact for a mechanism whose report depends on the cell alone (e.g. randomized response over
        the grid's cells); a mechanism whose likelihood is pointwise states it at the points themselves
        (``log_likelihood_at_points``).  Any of them is a public function of the report, so the audit stays
        sound; only its power depends on the likelihood being the report's.
        """
        i, j = likelihoods.cell_of(np.asarray(xy, dtype=float), grid)
        parts = [self.log_likelihood(view.iloc[k : k + 256], grid)[:, i, j] for k in range(0, len(view), 256)]
        return np.concatenate(parts) if parts else np.zeros((0, len(i)))

    def log_likelihood_at_points(self, view: pd.DataFrame, xy, grid: Grid) -> np.ndarray:
        """``point_log_likelihood`` of a likelihood evaluated at the grid's cell centres (product or planar
        Laplace): ``log_likelihood`` on the grid whose centres are the points' coordinates, exact."""
        xy = np.asarray(xy, dtype=float)
        xs, ix = np.unique(xy[:, 0], return_inverse=True)
        ys, iy = np.unique(xy[:, 1], return_inverse=True)
        return self.log_likelihood(view, Grid(xs, ys, grid.domain))[:, ix, iy]

    @property
    def population_learns_nothing(self) -> bool:
        """``log_likelihood`` is 0 everywhere (an aggregate-only release read through this class): the
        population adversary's posterior is the prior for every user (``bayes.prior_attack``)."""
        own = type(self)
        return (
            self.aggregate_only
            and own.log_likelihood is Mechanism.log_likelihood
            and own.likelihood is Mechanism.likelihood
        )

    def likelihood(self, view: pd.DataFrame, grid: Grid) -> np.ndarray:
        """``exp(log_likelihood)``, scaled to a maximum of 1 per row (n, P, Q)."""
        return likelihoods.row_scaled(self.log_likelihood(view, grid))

    # the informed adversary's likelihood is the population adversary's: a per-user report whose
    # law, given the user's location, does not depend on the other users (every local mechanism)
    informed_is_population: ClassVar[bool] = True

    def informed_log_likelihood(self, view: pd.DataFrame, grid: Grid, others) -> tuple[np.ndarray, np.ndarray]:
        """The informed adversary on ``view``'s rows: (log L on the grid (n, P, Q), invariant statistic (n,)).

        DP's threat model (``locpriv.adversary.informed``): the adversary knows every other user's
        exact location (``others``: :class:`locpriv.adversary.informed.Others`, the run's users,
        targets included — a target's own location is used only to remove it from aggregates),
        the mechanism and everything public, and sees what the mechanism releases to parties it
        does not trust: the row and ``view.attrs``.  The likelihood reads the noise parameters the
        release records, never the configured epsilon.  The statistic, per row, is the sup over
        pairs of locations the guarantee's relation covers of log L(x) - log L(x') (per unit
        distance for a metric relation): the recorded epsilon bounds it (the invariant).

        Default (``informed_is_population``): ``log_likelihood`` and ``informed_statistic``.  A
        mechanism whose release is not a per-user report (distributed, central), or whose view
        holds more than ``log_likelihood`` reads, overrides this, derives it in its docstring and
        sets ``informed_is_population = False``.
        """
        log_lik = self.log_likelihood(view, grid)
        return log_lik, self.informed_statistic(view, log_lik)

    def informed_person_log_likelihood(self, view: pd.DataFrame, owner: np.ndarray, n_persons: int, grid: Grid, others):
        """The person-level invariant on persons (``view``'s rows, ``owner[t]`` the person 0..n_persons-1 of
        row t): (joint log L on the grid (n_persons, P, Q) of all the person's rows at one location, each
        person's statistic (n_persons,), each row's (rows,)), or None where a person's joint likelihood is the
        sum of their rows' (``bayes.person_log_likelihoods``).  Only the statistic is used: the informed
        adversary's attack on persons is ``stages.attack.informed_person_attack`` (one target row, every
        other row known), whose likelihood is the release's law for any spread of a person's rows.

        That sum is exact where no row's likelihood reads another row of the same person: every
        per-user report (each row's law depends on its own location only) and SLDP.  A mechanism
        whose row likelihood takes the other rows as known (a central release, a shard's sum)
        overrides this: the person is the unit, their other rows are unknown to the adversary.
        ``privtree`` does; the distributed heatmaps do not yet (their rows' likelihoods, summed, each
        take the person's other rows in the shard sums as known; no shipped config attacks persons
        with them).
        """
        return None

    # each report's noise depends on that report alone (its user's location and its own draw), so any
    # fixed subset of the reports is a sample of the law (the run's noise check reads a prefix)
    noise_per_report: ClassVar[bool] = False

    @property
    def exposes_noise(self) -> bool:
        """Whether ``realised_noise`` can say anything: it is overridden (the check needs no data to know)."""
        return type(self).realised_noise is not Mechanism.realised_noise

    def realised_noise(self, view: pd.DataFrame, points: pd.DataFrame, grid: Grid) -> list | None:
        """The noise each released number carries, given the true data: a list of
        :class:`locpriv.audit.noise.Noise` (values and the law the record states for them), or None
        where this mechanism does not expose it (the run's noise check is then not made).

        ``view``: the run's whole view as ``randomize`` returned it (``attrs`` the release and the
        recorded noise); ``points``: user, x, y of each view row's user, in the view's row order.
        The attack stage tests it in every run (``locpriv.audit.noise.check``).
        """
        return None

    def informed_statistic(self, view: pd.DataFrame, log_lik: np.ndarray) -> np.ndarray:
        """The invariant statistic of a per-user report's log-likelihood on the grid: max - min over the
        cells (a relation over any two inputs); a metric relation overrides it."""
        from ..adversary.informed import max_log_ratio

        return max_log_ratio(log_lik)
