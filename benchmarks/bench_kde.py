"""Exact Gaussian KDE aggregate: N users on a P x Q grid, float64.

Compares, in one run on this machine:
  * locpriv.kde.kde_sum       tiled separable form, Kx.T @ Ky in user chunks
  * bare GEMM                 numpy matmul of the same shapes on ready-made
                              factors: the hardware ceiling for this formulation
  * scipy.stats.gaussian_kde  timed at a smaller N and scaled linearly in N
  * KDEpy FFTKDE (binned)     approximate; its max relative error vs exact is reported

Run:  python benchmarks/bench_kde.py [--n 1000000] [--grid 200] [--scipy-n 100000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from locpriv import kde
from locpriv.seeding import rng


def timed(fn, repeat=1):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--grid", type=int, default=200)
    ap.add_argument("--scipy-n", type=int, default=100_000)
    ap.add_argument("--h", type=float, default=0.3)
    args = ap.parse_args()

    r = rng(0, "bench-kde")
    pts = r.normal(size=(args.n, 2))
    g = np.linspace(-4, 4, args.grid)
    h = args.h

    t_ours, exact = timed(lambda: kde.kde_sum(pts, g, g, h), repeat=2)

    chunk = kde.DEFAULT_CHUNK
    kx = r.random((chunk, args.grid))
    ky = r.random((chunk, args.grid))
    n_chunks = int(np.ceil(args.n / chunk))

    def bare():
        acc = np.zeros((args.grid, args.grid))
        for _ in range(n_chunks):
            acc += kx.T @ ky
        return acc

    t_gemm, _ = timed(bare, repeat=2)

    from scipy.stats import gaussian_kde
    sub = pts[: args.scipy_n]
    X, Y = np.meshgrid(g, g, indexing="ij")
    # scipy's bandwidth is a factor times the data covariance; with unit covariance
    # data that factor is h itself (same kernel up to normalisation)
    skde = gaussian_kde(sub.T, bw_method=h / np.sqrt(np.cov(sub.T)[0, 0]))
    t_scipy_sub, _ = timed(lambda: skde(np.vstack([X.ravel(), Y.ravel()])))
    t_scipy = t_scipy_sub * args.n / args.scipy_n

    rows = [("locpriv kde_sum (tiled separable)", t_ours, ""),
            ("bare numpy GEMM, same shapes", t_gemm, ""),
            (f"scipy gaussian_kde (N={args.scipy_n}, scaled x{args.n // args.scipy_n})", t_scipy, "")]
    try:
        from KDEpy import FFTKDE
        grid_pts = np.stack([X.ravel(), Y.ravel()], axis=1)
        t_fft, fft_vals = timed(lambda: _fftkde(FFTKDE, pts, g, h))
        ref = exact / (args.n * kde.normaliser(h))
        mask = ref > 1e-3 * ref.max()
        err = np.max(np.abs(fft_vals[mask] - ref[mask]) / ref[mask])
        rows.append(("KDEpy FFTKDE (binned, approximate)", t_fft, f"max rel err {err:.2e} where f > 1e-3 max"))
        del grid_pts
    except ImportError:
        rows.append(("KDEpy FFTKDE", float("nan"), "not installed: pip install -e .[bench]"))

    print(f"N = {args.n:,} users, grid {args.grid}x{args.grid}, float64, h = {h}")
    print(f"{'method':58s} {'seconds':>9s} {'vs ours':>9s}  note")
    for name, t, note in rows:
        print(f"{name:58s} {t:9.3f} {t / t_ours:9.2f}  {note}")
    print(f"\nours / bare GEMM = {t_ours / t_gemm:.2f} (target <= 2)")
    print(f"scipy / ours     = {t_scipy / t_ours:.0f} (target >= 500)")


def _fftkde(FFTKDE, pts, g, h):
    """FFTKDE evaluated on its own equidistant grid that contains ours as a sub-grid."""
    step = g[1] - g[0]
    pad = int(np.ceil(6 * h / step)) + 1
    n = g.size + 2 * pad
    own = g[0] - pad * step + step * np.arange(n)
    grid = np.stack(np.meshgrid(own, own, indexing="ij"), -1).reshape(-1, 2)
    inside = (pts[:, 0] > own[0]) & (pts[:, 0] < own[-1]) & (pts[:, 1] > own[0]) & (pts[:, 1] < own[-1])
    vals = FFTKDE(kernel="gaussian", bw=h).fit(pts[inside]).evaluate(grid)
    vals = vals.reshape(n, n)[pad:pad + g.size, pad:pad + g.size]
    return vals * inside.mean()


if __name__ == "__main__":
    main()
