"""Measured: the adversaries across releases on synthetic trajectories, replicated over independent datasets.

``python -m locpriv.adversary.linkage_study --out docs/results/cross_release.csv`` (docs/results/cross_release.md).

Each replication draws a new synthetic trajectory dataset (``datasets.synthetic.trajectories``: gauss9,
``persons`` persons, ``days`` x ``per_day`` rows, each a slot of 24 h / per_day, one row per person per
slot) and releases every slot once per mechanism, with the mechanism's own ``randomize`` and ``estimate``
(the public API the workflow's stages call) and a noise stream keyed by the replication, the mechanism and
the slot.  The slots are the windows of ``releases: {window: <24 h / per_day>}``.  Per replication it
measures the cross-release Bayes adversary (``linkage.curve``: expected error as a fraction of the
prior's, and the exposed share, after k = 1..T releases), population and informed (who knows every other
row of each slot), and Xu et al.'s recovery (``trajectory_recovery``) on the exact counts, on each
mechanism's per-slot maps, and on the population density in every slot (``population``: the
no-information reference, what chance gives on this pattern).  The table gives the mean and the 95 %
t-interval over the replications (``frontier.t_interval``).  The workflow's stages (``stages.linkage``)
compute the same quantities from the runs' files, one setting and repetition a job.

``--geolife <csv>`` measures the same on Geolife (docs/results/geolife_over_time.md): the ``--windows`` windows
of ``--window`` from Monday 2008-10-20, a person capped at ``--cap`` rows a window (``heatmaps.continual_compare.
geolife_window_rows``, as the ingest caps a window), every person of those windows attacked, and every mechanism
at the same person-level epsilon a window (``--epsilon-person``, priced as the ledger prices it: ``row_epsilon``).
The data are fixed; each replication is an independent release of every window.  The per-window likelihoods are
the workflow stage's own (``linkage.window_log_likelihoods``): the population adversary combines all of a person's
rows in a window, the informed one a single target row.  A Geolife person is in some windows only; Xu et al.'s
attack needs every person in every slot, so it runs on the ``--slots`` consecutive windows with the most persons
present in all of them (``stretch``), scored on those persons; the maps it reads are the windows' whole releases.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

from .. import ledger, mechanisms
from ..datasets import synthetic
from ..datasets.windows import length
from ..domain import Domain, Grid
from ..frontier import t_interval
from ..heatmaps.continual_compare import geolife_domain, geolife_window_rows
from ..seeding import rng
from . import bayes, informed, linkage
from . import trajectory_recovery as recovery
from .likelihoods import cell_of

START = "2008-10-20"  # a Monday: the Geolife year of docs/results/continual_heatmaps.md
MECHANISMS = {
    "laplace_ldp": {"epsilon": 2.0, "h": 0.55},
    "privtree": {"epsilon": 2.0},
    "heatmap_flat": {"epsilon": 2.0, "depth": 4},
}


def _slots(seed: int, persons: int, days: int, per_day: int, stay: float) -> np.ndarray:
    """(persons, T, 2) locations, slot t holding each person's row t."""
    rows = synthetic.trajectories(
        "gauss9", persons, days=days, per_day=per_day, stay=stay, start="2026-01-05", rng=rng(seed, "linkage study")
    )
    return rows[["x", "y"]].to_numpy().reshape(persons, days * per_day, 2)


def replication(seed: int, *, persons: int, days: int, per_day: int, stay: float, grid: Grid, r: float):
    """One dataset's rows of both tables: (k-curve rows per mechanism, recovery rows per release)."""
    xy = _slots(seed, persons, days, per_day, stay)
    steps = xy.shape[1]
    prior = bayes.prior("population", synthetic.PATTERNS["gauss9"]().density(grid.x, grid.y))
    home = linkage.home_cells(xy.reshape(-1, 2), np.repeat(np.arange(persons), steps), persons, grid)
    i, j = cell_of(xy.reshape(-1, 2), grid)
    truth = (i * grid.shape[1] + j).reshape(persons, steps)
    cells = grid.shape[0] * grid.shape[1]
    starts = pd.date_range("2026-01-05", periods=steps, freq=f"{24 // per_day}h", tz="UTC")
    night, day = recovery.slot_calendar(starts, recovery.DEFAULTS["night"])
    x, y = np.meshgrid(grid.x, grid.y, indexing="ij")
    centres = np.stack([x.ravel(), y.ravel()], axis=1)

    def recovered(release):
        found = recovery.recover(recovery.to_persons(release, persons), centres, night, day)
        return recovery.evaluate(found, truth, centres, recovery.DEFAULTS["k"])

    exact = np.stack([np.bincount(truth[:, t], minlength=cells) for t in range(steps)])
    # the reference: the population density in every slot, what the adversary knows without any release
    population = np.tile(prior.ravel(), (steps, 1))
    recoveries = [{"release": "exact", **recovered(exact)}, {"release": "population", **recovered(population)}]
    curves = []
    for name, params in MECHANISMS.items():
        mech = mechanisms.get(name)(**params).sized(persons)
        maps, log_liks = [], {"population": [], "informed": []}
        for t in range(steps):
            points = pd.DataFrame({"user": np.arange(persons), "x": xy[:, t, 0], "y": xy[:, t, 1]})
            view = mech.randomize(points, rng=rng(seed, "linkage study", name, t), domain=grid)
            view = view.sort_values("user", ignore_index=True)  # (attrs kept) one row per person, in person order
            maps.append(np.nan_to_num(mech.estimate(view, grid=grid)).ravel())
            learns = not mech.population_learns_nothing
            log_liks["population"].append(
                mech.log_likelihood(view, grid) if learns else np.zeros((persons, *grid.shape))
            )
            others = informed.Others(lambda points=points: points, lambda view=view: view)
            log_liks["informed"].append(mech.informed_log_likelihood(view, grid, others)[0])
        for adversary, per_window in log_liks.items():
            per_person = linkage.curve(prior, per_window, grid, home, r)
            curves.append(linkage.summarise(per_person).assign(release=name, adversary=adversary))
        recoveries.append({"release": name, **recovered(np.stack(maps))})
    return pd.concat(curves, ignore_index=True), pd.DataFrame(recoveries)


def study(*, reps: int, persons: int, days: int, per_day: int, stay: float) -> pd.DataFrame:
    """Both attacks' metrics, mean and 95 % t-interval over ``reps`` independent datasets: one row per
    (attack, release, k, metric); k is the number of releases combined (the recovery's: all T)."""
    grid = Grid.regular(Domain(-3, 3, -3, 3), 24, 20)
    r = 3 * max(grid.x[1] - grid.x[0], grid.y[1] - grid.y[0])  # adversary.r's default, 3 cells
    runs = [replication(s, persons=persons, days=days, per_day=per_day, stay=stay, grid=grid, r=r) for s in range(reps)]
    table = _intervals(runs, [], days * per_day)
    return table.assign(reps=reps, persons=persons)


def _intervals(runs, keys: list[str], slots: int) -> pd.DataFrame:
    """Mean and 95 % t-interval over the replications' (curves, recoveries), per ``keys``, release, (adversary, k)
    and metric; ``slots``: the recovery's k (the slots it links)."""
    curves = pd.concat([c for c, _ in runs], ignore_index=True)
    found = pd.concat([f for _, f in runs], ignore_index=True)
    rows = []
    for key, part in curves.groupby([*keys, "release", "adversary", "k"], sort=False):
        *fixed, release, adversary, k = key
        for metric in ("expected_error_fraction", "exposed"):
            rows.append((*fixed, f"cross_release_bayes_{adversary}", release, k, metric, *t_interval(part[metric])))
    for key, part in found.groupby([*keys, "release"], sort=False):
        *fixed, release = key
        for metric in part.columns.drop([*keys, "release"]):
            rows.append((*fixed, "trajectory_recovery", release, slots, metric, *t_interval(part[metric])))
    columns = [*keys, "attack", "release", "k", "metric", "mean", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=columns)


#: the Geolife study's mechanisms and their parameters other than epsilon (x, y in metres: h is a KDE bandwidth)
GEOLIFE_MECHANISMS = {
    "laplace_ldp": {"h": 1000.0},
    "privtree": {},
    "heatmap_flat": {"depth": 4},
    "hdg": {},
    "dp_heatmap": {"depth": 4},
}
GEOLIFE_DEFAULT = ["laplace_ldp", "privtree", "heatmap_flat"]


def row_epsilon(name: str, params: dict, epsilon_person: float, cap: int) -> float:
    """The per-row epsilon at which one window's release costs a person with up to ``cap`` rows ``epsilon_person``,
    priced as the ledger prices it (``ledger.person_record``: the person-level record is linear in epsilon)."""
    spec = {"source": "points", "user_column": "user", "max_points_per_person": cap}
    unit = ledger.person_record(spec, name, {"epsilon": 1.0, **params}, diameter=math.inf)["epsilon"]
    return epsilon_person / unit


def stretch(windows: list[pd.DataFrame], slots: int) -> tuple[int, np.ndarray]:
    """The first of the ``slots`` consecutive windows with the most persons present in every one of them, and
    those persons (sorted): Xu et al.'s attack needs one place per person per slot."""
    present = [set(w["source_user"]) for w in windows]
    best = max(range(len(windows) - slots + 1), key=lambda s: len(set.intersection(*present[s : s + slots])))
    return best, np.array(sorted(set.intersection(*present[best : best + slots])))


def geolife_replication(
    rep: int, *, windows, starts, grid: Grid, prior, home, chosen, epsilons, cap, slots, seed, names
):
    """One replication (independent noise, the same data) of every mechanism at every person-level epsilon per
    window: (k-curve rows, recovery rows), as ``replication`` on synthetic data."""
    first, present = stretch(windows, slots)
    cells = grid.shape[0] * grid.shape[1]
    truth = []
    for w in windows[first : first + slots]:
        rows = w.drop_duplicates("source_user").set_index("source_user").loc[present]  # rows are in time order
        i, j = cell_of(rows[["x", "y"]].to_numpy(), grid)
        truth.append(i * grid.shape[1] + j)
    truth = np.stack(truth, axis=1)
    night, day = recovery.slot_calendar(starts[first : first + slots], recovery.DEFAULTS["night"])
    x, y = np.meshgrid(grid.x, grid.y, indexing="ij")
    centres = np.stack([x.ravel(), y.ravel()], axis=1)

    def recovered(release):
        found = recovery.recover(recovery.to_persons(release, len(present)), centres, night, day)
        return recovery.evaluate(found, truth, centres, recovery.DEFAULTS["k"])

    exact = np.stack([np.bincount(truth[:, t], minlength=cells) for t in range(slots)])
    population = np.tile(prior.ravel(), (slots, 1))
    reference = [{"release": "exact", **recovered(exact)}, {"release": "population", **recovered(population)}]
    recoveries = [{"epsilon_person_window": e, **row} for e in epsilons for row in reference]
    curves = []
    r = 3 * max(grid.x[1] - grid.x[0], grid.y[1] - grid.y[0])  # adversary.r's default, 3 cells
    for epsilon_person in epsilons:
        for name in names:
            params = GEOLIFE_MECHANISMS[name]
            epsilon = row_epsilon(name, params, epsilon_person, cap)
            maps, log_liks = [], {"population": [], "informed": []}
            for t, w in enumerate(windows):
                points = pd.DataFrame({"user": np.arange(len(w)), "x": w["x"], "y": w["y"]})
                mech = mechanisms.get(name)(epsilon=epsilon, **params).sized(len(points))
                view = mech.randomize(
                    points, rng=rng(seed, "geolife linkage", name, epsilon_person, rep, t), domain=grid
                )
                view = view.sort_values("user", ignore_index=True)  # attrs kept
                if first <= t < first + slots:
                    maps.append(np.nan_to_num(mech.estimate(view, grid=grid)).ravel())
                mine = points.assign(source_user=w["source_user"].to_numpy())[w["source_user"].isin(chosen).to_numpy()]
                pop, inf = linkage.window_log_likelihoods(
                    mech,
                    lambda users, view=view: view if users is None else view[view["user"].isin(users)],
                    mine,
                    points,
                    chosen,
                    grid,
                    prior,
                    bayes.DEFAULTS["batch"],
                )
                log_liks["population"].append(pop)
                log_liks["informed"].append(inf)
            for adversary, per_window in log_liks.items():
                per_person = linkage.curve(prior, per_window, grid, home, r)
                curves.append(
                    linkage.summarise(per_person).assign(
                        epsilon_person_window=epsilon_person, release=name, adversary=adversary
                    )
                )
            recoveries.append({"epsilon_person_window": epsilon_person, "release": name, **recovered(np.stack(maps))})
    return pd.concat(curves, ignore_index=True), pd.DataFrame(recoveries)


def geolife_study(
    path: str,
    *,
    reps: int,
    window: str,
    count: int,
    cap: int,
    epsilons,
    cells: int,
    slots: int,
    seed: int,
    names=tuple(GEOLIFE_DEFAULT),
) -> pd.DataFrame:
    """Both attacks on the Geolife file's ``count`` windows of ``window`` from 2008-10-20 (a person capped at ``cap``
    rows a window), every person of the year attacked, ``reps`` independent releases; ``epsilons``: person-level
    epsilon of one window's release, the same for every mechanism.  The grid is ``cells`` x ``cells`` over the
    Beijing box, the prior the histogram of the year's released rows on it (the population density)."""
    windows = geolife_window_rows(path, start=START, window=window, count=count, cap=cap, seed=seed)
    grid = Grid.regular(geolife_domain(), cells, cells)
    year = pd.concat(windows, ignore_index=True)
    i, j = cell_of(year[["x", "y"]].to_numpy(), grid)
    prior = bayes.prior("population", np.bincount(i * cells + j, minlength=cells * cells).reshape(cells, cells))
    chosen = np.sort(year["source_user"].unique())
    home = linkage.home_cells(
        year[["x", "y"]].to_numpy(), np.searchsorted(chosen, year["source_user"]), len(chosen), grid
    )
    starts = pd.date_range(START, periods=count, freq=length(window, "--window"), tz="UTC")
    runs = [
        geolife_replication(
            rep,
            windows=windows,
            starts=starts,
            grid=grid,
            prior=prior,
            home=home,
            chosen=chosen,
            epsilons=epsilons,
            cap=cap,
            slots=slots,
            seed=seed,
            names=names,
        )
        for rep in range(reps)
    ]
    table = _intervals(runs, ["epsilon_person_window"], slots)
    return table.assign(reps=reps, persons=len(chosen), window=window, windows=count, cap=cap)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the csv to write")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--persons", type=int, default=100)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--per-day", type=int, default=3)
    parser.add_argument("--stay", type=float, default=0.8)
    parser.add_argument("--geolife", help="the Geolife CSV: its windows from 2008-10-20 instead of synthetic ones")
    parser.add_argument("--window", default="1w", help="Geolife: window length (1d, 1w)")
    parser.add_argument("--windows", type=int, default=52, help="Geolife: number of windows T")
    parser.add_argument("--cap", type=int, default=20, help="Geolife: a person's rows per window at most")
    parser.add_argument(
        "--epsilon-person", type=float, nargs="+", default=[10 / 52], help="Geolife: person-level epsilon per window"
    )
    parser.add_argument("--cells", type=int, default=40, help="Geolife: grid cells per side")
    parser.add_argument("--slots", type=int, default=8, help="Geolife: consecutive windows the recovery links")
    parser.add_argument(
        "--mechanisms", nargs="+", default=GEOLIFE_DEFAULT, choices=sorted(GEOLIFE_MECHANISMS), help="Geolife"
    )
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    if args.geolife:
        table = geolife_study(
            args.geolife,
            reps=args.reps,
            window=args.window,
            count=args.windows,
            cap=args.cap,
            epsilons=args.epsilon_person,
            cells=args.cells,
            slots=args.slots,
            seed=args.seed,
            names=args.mechanisms,
        )
    else:
        table = study(reps=args.reps, persons=args.persons, days=args.days, per_day=args.per_day, stay=args.stay)
    table.to_csv(args.out, index=False, float_format="%.4g")


if __name__ == "__main__":
    main()
