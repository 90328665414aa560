"""[Deconv-LDP] findings and the cost of the deconvoluting 2-D KDE, measured in one run.

1. 2-D deconvoluting Gaussian KDE of N Laplace-LDP reports on a P x P grid (the
   separable GEMM of locpriv.kde.kde_sum with the adjusted kernel) next to the
   exact KDE of the same N points: time and ratio.
2. 1-D density of the paper's Gaussian mixture under epsilon-LDP, n in
   {1e3, 1e4, 1e5}: peak and ISE against the true density for the noiseless,
   naive and deconvoluting KDE (Gaussian kernel, normal-reference bandwidths,
   mean over reps): naive is flatter (lower peak, higher ISE), deconvolution
   removes the bias at the cost of variance, and its gap to noiseless shrinks
   with n.
3. LendingClub (eps = 5: kernel vs linear test MSE; paper 5.70 vs 7.11) and
   Adult (eps = 5: kernel vs logistic test log-likelihood; paper -0.51 vs -0.53),
   through the study's own stages, mean over reps.

Run:  python perf/bench_deconv.py [--quick] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from locpriv import kde, laplace_ldp
from locpriv.deconv import data, estimators, study
from locpriv.seeding import rng as make_rng


def kde_timing(n: int, grid: int) -> None:
    r = make_rng(0, "bench-deconv-2d")
    box = np.array([[-4.0, 4.0], [-4.0, 4.0]])
    pts = r.normal(size=(n, 2)).clip(-4, 4)
    eps = 16.0
    reports = laplace_ldp.randomize(pts, box, eps, r)
    b = laplace_ldp.scales(box, eps)
    g = np.linspace(-4, 4, grid)
    h = 0.5
    t0 = time.perf_counter()
    kde.kde_sum(pts, g, g, h)
    t_exact = time.perf_counter() - t0
    t0 = time.perf_counter()
    kde.kde_sum(reports, g, g, h, laplace_b=tuple(b))
    t_deconv = time.perf_counter() - t0
    print(f"## 2-D KDE, N = {n:,}, {grid}x{grid} grid (separable GEMM, chunks of {kde.DEFAULT_CHUNK})")
    print(f"exact KDE of the true points     {t_exact:7.2f} s")
    print(f"deconvoluting KDE of the reports {t_deconv:7.2f} s   ratio {t_deconv / t_exact:.2f}x exact\n")


def mixture_pdf(x: np.ndarray) -> np.ndarray:
    comp = [(1 / 3, stats.norm(-1, 1)), (2 / 3, stats.norm(1.5, np.sqrt(0.5)))]
    mass = sum(w * (d.cdf(3) - d.cdf(-3)) for w, d in comp)
    return sum(w * d.pdf(x) for w, d in comp) / mass


def density_table(ns: list[int], eps: float, reps: int) -> None:
    grid = np.linspace(-3, 3, 241)
    step = grid[1] - grid[0]
    truth = mixture_pdf(grid)
    b = float(laplace_ldp.scales(np.array([[-3.0, 3.0]]), eps)[0])
    rows = []
    for n in ns:
        for rep in range(reps):
            r = make_rng(0, "bench-deconv-1d", n, rep)
            x = data.sample_x("mixture", n, r)
            z = laplace_ldp.randomize(x, np.array([[-3.0, 3.0]]), eps, r)
            for name, pts, noise in (("noiseless", x, 0.0), ("naive", z, 0.0), ("deconv", z, b)):
                h = estimators.normal_reference_bandwidth(pts, noise)
                est = estimators.density(grid, pts, h, noise, "gaussian")
                rows.append(
                    {
                        "n": n,
                        "estimator": name,
                        "h": h,
                        "peak": est.max(),
                        "ise": float(((est - truth) ** 2).sum() * step),
                    }
                )
    table = pd.DataFrame(rows).groupby(["n", "estimator"], sort=False).mean().reset_index()
    print(
        f"## 1-D density, Gaussian mixture on [-3, 3], eps = {eps:g} (b = {b:.2f}), mean of {reps} reps; "
        f"true peak {truth.max():.3f}"
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print()


def real_data(root: Path, reps: int, eps: float) -> None:
    datasets = {
        "lendingclub": {"source": "lendingclub", "path": str(root / "lendingclub_loan_data/loan_data.csv")},
        "adult": {"source": "adult", "path": str(root / "uci_adult")},
    }
    datasets = {k: v for k, v in datasets.items() if Path(v["path"]).exists()}
    if not datasets:
        print(f"## real data: none found under {root}\n")
        return
    cfg = study.validate_config({"datasets": datasets, "epsilon": [eps]})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        p = {k: f"{tmp}/{k}.parquet" for k in ("train", "test", "reports", "metrics", "curves")}
        for name, ds in cfg["datasets"].items():
            for rep in range(reps):
                study.split_stage(
                    dataset=name, n="all", rep=rep, ds=ds, seed=1, out_train=p["train"], out_test=p["test"]
                )
                for e in ("inf", eps):
                    run = {"dataset": name, "n": "all", "epsilon": e, "rep": rep}
                    t0 = time.perf_counter()
                    study.randomize_stage(run=run, ds=ds, seed=1, train_path=p["train"], out=p["reports"])
                    study.fit_stage(
                        run=run,
                        cfg=cfg,
                        seed=1,
                        reports_path=p["reports"],
                        train_path=p["train"],
                        test_path=p["test"],
                        out_metrics=p["metrics"],
                        out_curves=p["curves"],
                    )
                    m = pd.read_parquet(p["metrics"])
                    m = m[m["metric"].isin(["mse", "loglik", "bandwidth"]) & ~m["method"].str.startswith("density")]
                    rows += [
                        {
                            "dataset": name,
                            "epsilon": str(e),
                            "method": r.method,
                            "metric": r.metric,
                            "value": r.value,
                            "seconds": time.perf_counter() - t0,
                        }
                        for r in m.itertuples()
                    ]
    table = pd.DataFrame(rows).groupby(["dataset", "epsilon", "metric", "method"])[["value", "seconds"]].mean()
    print(
        f"## real data, test set at true x, mean of {reps} reps (paper at eps = 5: LendingClub MSE kernel "
        "5.70 vs linear 7.11; Adult log-lik kernel -0.51 vs logistic -0.53)"
    )
    print(table.reset_index().to_string(index=False, float_format=lambda v: f"{v:.4f}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 1e5 for the 2-D timing, fewer reps")
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared/data")
    args = ap.parse_args()
    kde_timing(100_000 if args.quick else 1_000_000, 200)
    density_table([1000, 10_000, 100_000], eps=2.0, reps=3 if args.quick else 10)
    real_data(args.data, reps=1 if args.quick else 3, eps=5.0)


if __name__ == "__main__":
    main()
