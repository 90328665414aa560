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
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from .. import mechanisms
from ..datasets import synthetic
from ..domain import Domain, Grid
from ..frontier import t_interval
from ..seeding import rng
from . import bayes, informed, linkage
from . import trajectory_recovery as recovery
from .likelihoods import cell_of

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
    curves = pd.concat([c for c, _ in runs], ignore_index=True)
    found = pd.concat([f for _, f in runs], ignore_index=True)
    rows = []
    for (release, adversary, k), part in curves.groupby(["release", "adversary", "k"], sort=False):
        for metric in ("expected_error_fraction", "exposed"):
            rows.append((f"cross_release_bayes_{adversary}", release, k, metric, *t_interval(part[metric])))
    for release, part in found.groupby("release", sort=False):
        for metric in part.columns.drop("release"):
            rows.append(("trajectory_recovery", release, days * per_day, metric, *t_interval(part[metric])))
    columns = ["attack", "release", "k", "metric", "mean", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=columns).assign(reps=reps, persons=persons)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the csv to write")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--persons", type=int, default=100)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--per-day", type=int, default=3)
    parser.add_argument("--stay", type=float, default=0.8)
    args = parser.parse_args(argv)
    table = study(reps=args.reps, persons=args.persons, days=args.days, per_day=args.per_day, stay=args.stay)
    table.to_csv(args.out, index=False, float_format="%.4g")


if __name__ == "__main__":
    main()
