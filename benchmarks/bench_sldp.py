"""SLDP mean estimation of ||x||^2 (seed 001 §5.1) against LDP and central DP, and protocol speed.

Data N(0, 1.5^2 I) truncated to [-10, 10]^2, delta = 0.05, half of epsilon for the
partition (per-child rule of the authors' code, Q = 0, depth 10), half for the
estimate; MSE over repetitions.  Also times the protocol for 10^6 users.

Run:  python benchmarks/bench_sldp.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from locpriv.sldp import mean
from locpriv.sldp.protocol import run_protocol
from locpriv.seeding import rng as make_rng

BOX = (-10.0, 10.0, -10.0, 10.0)


def data(n, rng):
    pts = rng.normal(0, 1.5, size=(2 * n, 2))
    return pts[(np.abs(pts) <= 10).all(axis=1)][:n]


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
                true = (pts ** 2).sum(axis=1).mean()
                part = run_protocol(pts, BOX, eps / 2, threshold=0, max_depth=10, delta=0.05, rng=rng,
                                    split_rule="per_child", keep_reports=False)
                cells.append(len(part.cells))
                err["sldp"].append((mean.sldp_mean(pts, part.user_cell, BOX, eps / 2, rng) - true) ** 2)
                err["ldp"].append((mean.ldp_mean(pts, BOX, eps, rng) - true) ** 2)
                err["cdp"].append((mean.central_mean(pts, BOX, eps, rng) - true) ** 2)
            print(f"{n:>7} {eps:>5} {np.mean(err['sldp']):>11.3g} {np.mean(err['ldp']):>11.3g} "
                  f"{np.mean(err['cdp']):>11.3g} {np.mean(cells):>6.0f}")
    pts = data(1_000_000, make_rng(1, "bench-sldp-speed"))
    t = time.perf_counter()
    part = run_protocol(pts, BOX, 0.5, threshold=0, max_depth=10, delta=0.05, rng=make_rng(2, "speed"),
                        split_rule="per_child", keep_reports=False)
    print(f"\nprotocol, 10^6 users, depth 10: {time.perf_counter() - t:.2f} s, {len(part.cells)} cells, "
          f"{part.rounds['round'].max()} rounds")


if __name__ == "__main__":
    main()
