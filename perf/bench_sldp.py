"""SLDP mean estimation of ||x||^2 ([SLDP] §5.1) against LDP and central DP, and protocol speed.

Data N(0, 1.5^2 I) truncated to [-10, 10]^2, delta = 0.05, half of epsilon for the
partition (per-child rule of the authors' code, Q = 0, depth 10), half for the
estimate; MSE over repetitions.  Also times the protocol for 10^6 users.

Run:  python perf/bench_sldp.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from locpriv.seeding import rng as make_rng
from locpriv.sldp import ldp_grid, mean, privtree, range_queries
from locpriv.sldp.protocol import run_protocol

BOX = (-10.0, 10.0, -10.0, 10.0)


def data(n, rng):
    pts = rng.normal(0, 1.5, size=(2 * n, 2))
    return pts[(np.abs(pts) <= 10).all(axis=1)][:n]


UNIT = (0.0, 1.0, 0.0, 1.0)


def clustered(n, rng):
    """Range-query data on [0, 1]^2: three Gaussian clusters over a uniform background."""
    centres = np.array([[0.3, 0.3], [0.7, 0.6], [0.4, 0.8]])
    k = rng.integers(0, 4, n)
    pts = np.where(k[:, None] < 3, centres[np.minimum(k, 2)] + rng.normal(0, 0.05, (n, 2)), rng.uniform(0, 1, (n, 2)))
    return pts.clip(0, 1)


def range_table(reps):
    """MRE of 200 anchored queries (App. A.2): SLDP partition counts, PrivTree, LDP OUE grid."""
    print(f"\nrange queries, anchored workload, 200 queries, MRE over {reps} repetitions")
    print(f"{'N':>7} {'eps':>5} {'SLDP':>8} {'PrivTree':>9} {'LDP grid':>9}")
    for n in (5000, 20000):
        for eps in (0.5, 1.0, 2.0):
            err = {"sldp": [], "privtree": [], "ldp": []}
            for r in range(reps):
                rng = make_rng(1, "bench-range", n, eps, r)
                pts = clustered(n, rng)
                q = range_queries.anchored_workload(pts, UNIT, 200, rng)
                truth = range_queries.true_counts(q, pts)
                part = run_protocol(
                    pts,
                    UNIT,
                    eps,
                    threshold=0,
                    max_depth=10,
                    delta=0.05,
                    rng=rng,
                    split_rule="per_child",
                    keep_reports=False,
                ).cells
                err["sldp"].append(range_queries.answer(q, part, UNIT))
                err["privtree"].append(
                    range_queries.answer(q, privtree.privtree(pts, UNIT, eps / 2, eps / 2, rng), UNIT)
                )
                err["ldp"].append(range_queries.answer(q, ldp_grid.oue_grid(pts, UNIT, eps, 4, rng), UNIT))
                for key in err:
                    err[key][-1] = range_queries.mean_relative_error(err[key][-1], truth, n)
            print(
                f"{n:>7} {eps:>5} {np.mean(err['sldp']):>8.3f} {np.mean(err['privtree']):>9.3f} "
                f"{np.mean(err['ldp']):>9.3f}"
            )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10 repetitions, 3 epsilons")
    args = ap.parse_args()
    reps = 10 if args.quick else 60
    epsilons = [1, 4, 12] if args.quick else [0.5, 1, 2, 4, 8, 12]
    print(f"MSE of the mean of ||x||^2 over {reps} repetitions")
    print(f"{'N':>7} {'eps':>5} {'SLDP':>11} {'LDP':>11} {'central':>11} {'cells':>6}")
    for n in (2000, 16000, 32000, 64000):
        for eps in epsilons:
            err = {"sldp": [], "ldp": [], "cdp": []}
            cells = []
            for r in range(reps):
                rng = make_rng(1, "bench-sldp", n, eps, r)
                pts = data(n, rng)
                true = (pts**2).sum(axis=1).mean()
                part = run_protocol(
                    pts,
                    BOX,
                    eps / 2,
                    threshold=0,
                    max_depth=10,
                    delta=0.05,
                    rng=rng,
                    split_rule="per_child",
                    keep_reports=False,
                )
                cells.append(len(part.cells))
                err["sldp"].append((mean.sldp_mean(pts, part.user_cell, BOX, eps / 2, rng) - true) ** 2)
                err["ldp"].append((mean.ldp_mean(pts, BOX, eps, rng) - true) ** 2)
                err["cdp"].append((mean.central_mean(pts, BOX, eps, rng) - true) ** 2)
            print(
                f"{n:>7} {eps:>5} {np.mean(err['sldp']):>11.3g} {np.mean(err['ldp']):>11.3g} "
                f"{np.mean(err['cdp']):>11.3g} {np.mean(cells):>6.0f}"
            )
    range_table(reps=3 if args.quick else 10)
    pts = data(1_000_000, make_rng(1, "bench-sldp-speed"))
    t = time.perf_counter()
    part = run_protocol(
        pts,
        BOX,
        0.5,
        threshold=0,
        max_depth=10,
        delta=0.05,
        rng=make_rng(2, "speed"),
        split_rule="per_child",
        keep_reports=False,
    )
    print(
        f"\nprotocol, 10^6 users, depth 10: {time.perf_counter() - t:.2f} s, {len(part.cells)} cells, "
        f"{part.rounds['round'].max()} rounds"
    )


if __name__ == "__main__":
    main()
