"""Attack stage: localise sampled users (or persons) from exactly what the server saw.

With a person column in the data (``source_user``, from a dataset's ``user_column``)
the attack targets a person: a seeded sample of persons, each attacked with all the
reports of all their points, and scored against the nearest of their true points
(:class:`locpriv.adversary.local_maxima.PersonTargets`).  That is the adversary the summary's
``guarantee_epsilon_person`` bounds (:mod:`locpriv.datasets.persons`).  The informed adversary
(DP's, which knows every other row) attacks one row of each sampled person instead
(``informed_person_attack``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from .. import io
from ..adversary import bayes, informed
from ..adversary import local_maxima as attacks
from ..datasets.persons import person_level_epsilon
from ..seeding import rng as make_rng
from .metrics import run_metrics
from .prepare import load_grid
from .run import check_views, configured, n_users_of, shard_size

# the attack-bayes file, per target: the population adversary's metrics, the informed adversary's beside them
BAYES_COLUMNS = {
    **bayes.RESULT_COLUMNS,
    **{f"informed_{c}": t for c, t in bayes.RESULT_COLUMNS.items() if c != "user"},
    "informed_max_log_ratio": "float64",
    "prior_expected_error": "float64",
    "prior_hit_r": "float64",
}


def attack_sample(dataset: str, n_users: int, size: int, seed: int) -> np.ndarray:
    """The users every mechanism is attacked on: same ids for the same dataset and n."""
    size = min(size, n_users)
    return np.sort(make_rng(seed, "attack-sample", dataset, n_users).choice(n_users, size, replace=False))


def person_sample(dataset: str, persons: np.ndarray, size: int, seed: int) -> np.ndarray:
    """The persons every mechanism is attacked on (sorted ids), among ``persons`` (sorted, unique)."""
    size = min(size, len(persons))
    pick = make_rng(seed, "attack-person-sample", dataset, len(persons)).choice(len(persons), size, replace=False)
    return persons[np.sort(pick)]


def _groups(path: str, columns: list[str], wanted) -> Iterator[pd.DataFrame]:
    """The row groups whose user range [lo, hi] (Parquet statistics) ``wanted(lo, hi)`` accepts, one at a time.

    A sample spans every row group, so a filtered read would materialise the whole
    columns first: memory would grow with the dataset, not the sample.  pre_buffer=False:
    pyarrow's pre-buffering would keep every group read (see ``prepare.pooled_kde``).
    """
    file = pq.ParquetFile(path, pre_buffer=False)
    user_col = file.schema.names.index("user")
    for group in range(file.num_row_groups):
        stats = file.metadata.row_group(group).column(user_col).statistics
        if stats is None or not stats.has_min_max or wanted(stats.min, stats.max):
            yield file.read_row_group(group, columns=columns).to_pandas()


def _rows_of_users(path: str, users: np.ndarray) -> pd.DataFrame:
    """user, x, y of a few users (sorted ids), sorted by user; only row groups holding one of them are read."""
    parts = [
        frame[np.isin(frame["user"].to_numpy(), users)]
        for frame in _groups(
            path, ["user", "x", "y"], lambda lo, hi: users.searchsorted(lo) < users.searchsorted(hi, "right")
        )
    ]
    return pd.concat(parts, ignore_index=True).sort_values("user", ignore_index=True)


def _rows_of_persons(path: str, n: int, dataset: str, size: int, seed: int) -> tuple[np.ndarray, pd.DataFrame]:
    """The sampled persons among users < n (sorted ids), and all those users' rows sorted by user.

    Two passes, so memory follows the number of persons and the sample, not N: the
    persons present, then the rows of the chosen ones.
    """

    def below_n(lo, hi):
        return lo < n

    present = reduce(
        np.union1d,
        (
            f["source_user"].to_numpy()[f["user"].to_numpy() < n]
            for f in _groups(path, ["user", "source_user"], below_n)
        ),
    )
    chosen = person_sample(dataset, np.unique(present), size, seed)  # unique: a single group is not reduced
    parts = [
        f[(f["user"].to_numpy() < n) & np.isin(f["source_user"].to_numpy(), chosen)]
        for f in _groups(path, ["user", "x", "y", "source_user"], below_n)
    ]
    return chosen, pd.concat(parts, ignore_index=True).sort_values("user", ignore_index=True)


@dataclass
class Targets:
    """What the adversary attacks: the server's view of the targets' reports, sorted by user.

    ``owner[t]`` is the target of view row t (None: one row per target, a user);
    ``truth`` the targets' true locations ((n, 2) or :class:`~locpriv.adversary.local_maxima.PersonTargets`);
    ``ids`` one row per target for the output (user, and person and points for persons).
    """

    view: pd.DataFrame
    owner: np.ndarray | None
    truth: object
    ids: pd.DataFrame


class _SharedDict(dict):
    """An ``attrs`` value every frame derived from a view shares (``copy.deepcopy`` returns it as is)."""

    def __deepcopy__(self, memo):
        return self


class _SharedList(list):
    """As ``_SharedDict``, for a list value (e.g. a heatmap's per-round server view)."""

    def __deepcopy__(self, memo):
        return self


def _shared(view: pd.DataFrame) -> pd.DataFrame:
    """``view`` with ``attrs`` whose container values are shared, not copied, by the frames pandas derives.

    pandas deep-copies ``attrs`` into every derived frame (each column read, ``iloc``, ``set_index``):
    for a release of a few thousand numbers that is tens of milliseconds per access, more than the
    attack's own work on some views.  The attack only reads the release, so sharing it is safe.
    """
    kinds = {dict: _SharedDict, list: _SharedList}
    view.attrs = {key: kinds[type(v)](v) if type(v) in kinds else v for key, v in view.attrs.items()}
    return view


def _view_of(users: np.ndarray, run: dict, users_per_shard: int, view_paths: list[str]) -> pd.DataFrame:
    """The rows of ``users``, sorted by user, with ``attrs``: what the server received beside the rows (the
    release and the noise the randomiser recorded, which every shard of a run records alike)."""
    shards = np.unique(users // shard_size(run["mechanism"], users_per_shard))
    parts = [_shared(pd.read_parquet(view_paths[s], filters=[("user", "in", users.tolist())])) for s in shards]
    noise = {json.dumps(part.attrs.get("noise"), sort_keys=True) for part in parts}
    if len(noise) > 1:
        raise ValueError(
            f"{view_paths[shards[0]]}: the shards of one run record different noise parameters "
            f"({sorted(noise)}); delete the run's view folder and rerun"
        )
    view = pd.concat(parts, ignore_index=True).sort_values("user", ignore_index=True)
    view.attrs = parts[0].attrs if parts else {}
    return view


def sampled_targets(
    run: dict, seed: int, size: int, users_per_shard: int, view_paths: list[str], points_path: str, meta_json: str
) -> Targets:
    """The sampled users, or with a person column the sampled persons with all their rows."""
    n = n_users_of(run["params"], meta_json)
    if "source_user" not in pq.read_schema(points_path).names:
        users = attack_sample(run["dataset"], n, size, seed)
        truth = _rows_of_users(points_path, users)
        return Targets(
            _view_of(users, run, users_per_shard, view_paths),
            None,
            truth[["x", "y"]].to_numpy(),
            pd.DataFrame({"user": users}),
        )
    chosen, rows = _rows_of_persons(points_path, n, run["dataset"], size, seed)
    owner_of_user = pd.Series(np.searchsorted(chosen, rows["source_user"].to_numpy()), index=rows["user"].to_numpy())
    view = _view_of(rows["user"].to_numpy(), run, users_per_shard, view_paths)
    owner = owner_of_user.loc[view["user"].to_numpy()].to_numpy(dtype=np.int64)
    groups = rows.groupby("source_user", sort=True)
    ids = pd.DataFrame({"user": groups["user"].min().to_numpy(), "person": chosen, "points": groups.size().to_numpy()})
    truth = attacks.PersonTargets([g[["x", "y"]].to_numpy() for _, g in groups])
    return Targets(view, owner, truth, ids)


def _write_refused(columns: dict, out: str, metadata: dict) -> None:
    io.write_parquet(
        pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()}),
        out,
        metadata={**metadata, "note": "no user answered"},
    )


def _surfaces_of(mech, view: pd.DataFrame, grid):
    """rows of ``view`` -> their surfaces (len(rows), P, Q).

    An aggregate-only mechanism gives the server no per-user report, so every row's surface is the
    one published map: it is built once and broadcast (read-only), not rebuilt for each batch of
    rows (PrivTree's map from its released tree was 79 of the 82 s of the Geolife N = 100,000
    local-maxima attack; 3,785 batches at N = all).
    """
    if not mech.aggregate_only:
        return lambda rows: mech.surfaces(rows, grid)
    published = mech.surfaces(view.iloc[:1], grid)[0]
    return lambda rows: np.broadcast_to(published, (len(rows), *published.shape))


def _row_batches(targets: Targets, batch: int, per_row):
    """(slice, per_row(view rows)) over the view in batches of ``batch`` rows."""
    return ((sl, per_row(targets.view.iloc[sl])) for sl in attacks.batches(len(targets.view), batch))


def _ids(targets: Targets) -> np.ndarray:
    return (targets.view if targets.owner is None else targets.ids)["user"].to_numpy()


def _with_ids(result: pd.DataFrame, targets: Targets) -> pd.DataFrame:
    return result if targets.owner is None else targets.ids.join(result.drop(columns="user"))


def _target_meta(targets: Targets) -> dict:
    """Metadata of a person-level attack (a user-level one records none, as before persons)."""
    return {} if targets.owner is None else {"target": "person: all their points, distances to the nearest"}


def attack(
    *,
    run: dict,
    seed: int,
    attack_cfg: dict,
    users_per_shard: int,
    view_paths: list[str],
    points_path: str,
    meta_json: str,
    grid_path: str,
    bandwidth_json: str | None,
    out_attack: str,
) -> None:
    """[RFF-KDE]'s local-maxima attack on the sampled users or persons (see :mod:`locpriv.adversary.local_maxima`)."""
    mech = configured(run, bandwidth_json)
    grid = load_grid(grid_path)
    targets = sampled_targets(run, seed, int(attack_cfg["users"]), users_per_shard, view_paths, points_path, meta_json)
    meta = {"attack": "local_maxima", "ratio": attack_cfg["ratio"], **_target_meta(targets)}
    if targets.view.empty:  # the query was refused: nothing to attack
        _write_refused(attacks.RESULT_COLUMNS, out_attack, meta)
        return
    batch = int(attack_cfg.get("batch", attacks.DEFAULT_BATCH))
    surfaces_of = _surfaces_of(mech, targets.view, grid)
    surfaces = _row_batches(targets, batch, surfaces_of)
    if targets.owner is not None:  # a person's surface: the sum of their reports' surfaces
        total = attacks.person_sums(
            lambda rows: surfaces_of(targets.view.iloc[rows]), targets.owner, len(targets.ids), batch
        )
        surfaces = ((sl, total[sl]) for sl in attacks.batches(len(total), batch))
    result = attacks.local_maxima_attack(surfaces, grid, _ids(targets), targets.truth, float(attack_cfg["ratio"]))
    io.write_parquet(_with_ids(result, targets), out_attack, metadata=meta)


def _run_points(points_path: str, n: int) -> pd.DataFrame:
    """user, x, y of every user of the run (users 0..n-1), sorted by user: what the informed adversary knows."""
    return pd.read_parquet(points_path, columns=["user", "x", "y"], filters=[("user", "<", n)]).sort_values(
        "user", ignore_index=True
    )


def _whole_view(view_paths: list[str]) -> pd.DataFrame:
    """Every row of the run's view (an interactive mechanism's single shard), attrs as the first shard's."""
    parts = [_shared(pd.read_parquet(path)) for path in view_paths]
    view = pd.concat(parts, ignore_index=True)
    view.attrs = parts[0].attrs
    return view


def person_joint(targets: Targets, batch: int, log_lik_of, prior: np.ndarray):
    """Each person's joint log-likelihood of all their rows from one cell (``bayes.person_log_likelihoods``),
    how many persons needed the mixture, and the joint's range over the cells it allows."""
    joint, mixture = bayes.person_log_likelihoods(
        lambda rows: log_lik_of(targets.view.iloc[rows], rows), targets.owner, len(targets.ids), prior > 0, batch
    )
    finite = np.where(np.isfinite(joint), joint, np.nan).reshape(len(joint), -1)
    return joint, mixture, np.nanmax(finite, axis=1) - np.nanmin(finite, axis=1)


def bayes_adversary(targets: Targets, batch: int, log_lik_of, prior: np.ndarray, grid, radius: float):
    """One Bayes adversary on the targets: its rows per target, how many persons needed the mixture, and
    each person's joint log-likelihood range over the cells it allows (None for user targets)."""
    if targets.owner is None:
        log_liks = ((sl, log_lik_of(targets.view.iloc[sl], sl)) for sl in attacks.batches(len(targets.view), batch))
        return bayes.bayes_attack(log_liks, prior, grid, _ids(targets), targets.truth, radius), None, None
    joint, mixture, person_range = person_joint(targets, batch, log_lik_of, prior)
    log_liks = ((sl, joint[sl]) for sl in attacks.batches(len(joint), batch))
    return bayes.bayes_attack(log_liks, prior, grid, _ids(targets), targets.truth, radius), mixture, person_range


def _run_name(run: dict) -> str:
    """dataset/mechanism/params/rep~r: how a failing check names the run."""
    return (
        f"{run['dataset']}/{run['mechanism']}/"
        + ",".join(f"{k}={v}" for k, v in run["params"].items())
        + f"/rep~{run['rep']}"
    )


# the reports a per-report noise check reads at most (whole shards, in user order): its power at this many
# values is 1 to machine precision for a twofold weaker noise, and its memory must not grow with N
NOISE_CHECK_REPORTS = 1_000_000


def _view_prefix(view_paths: list[str], reports: int) -> pd.DataFrame:
    """The run's first shards in user order, until they hold at least ``reports`` rows (attrs the first's)."""
    parts, rows = [], 0
    for path in view_paths:
        parts.append(_shared(pd.read_parquet(path)))
        rows += len(parts[-1])
        if rows >= reports:
            break
    view = pd.concat(parts, ignore_index=True)
    view.attrs = parts[0].attrs
    return view


def _check_noise(mech, run: dict, others: informed.Others, grid, view_paths: list[str], points_path: str):
    """The noise the run drew, tested against the law its record states (``audit.noise``): raises
    NoiseCheckFailure (one line) if it is weaker; returns the result as a dict.  None where the mechanism
    draws no noise it exposes (``Mechanism.realised_noise``), read without loading the run.  A per-report
    noise (``Mechanism.noise_per_report``) is read from the first shards, at least
    :data:`NOISE_CHECK_REPORTS` reports, and only their users' points; an aggregate's needs the whole run.
    Runs whose record states no epsilon (a leaked input, a setting with no proof) are checked too: their
    noise law is recorded all the same."""
    # deferred: the check needs scipy.optimize, which the attack's own code does not (tests/test_lazy_imports.py)
    from ..audit import noise

    if not mech.exposes_noise:
        return None
    if mech.noise_per_report:
        view = _view_prefix(view_paths, NOISE_CHECK_REPORTS)
        users = view["user"].to_numpy()
        points = _rows_of_users(points_path, np.unique(users)).set_index("user").loc[users].reset_index()
    else:
        view = others.view
        points = others.points.iloc[others.rows_of(view["user"].to_numpy())].reset_index(drop=True)
    noises = mech.realised_noise(view, points, grid)
    return None if noises is None else noise.check(noises, mechanism=mech.name, run=_run_name(run)).as_dict()


#: the informed adversary's model of a person (the metadata's ``informed_person_model``)
PERSON_MODEL = "one target row per person (their first), every other row known, the person's other rows included"


def target_rows(targets: Targets) -> tuple[np.ndarray, np.ndarray]:
    """Each person's target row for the informed adversary: its position in the view (the person's first row,
    the lowest user id, which names the person in the output) and its true location (n_persons, 2)."""
    first = np.unique(targets.owner, return_index=True)[1]  # the view is sorted by user
    if not np.array_equal(targets.view["user"].to_numpy()[first], targets.ids["user"].to_numpy()):
        raise ValueError("informed adversary: a person's first row is missing from the view")
    return first, np.array([points[0] for points in targets.truth.points])


def informed_person_attack(mech, targets: Targets, others, prior: np.ndarray, grid, radius: float, batch: int):
    """The informed adversary on persons: DP's threat model with the row as the unit, so a likelihood that is
    the release's true law whatever the person's rows do.

    What it knows: every row of the run but one, the person's target row (``target_rows``), i.e. the
    other persons' rows and the person's own other rows at their true places (their count, their
    spread over the domain).  What it infers: the target row's location x, from everything released.
    Its likelihood L(x) = P(release | all other rows, target row at x) is the mechanism's row-level
    informed likelihood (``Mechanism.informed_log_likelihood``, checked by brute force against each
    release law), or, for a per-user report, the target row's own report's likelihood: the person's
    other reports are independent of x given their rows.  So the posterior is Bayes' rule on the true
    law, and scored against the target row's own location its expected error cannot exceed the prior's
    in expectation over targets drawn from the prior: the mean distance between two independent draws
    of a distribution is concave in it (Euclidean distance is of negative type), and the prior is the
    posteriors' mean (Jensen).

    Why not the person's rows placed together at one hypothesised place (the earlier model): for a
    person whose rows spread over a city no hypothesis is the truth, the likelihood is not the release's
    law, and the error measured came out above the prior's (Geolife, ``dp_heatmap``: 6.3 against
    4.55 km).  That family still gives the person-level invariant statistic (``_check_invariant``):
    a log-ratio between two datasets that differ in all of one person's rows, which group privacy bounds.
    """
    first, truth = target_rows(targets)
    rows = targets.view.iloc[first]

    def log_lik_of(part):
        if mech.informed_is_population:
            return mech.log_likelihood(part, grid)
        return mech.informed_log_likelihood(part, grid, others)[0]

    log_liks = ((sl, log_lik_of(rows.iloc[sl])) for sl in attacks.batches(len(rows), batch))
    return bayes.bayes_attack(log_liks, prior, grid, targets.ids["user"].to_numpy(), truth, radius)


def _check_invariant(
    mech, run: dict, record, targets: Targets, row_stat: np.ndarray, person_stat: np.ndarray | None, meta_json: str
) -> float | None:
    """The invariant (``adversary.informed``): every attacked row's statistic within the recorded epsilon,
    every person's within the person-level epsilon where one holds.  Returns the person-level epsilon."""
    name = _run_name(run)
    if record.epsilon is not None:
        informed.check(  # one row is one report: at epsilon / person_reports under person_budget split_epsilon
            row_stat,
            record.epsilon / mech.person_reports,
            mechanism=mech.name,
            run=name,
            users=targets.view["user"].to_numpy(),
            relation=record.relation if mech.person_reports == 1 else f"one report of {record.relation}",
        )
    if person_stat is None:
        return None
    person_eps = person_level_epsilon(
        record.epsilon if not record.delta else None, io.read_json(meta_json).get("person_cap"), mech.person_reports
    )
    if person_eps is not None:
        informed.check(
            person_stat,
            person_eps,
            mechanism=mech.name,
            run=name,
            users=targets.ids["user"].to_numpy(),
            relation=f"{record.relation}, every row of one person (person-level)",
        )
    return person_eps


def bayes_attack(
    *,
    run: dict,
    seed: int,
    adversary_cfg: dict,
    users_per_shard: int,
    view_paths: list[str],
    points_path: str,
    meta_json: str,
    grid_path: str,
    truth_path: str,
    bandwidth_json: str | None,
    out_attack: str,
) -> None:
    """The two Bayes-optimal adversaries (Shokri et al. 2011) on the same sampled users (or persons) as the
    local maxima, and the invariant that ties the informed one to the guarantee.

    Population adversary (columns ``expected_error`` ...): sees the target's view and knows
    nothing of the others (``Mechanism.log_likelihood``).  Informed adversary (``informed_*``):
    DP's threat model, it also knows every other user's exact location
    (``Mechanism.informed_log_likelihood``, ``locpriv.adversary.informed``); for a per-user
    local report the two coincide for user targets and are computed once.  ``informed_max_log_ratio``: the
    invariant statistic of the target's rows (the largest, for a person), checked against the
    recorded epsilon (the person-level one, ``informed_max_log_ratio_person``, where it holds):
    a violation fails the job with one line naming the mechanism, run and user, before any
    output is written.  ``adversary_cfg``: prior (population | uniform), users, r (radius of
    ``hit_r`` in grid cells, i.e. r times the larger cell side), batch.  The population adversary's
    person likelihood is that of all their reports from one cell, or a mixture over their reports when
    no cell explains them all (:func:`locpriv.adversary.bayes.person_log_likelihoods`; the count is in
    the metadata), scored against the nearest of the person's points.  The informed adversary attacks
    one target row per person with every other row known and is scored against that row
    (``informed_person_attack``; ``informed_person_model`` in the metadata); its person-level
    invariant statistic comes from the person's rows all placed at one location
    (``Mechanism.informed_person_log_likelihood`` where a mechanism has one).  A release that tells the population
    adversary nothing (``Mechanism.population_learns_nothing``) has the prior as every posterior,
    formed once (``bayes.prior_attack``).  ``prior_expected_error``, ``prior_hit_r``: the no-information
    adversary's (the prior as every posterior) on the same targets, the frontier's reference, scored as the
    population adversary is; on person data also ``prior_informed_expected_error``, ``prior_informed_hit_r``,
    scored against the informed adversary's target row: a level of the informed adversary's frontier is a
    fraction of this one, since the two adversaries' errors are measured to different points of a person.
    """
    mech = configured(run, bandwidth_json)
    grid = load_grid(grid_path)
    targets = sampled_targets(
        run, seed, int(adversary_cfg["users"]), users_per_shard, view_paths, points_path, meta_json
    )
    radius = float(adversary_cfg["r"]) * max(grid.x[1] - grid.x[0], grid.y[1] - grid.y[0])
    record = mech.run_guarantee(run["params"])
    meta = {
        "attack": "bayes",
        "prior": adversary_cfg["prior"],
        "r": radius,
        "r_cells": adversary_cfg["r"],
        "aggregate_only": mech.aggregate_only,
        "informed_is_population": mech.informed_is_population,
        "informed_epsilon": record.epsilon,
        "informed_relation": record.relation,
        **_target_meta(targets),
    }
    if targets.view.empty:
        _write_refused(BAYES_COLUMNS, out_attack, meta)
        return
    prior = bayes.prior(adversary_cfg["prior"], io.read_nc3(truth_path)["density"].values)
    batch = int(adversary_cfg.get("batch", attacks.DEFAULT_BATCH))
    n = n_users_of(run["params"], meta_json)
    others = informed.Others(lambda: _run_points(points_path, n), lambda: _whole_view(view_paths))
    meta["noise_check"] = _check_noise(mech, run, others, grid, view_paths, points_path)  # fails before any output
    row_stat = np.empty(len(targets.view))

    def population(rows, sl):
        log_lik = mech.log_likelihood(rows, grid)
        if mech.informed_is_population:
            row_stat[sl] = mech.informed_statistic(rows, log_lik)
        return log_lik

    def informed_adversary(rows, sl):
        log_lik, row_stat[sl] = mech.informed_log_likelihood(rows, grid, others)
        return log_lik

    if mech.population_learns_nothing:  # the prior for everyone: one posterior, one guess
        result = bayes.prior_attack(prior, grid, _ids(targets), targets.truth, radius, batch)
        meta["persons_mixture"] = person_range = None
        if targets.owner is not None:  # a constant joint likelihood: no fallback, a range of 0
            meta["persons_mixture"], person_range = 0, np.zeros(len(targets.ids))
    else:
        result, meta["persons_mixture"], person_range = bayes_adversary(targets, batch, population, prior, grid, radius)
    if targets.owner is not None:
        informed_result = informed_person_attack(mech, targets, others, prior, grid, radius, batch)
        meta["informed_person_model"] = PERSON_MODEL
        # the person-level invariant: each person's rows all placed at one location (the mechanism's own joint
        # likelihood where it has one), else the sum of their rows' likelihoods from one cell
        person = mech.informed_person_log_likelihood(targets.view, targets.owner, len(targets.ids), grid, others)
        if person is not None:
            _, informed_range, row_stat[:] = person
        elif mech.informed_is_population:
            informed_range = person_range
        else:
            _, meta["informed_persons_mixture"], informed_range = person_joint(
                targets, batch, informed_adversary, prior
            )
    elif mech.informed_is_population:
        informed_result = result
    else:
        informed_result = bayes_adversary(targets, batch, informed_adversary, prior, grid, radius)[0]
    columns = {f"informed_{c}": informed_result[c].to_numpy() for c in bayes.RESULT_COLUMNS if c != "user"}
    # the no-information adversary (the prior alone) on the same targets: the frontier's levels are
    # fractions of its error, so "more private" means "closer to knowing nothing"
    prior_only = (
        result
        if mech.population_learns_nothing
        else bayes.prior_attack(prior, grid, _ids(targets), targets.truth, radius, batch)
    )
    if targets.owner is None:
        columns["informed_max_log_ratio"] = row_stat
        person_stat = None
    else:  # a person: the largest of their rows'; the person-level statistic over their joint likelihood
        columns["informed_max_log_ratio"] = pd.Series(row_stat).groupby(targets.owner).max().to_numpy()
        metric = record.relation.startswith("metric")  # metric: the per-row Lipschitz constants add up
        person_stat = np.bincount(targets.owner, weights=row_stat) if metric else informed_range
        columns["informed_max_log_ratio_person"] = person_stat
    columns["prior_expected_error"] = prior_only["expected_error"].to_numpy()
    columns["prior_hit_r"] = prior_only["hit_r"].to_numpy()
    if targets.owner is not None:  # the same prior, scored where the informed adversary is: the attacked row
        prior_rows = bayes.prior_attack(prior, grid, _ids(targets), target_rows(targets)[1], radius, batch)
        columns["prior_informed_expected_error"] = prior_rows["expected_error"].to_numpy()
        columns["prior_informed_hit_r"] = prior_rows["hit_r"].to_numpy()
    meta["informed_epsilon_person"] = _check_invariant(mech, run, record, targets, row_stat, person_stat, meta_json)
    out = pd.concat([result, pd.DataFrame(columns)], axis=1)
    io.write_parquet(_with_ids(out, targets), out_attack, metadata=meta)


def attacks_of_run(
    *,
    run: dict,
    seed: int,
    attack_cfg: dict,
    adversary_cfg: dict,
    users_per_shard: int,
    view_paths: list[str],
    points_path: str,
    meta_json: str,
    grid_path: str,
    truth_path: str,
    bandwidth_json: str | None,
    out_local_maxima: str,
    out_bayes: str,
) -> None:
    """Both adversaries of one run in one job: the local maxima, then the Bayes adversary."""
    common = {
        "run": run,
        "seed": seed,
        "users_per_shard": users_per_shard,
        "view_paths": check_views(view_paths),
        "points_path": points_path,
        "meta_json": meta_json,
        "grid_path": grid_path,
        "bandwidth_json": bandwidth_json,
    }
    attack(attack_cfg=attack_cfg, out_attack=out_local_maxima, **common)
    bayes_attack(adversary_cfg=adversary_cfg, truth_path=truth_path, out_attack=out_bayes, **common)


def attack_metrics_group(
    *,
    runs: list[dict],
    seed: int,
    attack_cfg: dict,
    adversary_cfg: dict,
    users_per_shard: int,
    hotspot_k: int,
    view_paths: list[list[str]],
    est_paths: list[str],
    points_path: str,
    meta_json: str,
    grid_path: str,
    truth_path: str,
    pooled_path: str | None,
    workload_path: str,
    bandwidth_json: str | None,
    out_local_maxima: list[str],
    out_bayes: list[str],
    out_metrics: list[str],
) -> None:
    """Both adversaries and then the metrics of each run of a group (the reps of one setting) in one
    job; each run's files are those of one job per stage (same seeds, same inputs)."""
    for k, run in enumerate(runs):
        attacks_of_run(
            run=run,
            seed=seed,
            attack_cfg=attack_cfg,
            adversary_cfg=adversary_cfg,
            users_per_shard=users_per_shard,
            view_paths=view_paths[k],
            points_path=points_path,
            meta_json=meta_json,
            grid_path=grid_path,
            truth_path=truth_path,
            bandwidth_json=bandwidth_json,
            out_local_maxima=out_local_maxima[k],
            out_bayes=out_bayes[k],
        )
        run_metrics(
            run=run,
            est_path=est_paths[k],
            truth_path=truth_path,
            pooled_path=pooled_path,
            attack_path=out_local_maxima[k],
            bayes_path=out_bayes[k],
            workload_path=workload_path,
            grid_path=grid_path,
            bandwidth_json=bandwidth_json,
            meta_json=meta_json,
            hotspot_k=hotspot_k,
            out_metrics=out_metrics[k],
        )
