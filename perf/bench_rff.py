"""Federated RFF KDE aggregate and the local-maxima attack on RFF surfaces, float64.

Compares, in one run on this machine, for N users on a P x P grid:
  * locpriv.rff.rff_sum        separable GEMM, inner dimension 2NB, B = 1 and 3
  * locpriv.kde.kde_sum        exact Gaussian KDE aggregate of the same N (reference)
  * naive cosine evaluation    eq. (7) cell by cell with np.cos on a user subsample,
                               scaled linearly to N
and the attack throughput: users per second of rff_surfaces + local_maxima_batch on a
100 x 100 grid in batches of users (scipy.ndimage.maximum_filter on the whole batch).

Run:  python perf/bench_rff.py [--quick]

Geolife utility study (docs/results/rff_geolife.md; not a speed test): Spearman of the RFF estimate
against the complete-data KDE of the same points, over all cells, populated cells, and cells whose
true density exceeds 1e-3 of its maximum, for a box, a number of points and a bandwidth rule:
      python perf/bench_rff.py --geolife ../shared/data/geolife_beijing/geolife_beijing_1min.csv.gz \
          --box central --points all --h knn --B 1,2,3,5,8
  (--h: knn = [RFF-KDE] §4.2.4 with k = 500 on the points used; knnF = F times it; a number = metres)
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from locpriv import kde
from locpriv.adversary.local_maxima import DEFAULT_BATCH, local_maxima_batch
from locpriv.domain import Domain, Grid
from locpriv.rff import RFFPolicy, answer_query, draw_users, rff_sum, rff_surfaces
from locpriv.seeding import rng
from timing import timed

H = 0.55  # the paper's synthetic bandwidth (§4.2.4)
BOX = Domain(-3.0, 3.0, -3.0, 3.0)
# Lemma 3 at l = 6, j = 2 admits h = 0.55 only for a risk above 0.485 (bound 0.562 at
# risk 0.5); the policy does not affect speed.
POLICY = RFFPolicy(max_features=50, inscribed_side=BOX.inscribed_square, risk=0.5)


def reports(n, B, r):
    pts = r.normal(size=(n, 2))
    return pts, answer_query(draw_users(n, B, H, r), pts, H, B, POLICY)


def naive_sum(omega, phase, g):
    """Eq. (7) summed over users with one cos per (user, feature, cell): the slow reference."""
    arg = omega[..., 0, None, None] * g[:, None] + omega[..., 1, None, None] * g[None, :] - phase[..., None, None]
    return np.cos(arg).sum(axis=(0, 1))


# lon/lat boxes of the Geolife study: the configs' whole Beijing box and two downtown boxes of the
# size [RFF-KDE] App. B.1 uses (5-19 km)
GEOLIFE_BOXES = {
    "beijing": [116.15, 116.60, 39.75, 40.10],  # ~38 x 39 km, 968,969 points
    "haidian": [116.28, 116.36, 39.95, 40.01],  # ~6.8 x 6.7 km, 408,884 points
    "central": [116.36, 116.46, 39.88, 39.95],
}  # ~8.5 x 7.8 km, 70,554 points


def geolife_study(path, box, points, hmode, Bs):
    from locpriv import api, metrics
    from locpriv.datasets.points import load_points

    pts, _, meta = load_points(path, lonlat_bbox=GEOLIFE_BOXES[box])
    xy = pts[["x", "y"]].to_numpy()
    if points != "all":
        xy = xy[rng(20261122, "rffexp", box, points).choice(len(xy), int(points), replace=False)]
    dom = Domain.from_list(meta["bbox"])
    grid = Grid.regular(dom, 100, 100)
    h_knn = kde.knn_bandwidth(xy, 500, rng(20261122, "rffexp", "knn", box, points))
    h = h_knn * float(hmode[3:] or 1) if hmode.startswith("knn") else float(hmode)
    truth = api.FedKDE(h=h).fit_estimate(xy, rng=rng(1, "t"), grid=grid)  # complete-data KDE
    counts, _, _ = np.histogram2d(
        xy[:, 0], xy[:, 1], bins=[100, 100], range=[[dom.xmin, dom.xmax], [dom.ymin, dom.ymax]]
    )
    masks = {"all": np.ones(grid.shape, bool), "populated": counts > 0, "truth_gt_1e-3max": truth > 1e-3 * truth.max()}
    print(
        json.dumps(
            {
                "box": box,
                "N": len(xy),
                "h_knn_m": round(h_knn, 1),
                "h_m": round(h, 1),
                "h_over_l": round(h / dom.inscribed_square, 4),
                "cell_fraction": {k: round(float(m.mean()), 3) for k, m in masks.items()},
            }
        )
    )
    for B in Bs:
        est = api.RFF(h=h, B=B).fit_estimate(xy, rng=rng(20261122, "rffexp", box, points, B), grid=grid)
        print(
            json.dumps(
                {"B": B, **{f"spearman_{k}": round(metrics.spearman(est[m], truth[m]), 3) for k, m in masks.items()}}
            )
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--geolife", metavar="PATH", help="run the Geolife utility study on this file instead")
    ap.add_argument("--box", default="central", choices=sorted(GEOLIFE_BOXES))
    ap.add_argument("--points", default="all", help="Geolife study: 'all' or how many points to sample")
    ap.add_argument("--h", default="knn", help="Geolife study: knn, knnF (F times knn) or metres")
    ap.add_argument("--B", default="1,2,3,5,8", help="Geolife study: features per user, comma-separated")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--grid", type=int, default=200)
    ap.add_argument("--naive-n", type=int, default=500)
    ap.add_argument("--attack-users", type=int, default=4096)
    ap.add_argument("--quick", action="store_true", help="N = 100,000 (ratios only)")
    args = ap.parse_args()
    if args.geolife:
        geolife_study(args.geolife, args.box, args.points, args.h, [int(b) for b in args.B.split(",")])
        return
    n = 100_000 if args.quick else args.n
    r = rng(0, "bench-rff")
    g = np.linspace(BOX.xmin, BOX.xmax, args.grid)

    pts = r.normal(size=(n, 2))
    t_kde, _exact = timed(lambda: kde.kde_sum(pts, g, g, H), repeat=2)
    print(f"N = {n:,}, grid {args.grid} x {args.grid}, float64, h = {H}")
    print(f"{'method':42s} {'seconds':>9s} {'/ exact KDE':>12s}")
    print(f"{'exact KDE  kde_sum (inner N)':42s} {t_kde:9.2f} {1:12.2f}")
    for B in (1, 3):
        _, (omega, phase) = reports(n, B, r)
        t_rff, _total = timed(lambda: rff_sum(omega, phase, g, g), repeat=2)
        sub = slice(0, args.naive_n)
        t_sub, ref = timed(lambda: naive_sum(omega[sub], phase[sub], g))
        err = np.abs(rff_sum(omega[sub], phase[sub], g, g) - ref).max()
        t_naive = t_sub * n / args.naive_n
        print(f"{f'RFF rff_sum B={B} (inner 2NB={2 * n * B:,})':42s} {t_rff:9.2f} {t_rff / t_kde:12.2f}")
        print(
            f"{f'naive cos B={B} (from {args.naive_n} users, scaled)':42s} {t_naive:9.1f} "
            f"{t_naive / t_kde:12.1f}   GEMM vs naive max |diff| {err:.1e}, "
            f"speed-up x{t_naive / t_rff:.0f}"
        )

    grid = Grid.regular(BOX, 100, 100)
    m = args.attack_users
    true_xy, (omega, phase) = reports(m, 1, r)
    batches = [slice(s, min(m, s + DEFAULT_BATCH)) for s in range(0, m, DEFAULT_BATCH)]
    surfs = {}

    def make():
        for sl in batches:
            surfs[sl.start] = rff_surfaces(omega[sl], phase[sl], grid.x, grid.y)

    def attack():
        return [local_maxima_batch(surfs[sl.start], grid, true_xy[sl]) for sl in batches]

    t_make, _ = timed(make)
    t_att, res = timed(attack)
    z = np.concatenate([x["Z"] for x in res]).mean()
    print(f"\nattack on {m} RFF users (B=1), 100 x 100 grid, batches of {DEFAULT_BATCH}:")
    print(
        f"  surfaces {m / t_make:10,.0f} users/s   attack {m / t_att:10,.0f} users/s   "
        f"both {m / (t_make + t_att):10,.0f} users/s   (target >= 5,000)   mean Z = {z:.3f}"
    )


if __name__ == "__main__":
    main()
