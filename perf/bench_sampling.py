"""Exact discrete Laplace (and Gaussian) sampling against numpy's float Laplace, the previous
sampler and OpenDP, all in one run (issue 32 item 1, issue 28 item 4).

Per scale σ in {2, 100, 10^4}: CPU seconds per 10^6 draws of

* ``numpy``     – ``rng.laplace(0, σ, n)``: the float sampler (not DP-safe; the speed target);
* ``fast``      – ``locpriv.dp.sampling.discrete_laplace`` (exact, the default mode);
* ``safe``      – the same with ``timing_safe=True`` (fixed work per draw, law within tv of exact);
* ``before``    – the sampler of ``--baseline-rev`` (default ``main``), loaded from git into a
  temporary package: the before/after comparison of the same run;
* ``opendp``    – OpenDP's exact ``make_laplace`` on a vector of integers (an optional extra of
  the benchmark only: ``pip install opendp``; the column is skipped if it is absent).  It is
  timed on ``--opendp-draws`` draws (default 10^5) and scaled to 10^6, with the conversion of
  the Python list it needs included, as a user of its Python API pays it.

and the ratios fast / numpy (target <= 3), safe / numpy, before / fast and opendp / fast.
Then per-element scales (1,000 distinct scales, as the radio map's per-user Gaussian noise),
the discrete Gaussian (which draws discrete Laplace proposals), and the two per-user hot paths
of the workflow, before and after: ``laplace_ldp``'s grid release (``dp.grid.release_bounded``,
2 coordinates in [0, 1], ε = 1) and ``geoind``'s planar Laplace (``planar_laplace.perturb``,
ε = 1), per 10^6 users.

Then the cost of ``timing: fixed_work`` per client sampler, batch vs fixed work in one run: CPU
seconds per 10^6 users of ``laplace_ldp``'s release, ``geoind``'s perturb, one ``sldp`` round
(4 indicators, ε = 1) and a heatmap client's Pólya share (one entry; r = 1/100, ε = 1 and 0.1),
and their ratio fixed / batch.

Last, the timing channel of one user at a time (issue 28 item 4): ``--single`` draws of one
value each at σ = 1024 (laplace_ldp on [0, 1], ε = 1: 1024 grid steps / ε), per call the wall
time in ns; printed: Spearman's rank correlation of the time with |noise| and the mean time of
the calls whose |noise| is in the top decile over that of the bottom one (medians:
robust to load spikes), and the same for a heatmap client's Pólya share, batch and fixed work.
A correlation is what a
response-time observer exploits; numbers on a loaded machine are noisy, so read the
correlation, not the microseconds.

CPU times are ``time.process_time`` (best of ``--repeat``), so other jobs' load inflates them
less than wall time; the load average is printed at start and end.

Run:  python perf/bench_sampling.py [--draws N] [--repeat R] [--baseline-rev REV|none] [--single N]
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

from locpriv import planar_laplace
from locpriv.dp import gaussian, grid, sampling
from locpriv.heatmaps import polya
from locpriv.sldp import protocol as sldp_protocol
from timing import timed

SCALES = (2.0, 100.0, 1e4)
ROOT = Path(__file__).resolve().parent.parent


def _git_show(rev: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def load_baseline(rev: str) -> dict:
    """lib/locpriv/dp at git revision ``rev`` as package ``baseline_dp`` (and that revision's
    planar_laplace on top of it): {"sampling", "gaussian", "grid", "planar"} modules."""
    folder = Path(tempfile.mkdtemp(prefix="bench_sampling_"))
    package = folder / "baseline_dp"
    package.mkdir()
    listing = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{rev}:lib/locpriv/dp"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    for name in listing:
        if name.endswith(".py"):
            (package / name).write_text(_git_show(rev, f"lib/locpriv/dp/{name}"))
    planar = _git_show(rev, "lib/locpriv/planar_laplace.py").replace("from .dp", "from baseline_dp")
    (folder / "baseline_planar.py").write_text(planar)
    sys.path.insert(0, str(folder))
    return {
        name: importlib.import_module(module)
        for name, module in (
            ("sampling", "baseline_dp.sampling"),
            ("gaussian", "baseline_dp.gaussian"),
            ("grid", "baseline_dp.grid"),
            ("planar", "baseline_planar"),
        )
    }


def opendp_sampler():
    """A function (σ, n) -> n OpenDP exact discrete Laplace draws, or None if opendp is absent."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")

    def draw(scale, n):
        meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=scale)
        return np.asarray(meas([0] * n))

    return draw


def per_million(fn, n, repeat):
    seconds, _ = timed(fn, repeat, clock=time.process_time)
    return seconds * 1e6 / n


def throughput(args, before, opendp):
    n = args.draws
    rng = np.random.default_rng(0)
    print(f"\nCPU seconds per 10^6 draws (best of {args.repeat}, {n:,} draws per call)")
    header = (
        f"{'scale':>8} {'numpy':>8} {'fast':>8} {'safe':>8} {'before':>8} {'opendp':>8}"
        f" | {'fast/np':>8} {'safe/np':>8} {'before/fast':>11} {'opendp/fast':>11}"
    )
    print(header)
    for scale in SCALES:
        sampling.discrete_laplace(scale, rng, size=1000)  # constants cached, as in a run
        row = {
            "numpy": per_million(lambda: rng.laplace(0.0, scale, n), n, args.repeat),
            "fast": per_million(lambda: sampling.discrete_laplace(scale, rng, size=n), n, args.repeat),
            "safe": per_million(
                lambda: sampling.discrete_laplace(scale, rng, size=n, timing_safe=True), n, args.repeat
            ),
        }
        row["before"] = (
            per_million(lambda: before["sampling"].discrete_laplace(scale, rng, size=n), n, args.repeat)
            if before
            else float("nan")
        )
        row["opendp"] = (
            per_million(lambda: opendp(scale, args.opendp_draws), args.opendp_draws, 1) if opendp else float("nan")
        )
        print(
            f"{scale:>8g} "
            + " ".join(f"{row[k]:>8.4f}" for k in ("numpy", "fast", "safe", "before", "opendp"))
            + f" | {row['fast'] / row['numpy']:>8.2f} {row['safe'] / row['numpy']:>8.2f}"
            f" {row['before'] / row['fast']:>11.1f} {row['opendp'] / row['fast']:>11.1f}"
        )
    if not opendp:
        print("(opendp column skipped: `pip install opendp` to include it; the library never imports it)")


def mixed(args, before):
    n = args.draws
    rng = np.random.default_rng(1)
    scales = np.repeat(np.geomspace(2.0, 1e4, 1000), n // 1000)
    users = np.random.default_rng(2).uniform(0.0, 1.0, (n // 2, 2))
    print(
        "\nper-element scales (1,000 distinct, geometric 2 .. 10^4), the discrete Gaussian, and the"
        " per-user hot paths: CPU seconds per 10^6 draws (users for the last two); the first"
        " call of the 1,000-scale rows (constants not yet cached) in brackets"
    )
    print(f"{'case':>34} {'after':>8} {'before':>8} {'before/after':>12}")
    cases = [("laplace, 1,000 scales", "sampling", lambda m: m.discrete_laplace(scales, rng), n)]
    for sigma in SCALES:
        cases.append(
            (f"gaussian sigma={sigma:g}", "gaussian", lambda m, s=sigma: m.discrete_gaussian(np.full(n, s), rng), n)
        )
    cases.append(("gaussian, 1,000 sigmas", "gaussian", lambda m: m.discrete_gaussian(scales, rng), n))
    cases.append(
        (
            "laplace_ldp release, eps=1",
            "grid",
            lambda m: m.release_bounded(users, [0.0, 0.0], [1.0, 1.0], 0.5, rng),
            len(users),
        )
    )
    cases.append(("geoind planar perturb, eps=1", "planar", lambda m: m.perturb(users, 1.0, rng), len(users)))
    after_modules = {"sampling": sampling, "gaussian": gaussian, "grid": grid, "planar": planar_laplace}
    for name, module, fn, count in cases:
        cold = ""
        if "1,000" in name:
            sampling.clear_law_cache()
            first, _ = timed(lambda: fn(after_modules[module]), 1, clock=time.process_time)
            cold = f"  [{first * 1e6 / count:.3f}]"
        after = per_million(lambda: fn(after_modules[module]), count, args.repeat)
        was = per_million(lambda: fn(before[module]), count, args.repeat) if before else float("nan")
        print(f"{name:>34} {after:>8.4f} {was:>8.4f} {was / after:>12.1f}{cold}")


def fixed_work_cost(args):
    n = args.draws // 2
    users = np.random.default_rng(2).uniform(0.0, 1.0, (n, 2))
    child = np.random.default_rng(3).integers(0, 4, n)
    print("\ntiming: fixed_work against batch, CPU seconds per 10^6 users (one call for all of them)")
    print(f"{'client sampler':>34} {'batch':>8} {'fixed':>8} {'fixed/batch':>12}")
    cases = [
        (
            "laplace_ldp release, eps=1",
            lambda rng, t: grid.release_bounded(users, [0, 0], [1, 1], 0.5, rng, timing_safe=t),
        ),
        ("geoind planar perturb, eps=1", lambda rng, t: planar_laplace.perturb(users, 1.0, rng, timing_safe=t)),
        (
            "sldp round (4 indicators), eps=1",
            lambda rng, t: sldp_protocol.child_reports(child, 1.0, rng, timing_safe=t),
        ),
    ]
    for eps in (1.0, 0.1):
        cases.append(
            (
                f"heatmap Polya share, eps={eps:g}",
                lambda rng, t, e=eps: polya.client_shares(n, 1, e, 1.0, 100, rng, timing_safe=t),
            )
        )
    for name, fn in cases:
        rng = np.random.default_rng(4)
        batch, fixed = (per_million(lambda t=t: fn(rng, t), n, args.repeat) for t in (False, True))
        print(f"{name:>34} {batch:>8.4f} {fixed:>8.4f} {fixed / batch:>12.2f}")


def timing_channel(args, before):
    scale, calls = 1024.0, args.single
    print(f"\none user at a time: {calls:,} single draws at scale {scale:g}; wall ns per call vs |noise|")
    print(f"{'sampler':>10} {'median ns':>10} {'spearman':>9} {'p-value':>9} {'top/bottom decile median':>23}")
    modes = [
        ("fast", lambda rng: sampling.discrete_laplace(scale, rng, size=1)),
        ("safe", lambda rng: sampling.discrete_laplace(scale, rng, size=1, timing_safe=True)),
    ]
    if before:
        modes.append(("before", lambda rng: before["sampling"].discrete_laplace(scale, rng, size=1)))
    # a heatmap client's Pólya share (n_dp = 1, eps = 1): numpy's Gamma–Poisson against the fixed-work inversion
    modes += [
        (f"polya {name}", lambda rng, t=t: polya.client_shares(1, 1, 1.0, 1.0, 1, rng, timing_safe=t)[0])
        for name, t in (("batch", False), ("safe", True))
    ]
    for name, draw in modes:
        rng = np.random.default_rng(7)
        for _ in range(200):  # warm caches and constants
            draw(rng)
        noise, ns = np.empty(calls), np.empty(calls)
        for i in range(calls):
            t0 = time.perf_counter_ns()
            noise[i] = abs(int(draw(rng)[0]))
            ns[i] = time.perf_counter_ns() - t0
        rho, p = stats.spearmanr(noise, ns)
        low, high = np.quantile(noise, [0.1, 0.9])
        ratio = np.median(ns[noise >= high]) / np.median(ns[noise <= low])
        print(f"{name:>10} {np.median(ns):>10.0f} {rho:>9.3f} {p:>9.1e} {ratio:>23.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--opendp-draws", type=int, default=100_000)
    parser.add_argument("--baseline-rev", default="main", help="git revision of the 'before' sampler, or none")
    parser.add_argument("--single", type=int, default=5000, help="single draws in the timing-channel part (0: skip)")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    before = None
    if args.baseline_rev != "none":
        before = load_baseline(args.baseline_rev)
        rev = subprocess.run(
            ["git", "rev-parse", "--short", args.baseline_rev], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        print(f"before = lib/locpriv/dp at {args.baseline_rev} ({rev})")
    throughput(args, before, opendp_sampler())
    mixed(args, before)
    fixed_work_cost(args)
    if args.single:
        timing_channel(args, before)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
