"""Location heatmaps under distributed DP ([DDP-Heatmaps] Table 1 setting): adaptive vs baselines.

NYT Manhattan population image (1024 x 1024, pixel = users there), ε = 1 per
user, 10^6 users per sub-query, SecAgg shards of 10 000, ideal aggregation.
Prints MSE, elementwise L1 and communication (integers per user summed over
sub-queries) for the adaptive algorithm, every baseline and the non-private
sampling floor (mean over repetitions); then the adaptive MSE with 20 % dropout
and noise over-provisioned for it (20 % + 4 binomial sd) relative to no dropout; then
the wall time of one adaptive run with 10^6 users and the functions dominating it.

``--combination``: instead, dp_heatmap with the authors' options (threshold σ(ε_t),
start at the root's children, collapse floor 5; locpriv's implementation of their options,
not their code: ``--authors`` runs that), with Eq. 6 as printed from the root, and with our
defaults, each with the map read from the last
sub-query, from every sub-query combined by least squares (``consistency``), and from
the combined counts rendered smoothly inside each cell (``render.smooth``; the others
spread each count uniformly over its cell), on Manhattan and on the study's synthetic
mixture (1024 x 1024, 5 x 10^7 users, 12 hot spots), at 10^5 and 10^6 users per
sub-query, ε = 1: mean MSE, L1, integers per user and seconds over the repetitions,
plus the MSE of the true counts on the same final partition, rendered both ways (no
count estimator on that partition does better with the same renderer); then the
paired comparison with the last-round map and with the authors' options (mean and
standard error over repetitions).  The per-repetition table is also written as CSV
with ``--out``; ``--summary CSV`` prints the comparison of a written table again.

``--authors DIR``: instead, the authors' own code ([DDP-Heatmaps] reference implementation,
run_experiment.py and its modules in DIR: a checkout outside this repository, imported from
that path, never copied) against locpriv's ``dp_heatmap`` on the same inputs (Manhattan and
the mixture above), ε = 1, 10^5 and 10^6 users per sub-query, with the options of their
notebook's "Main result" cell (c = 1/10, split threshold 2 sqrt(n/S) σ(ε_t), collapse at
max(5, τ/4), shards of 10,000, 10 levels).  Their code samples its users once for every
level; locpriv then runs the authors' options on *that* sample (fixed sampling), and its
defaults on the population (its own disjoint draws per sub-query).  Maps: theirs; locpriv's
last round and every round combined (least squares), each spread uniformly or smoothly.
All scored by ``locpriv.heatmaps.metrics``.  Their noise: ``mechanisms.GeometricNoise``
(TensorFlow, one Pólya pair per client); ``--authors-noise law`` (default at 10^6, where theirs
takes about an hour per level here) passes their ``noise_class`` argument a class drawing each
client batch's summed noise from the same law (``PolyaSum``), checked against theirs first.
``--summary-authors CSV`` prints the comparison of a written table again.

Run:  python perf/bench_heatmaps.py [--quick] [--data PATH] [--combination [--reps R] [--out CSV]]
      python perf/bench_heatmaps.py --summary CSV
      python perf/bench_heatmaps.py --authors DIR [--inputs manhattan mixture] [--users N ...] [--reps R] --out CSV
      python perf/bench_heatmaps.py --summary-authors CSV [CSV ...]
"""

from __future__ import annotations

import argparse
import cProfile
import math
import os
import pstats
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from locpriv.heatmaps import baselines, metrics, polya
from locpriv.heatmaps.adaptive import AdaptiveParams, render, run_adaptive
from locpriv.heatmaps.aggregation import SecAgg, UserPool
from locpriv.heatmaps.render import smooth
from locpriv.heatmaps.study import DEFAULTS, planned_dropout, synthetic_population
from locpriv.seeding import rng as make_rng

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = "../shared/data/nyt_manhattan/nyt_manhattan_crop_1024.npy"
EPSILON = 1.0
USERS = 1_000_000


def methods(secagg):
    """name -> function(image, rng) returning (heatmap, communication)."""

    def adaptive(image, rng):
        result = run_adaptive(image, AdaptiveParams(epsilon=EPSILON, users_per_round=USERS, secagg=secagg), rng)
        return result.heatmap(), result.communication

    def baseline(fn):
        return lambda image, rng: (lambda r: (r.heatmap, r.communication))(fn(image, USERS, EPSILON, rng, secagg))

    return {
        "non-private (sampling floor)": lambda image, rng: (lambda r: (r.heatmap, r.communication))(
            baselines.sampling_floor(image, USERS, rng)
        ),
        "adaptive (ours, Alg. 2)": adaptive,
        "flat one-hot": baseline(baselines.flat),
        "hierarchical one-hot": baseline(baselines.hierarchical),
        "count-min sketch": baseline(baselines.count_min),
        "adaptive grid (Qardaji)": baseline(baselines.adaptive_grid),
        "spatial decomposition (Cormode)": baseline(baselines.private_spatial_decomposition),
    }


def accuracy_table(image, reps, seed):
    print(f"{'method':34s} {'MSE':>10s} {'L1 (elementwise)':>17s} {'comm':>9s} {'time s':>7s}")
    for name, fn in methods(SecAgg()).items():
        mse, l1, start = [], [], time.perf_counter()
        for rep in range(reps):
            heatmap, comm = fn(image, make_rng(seed, "bench_heatmaps", name, rep))
            mse.append(metrics.mse(heatmap, image))
            l1.append(metrics.l1_elementwise(heatmap, image))
        elapsed = (time.perf_counter() - start) / reps
        print(f"{name:34s} {np.mean(mse):10.3e} {np.mean(l1):17.4f} {comm:9d} {elapsed:7.2f}")


def dropout_ratio(image, reps, seed):
    def mean_mse(secagg, tag):
        params = AdaptiveParams(epsilon=EPSILON, users_per_round=USERS, secagg=secagg)
        runs = [run_adaptive(image, params, make_rng(seed, "bench_heatmaps", tag, rep)) for rep in range(reps)]
        return np.mean([metrics.mse(r.heatmap(), image) for r in runs]), runs

    base, _ = mean_mse(SecAgg(), "dropout0")
    plan = planned_dropout(0.2, 10_000)
    dropped, runs = mean_mse(SecAgg(dropout_rate=0.2, planned_dropout=plan), "dropout20")
    achieved = np.concatenate([r.transcript["achieved_epsilon"].to_numpy() for r in runs])
    print(
        f"\ndropout 20% with noise provisioned for {plan:.3f} (the study's 4-sd margin; n_dp = "
        f"{math.ceil(10_000 * (1 - plan))} of 10000) vs no dropout, {reps} reps:"
    )
    print(f"  MSE {dropped:.3e} vs {base:.3e}: ratio {dropped / base:.3f}")
    planned = np.concatenate([r.transcript["epsilon"].to_numpy() for r in runs])
    print(
        f"  per-round achieved epsilon / planned: max {np.nanmax(achieved / planned):.4f}"
        f" ({int(np.isnan(achieved).sum())} of {len(achieved)} rounds too costly to evaluate:"
        " per-round epsilon < ~1e-3)"
    )


def timing(image, seed):
    params = AdaptiveParams(epsilon=EPSILON, users_per_round=USERS, secagg=SecAgg())
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    result = run_adaptive(image, params, make_rng(seed, "bench_heatmaps", "timing"))
    result.heatmap()
    profile.disable()
    elapsed = time.perf_counter() - start
    print(
        f"\n10^6 users per sub-query, {len(result.transcript)} sub-queries + rendering: {elapsed:.2f} s "
        f"(goal < 10 s), i.e. {elapsed / len(result.transcript):.2f} s per sub-query"
    )
    stats = pstats.Stats(profile).sort_stats("tottime")
    rows = sorted(((v[2], k) for k, v in stats.stats.items()), reverse=True)[:6]
    print("  dominated by (own time):")
    for own, (filename, line, func) in rows:
        print(f"    {own:6.2f} s  {func} ({Path(filename).name}:{line})")
    print(
        result.transcript[["round", "epsilon", "vector_length", "n_split", "n_collapsed", "threshold"]].to_string(
            index=False
        )
    )


# the authors' main-result options on our implementation, and our defaults
SETTINGS = {
    "authors' options": dict(threshold="authors", start="children", collapse_floor=5.0),
    "paper rule": dict(threshold="paper", start="root"),  # Eq. 6 as printed, root first
    "locpriv defaults": {},
}
MIXTURE = {**DEFAULTS["population"], "depth": 10, "users": 50_000_000}
SMOOTH = "least_squares + smooth"


def combination_table(inputs, reps, seed):
    rows = []
    print(f"{'input':10s} {'n':>8s} {'setting':17s} {'map':14s} {'MSE':>10s} {'L1':>8s} {'comm':>7s} {'time s':>7s}")
    for label, image in inputs.items():
        side = image.shape[0]
        x, y = np.divmod(np.arange(side * side), side)
        for n in (100_000, 1_000_000):
            for setting, options in SETTINGS.items():
                params = AdaptiveParams(epsilon=EPSILON, users_per_round=n, **options)
                for rep in range(reps):
                    start = time.perf_counter()
                    result = run_adaptive(image, params, make_rng(seed, "bench_heatmaps", label, n, setting, rep))
                    maps = {"last": (render(result.tree, result.rounds[-1].noisy), time.perf_counter() - start)}
                    start = time.perf_counter()
                    counts = result.combined().on(result.tree)
                    maps["least_squares"] = (render(result.tree, counts), maps["last"][1] + time.perf_counter() - start)
                    start = time.perf_counter()
                    maps[SMOOTH] = (smooth(result.tree, counts), maps["least_squares"][1] + time.perf_counter() - start)
                    # every estimator of counts on this partition is at least this far from the truth (per renderer)
                    truth = result.tree.histogram(x, y, image.ravel())
                    maps["true counts"] = (render(result.tree, truth), 0.0)
                    maps["true counts + smooth"] = (smooth(result.tree, truth), 0.0)
                    for name, (heatmap, seconds) in maps.items():
                        rows.append(
                            dict(
                                input=label,
                                users_per_round=n,
                                setting=setting,
                                map=name,
                                rep=rep,
                                mse=metrics.mse(heatmap, image),
                                l1=metrics.l1_elementwise(heatmap, image),
                                communication=result.communication,
                                seconds=seconds,
                            )
                        )
                for name, grp in (
                    pd.DataFrame(rows)
                    .query("input == @label and users_per_round == @n and setting == @setting")
                    .groupby("map", sort=False)
                ):
                    print(
                        f"{label:10s} {n:8d} {setting:17s} {name:14s} {grp.mse.mean():10.3e} {grp.l1.mean():8.4f}"
                        f" {grp.communication.mean():7.0f} {grp.seconds.mean():7.2f}",
                        flush=True,
                    )
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per input × n × setting: means, and paired MSE changes (%) against the last round and the authors' options."""
    keys = ["input", "users_per_round", "setting"]
    per_rep = table.pivot_table(index=[*keys, "rep"], columns="map", values=["mse", "l1"])
    mse = per_rep["mse"]
    authors = mse.xs("authors' options", level="setting")["last"].reindex(mse.index.droplevel("setting")).to_numpy()
    change = 100 * pd.DataFrame(
        {
            "least squares vs last": mse["least_squares"] / mse["last"] - 1,
            "smooth vs last": mse[SMOOTH] / mse["last"] - 1,
            "smooth vs authors": mse[SMOOTH] / authors - 1,
            "true counts vs last": mse["true counts"] / mse["last"] - 1,
            "true counts + smooth vs last": mse["true counts + smooth"] / mse["last"] - 1,
        }
    )
    means = per_rep.groupby(level=keys, sort=False).mean()
    grouped = change.groupby(level=keys, sort=False)
    by_setting = table.groupby(keys, sort=False)
    out = pd.concat(
        {
            "integers per user": by_setting.communication.mean(),
            **{
                f"{metric.upper()} {name}": means[metric][m]
                for metric in ("mse", "l1")
                for name, m in (("last", "last"), ("least squares", "least_squares"), ("smooth", SMOOTH))
            },
            **{f"{c} (%)": grouped[c].mean() for c in change},
            "smooth vs last ± s.e. (%)": grouped["smooth vs last"].sem(),
            "reps smooth better": (change["smooth vs last"] < 0).groupby(level=keys, sort=False).sum(),
            "seconds smooth": table[table["map"] == SMOOTH].groupby(keys, sort=False).seconds.mean(),
        },
        axis=1,
    )
    return out.reindex(table.drop_duplicates(keys).set_index(keys).index)


# ---- against the authors' own code (--authors DIR) ----
# their notebook's "Main result" cell: c = 1/10, threshold 2 sqrt(n/S) σ(ε_t), collapse max(5, τ/4)
AUTHORS_C = 0.1
SHARD = 10_000  # their secagg_round_size
AUTHORS = "authors' code"
AUTHORS_LAW = "authors' code, PolyaSum noise"
OPTIONS_ON_SAMPLE = "locpriv, authors' options"
LOCPRIV_DEFAULTS = "locpriv defaults"
THEIR_MAP = "their map"


class PolyaSum:
    """The law of the authors' ``GeometricNoise`` for all their run keeps of a client batch: its sum.

    Their class gives every row (client) of a batch Pólya(1/S, a) − Pólya(1/S, a) per entry,
    a = exp(−ε/Δ), as TensorFlow Poisson(Gamma) draws; their run only adds up the batch's rows
    (``round_vector.sum(axis=0)``; no quantisation in these runs).  A sum of r independent
    Pólya(1/S, a) is Pólya(r/S, a) (``polya.aggregate_noise``), so one draw of that law per batch, put
    on its first row, gives their sums the same distribution at a cost independent of r (theirs
    costs about an hour per level at 10^6 users here).  ``noise_check`` compares the two.
    """

    rng: np.random.Generator | None = None  # set for each run

    def __init__(self, num_clients, sensitivity, epsilon):
        self.num_clients, self.sensitivity, self.epsilon = num_clients, sensitivity, epsilon

    def apply_noise(self, batch):
        out = np.array(batch, dtype=float)  # (clients, entries): their round_vector
        out[0] += polya.aggregate_noise(
            batch.shape[0], batch.shape[1], self.epsilon, self.sensitivity, self.num_clients, self.rng
        )
        return out


def load_authors(directory: str) -> SimpleNamespace:
    """Their modules, imported from ``directory`` (they import each other as top-level modules)."""
    path = Path(directory).resolve()
    if not (path / "run_experiment.py").is_file():
        raise SystemExit(
            f"--authors {directory}: no run_experiment.py there; give the folder "
            "analytics/location_heatmaps of a checkout of the authors' code"
        )
    os.environ.setdefault("TQDM_DISABLE", "1")  # their per-user loops draw progress bars
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.path.insert(0, str(path))
    import importlib

    code = SimpleNamespace(
        **{name: importlib.import_module(name) for name in ("geo_utils", "mechanisms", "metrics", "run_experiment")}
    )
    code.tf = importlib.import_module("tensorflow")  # their mechanisms module needs it anyway

    def mse_report(test_image, true_image, top_k, total_size):
        # their per-level report, MSE only: the rest (an SVD for the L2 norm, Wasserstein, mutual
        # information) takes ~25 s a level here and feeds nothing back into the run
        return code.metrics.Metrics(
            mse=code.metrics.mt.mean_squared_error(
                code.metrics.normalize(test_image), code.metrics.normalize(true_image)
            )
        )

    code.metrics.get_metrics = mse_report
    build = code.geo_utils.build_from_sample

    def build_and_keep(samples, total_size):  # their sample, for locpriv to run on the same users
        code.sample = samples
        return build(samples, total_size)

    code.geo_utils.build_from_sample = build_and_keep
    return code


def user_records(image: np.ndarray) -> np.ndarray:
    """One (x, y) record per user, in the order and dtype of their ``geo_utils.convert_to_dataset``."""
    flat = image.ravel()
    x, y = np.divmod(np.repeat(np.arange(flat.size), flat), image.shape[1])
    records = np.empty(len(x), dtype=[("x", np.int16), ("y", np.int16)])
    records["x"], records["y"] = x, y
    return records


def check_records(code, image: np.ndarray) -> None:
    """``user_records`` equals their own (per-user Python loop) conversion on a 32 x 32 corner."""
    corner = np.ascontiguousarray(image[:32, :32])
    if not np.array_equal(user_records(corner), code.geo_utils.convert_to_dataset(corner, 32)):
        raise SystemExit("user_records differs from the authors' convert_to_dataset")


def noise_check(code, epsilons=(0.05, 0.3, 0.7, 1.0), width=2000, seed=0):
    """Their GeometricNoise and PolyaSum summed over one shard (S clients in batches of 100):
    variance / the discrete Laplace variance 2a/(1 − a)^2 (± 1 s.e.), over ``width`` entries."""
    code.tf.random.set_seed(seed)
    PolyaSum.rng = make_rng(seed, "bench_heatmaps", "noise_check")
    print(f"noise summed over a shard of {SHARD} clients, {width} entries: variance / 2a/(1-a)^2 (± s.e.)")
    for eps in epsilons:
        a = math.exp(-eps)
        line = f"  eps {eps:4}:"
        for name, noiser in (
            ("theirs (TF)", code.mechanisms.GeometricNoise(SHARD, 1, eps)),
            ("PolyaSum", PolyaSum(SHARD, 1, eps)),
        ):
            total = sum(noiser.apply_noise(np.zeros([100, width])).sum(axis=0) for _ in range(SHARD // 100))
            var, m4 = np.mean(total**2), np.mean(total**4)  # both laws have mean 0
            theory = 2 * a / (1 - a) ** 2
            line += f"  {name} {var / theory:.3f} ± {math.sqrt((m4 - var**2) / width) / theory:.3f}"
        print(line, flush=True)


def authors_run(code, image, records, n, noise, seed):
    """Their ``run_experiment`` with the notebook's main-result options: map, sample and cost."""
    np.random.seed(seed)  # their run draws its users (once, for every level) with np.random
    code.tf.random.set_seed(seed)  # and GeometricNoise's draws with TensorFlow
    PolyaSum.rng = make_rng(seed, "bench_heatmaps", "PolyaSum")
    mech = code.mechanisms
    start = time.perf_counter()
    levels = code.run_experiment.run_experiment(
        image,
        records,
        level_sample_size=n,
        secagg_round_size=SHARD,
        eps_func=lambda level, regions: mech.get_eps_from_two_std(AUTHORS_C * np.sqrt(SHARD / n) * n / regions),
        split_threshold_func=lambda level, regions, eps, left: 2 / np.sqrt(SHARD / n) * mech.get_std_from_eps(eps),
        collapse_func=lambda threshold: max(5, 1 / 4 * threshold),
        total_epsilon_budget=EPSILON * n,
        partial=100,
        max_levels=10,
        total_size=image.shape[0],
        output_flag=False,
        noise_class=mech.GeometricNoise if noise == "tf" else PolyaSum,
    )
    side = image.shape[0]
    sample = np.bincount(code.sample["x"].astype(np.int64) * side + code.sample["y"], minlength=side * side).reshape(
        side, side
    )
    return dict(
        heatmap=levels[-1].image,
        sample=sample,
        seconds=time.perf_counter() - start,
        communication=sum(len(level.tree_prefix_list) for level in levels),
        rounds=len(levels),
        epsilon=sum(level.eps for level in levels),
        their_mse=levels[-1].metric.mse,
        deepest=max(len(path.split("/")) for path in levels[-1].tree_prefix_list),
    )


def decomposition(result) -> dict[str, np.ndarray]:
    """The last round's or every round's (least squares) counts, spread uniformly or smoothly."""
    last, combined = result.rounds[-1].noisy, result.combined().on(result.tree)
    return {
        "last": render(result.tree, last),
        "least squares": render(result.tree, combined),
        "smooth": smooth(result.tree, last),
        SMOOTH: smooth(result.tree, combined),
    }


def authors_table(code, inputs, users, reps, seed, noise, csv=None):
    """Every run's maps scored, for the repetitions ``reps`` (each seeded by its own index, so a subset
    equals those repetitions of a full run).  With ``csv``, each repetition's rows are appended to that
    CSV as it ends (their code takes hours per 10^6-user repetition here: a stopped run keeps what it did)."""
    rows = []
    if csv:
        Path(csv).unlink(missing_ok=True)

    def add(label, n, rep, method, maps, cost, image):
        for name, heatmap in maps.items():
            rows.append(
                dict(
                    input=label,
                    users_per_round=n,
                    rep=rep,
                    method=method,
                    map=name,
                    mse=metrics.mse(heatmap, image),
                    l1=metrics.l1_elementwise(heatmap, image),
                    **cost,
                )
            )
            print(
                f"{label:10s} {n:8d} {rep:2d} {method:31s} {name:23s} {rows[-1]['mse']:10.4e} "
                f"{rows[-1]['l1']:7.4f} {cost['communication']:6d} {cost['rounds']:3d} {cost['seconds']:7.1f}",
                flush=True,
            )

    for label, image in inputs.items():
        records = user_records(image)
        for n in users:
            variants = {"tf": [AUTHORS], "law": [AUTHORS_LAW], "both": [AUTHORS, AUTHORS_LAW]}[
                noise if noise != "auto" else ("both" if n <= 100_000 else "law")
            ]
            for rep in reps:
                run_seed = int(make_rng(seed, "bench_heatmaps", "authors", label, n, rep).integers(2**31))
                samples = []
                for method in variants:
                    out = authors_run(code, image, records, n, "tf" if method == AUTHORS else "law", run_seed)
                    samples.append(out["sample"])
                    add(
                        label,
                        n,
                        rep,
                        method,
                        {THEIR_MAP: out["heatmap"]},
                        {k: out[k] for k in ("seconds", "communication", "rounds", "epsilon", "their_mse", "deepest")},
                        image,
                    )
                sample = samples[0]
                if not all(np.array_equal(sample, other) for other in samples):  # same seed: users drawn first
                    raise RuntimeError("the authors' runs of one repetition drew different users")
                for params, pool, method in (
                    (
                        AdaptiveParams(
                            epsilon=EPSILON,
                            users_per_round=n,
                            threshold="authors",
                            start="children",
                            collapse_floor=5.0,
                            calibration=AUTHORS_C,
                        ),
                        UserPool(sample, "fixed"),
                        OPTIONS_ON_SAMPLE,
                    ),
                    (AdaptiveParams(epsilon=EPSILON, users_per_round=n), UserPool(image), LOCPRIV_DEFAULTS),
                ):
                    start = time.perf_counter()
                    result = run_adaptive(
                        pool, params, make_rng(seed, "bench_heatmaps", "vs-authors", label, n, rep, method)
                    )
                    maps = decomposition(result) if method == OPTIONS_ON_SAMPLE else {SMOOTH: result.heatmap()}
                    add(
                        label,
                        n,
                        rep,
                        method,
                        maps,
                        dict(
                            seconds=time.perf_counter() - start,
                            communication=result.communication,
                            rounds=len(result.transcript),
                            epsilon=result.epsilon_spent,
                            their_mse=np.nan,
                            deepest=int(result.tree.levels.max()),
                        ),
                        image,
                    )
                if csv:
                    done = pd.DataFrame(rows)
                    done[(done["input"] == label) & (done["users_per_round"] == n) & (done["rep"] == rep)].to_csv(
                        csv, mode="a", header=not Path(csv).exists(), index=False, float_format="%.6g"
                    )
    return pd.DataFrame(rows)


def authors_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per input × n × method × map: means, and the paired change against the authors' map (same rep).

    The reference is their code with its own noise where it ran (10^5), else with PolyaSum."""
    keys = ["input", "users_per_round"]
    reference = (
        table[table["method"].isin([AUTHORS, AUTHORS_LAW])]
        .assign(order=lambda t: (t["method"] != AUTHORS).astype(int))
        .sort_values("order")
        .drop_duplicates([*keys, "rep"])
        .set_index([*keys, "rep"])
    )
    paired = table.merge(
        reference[["mse", "l1", "method"]].reset_index(), how="left", on=[*keys, "rep"], suffixes=("", "_ref")
    )
    paired["mse_change"] = 100 * (paired["mse"] / paired["mse_ref"] - 1)
    paired["l1_change"] = 100 * (paired["l1"] / paired["l1_ref"] - 1)
    groups = paired.groupby([*keys, "method", "map"], sort=False)
    out = pd.DataFrame(
        {
            "reps": groups["rep"].count(),
            "integers per user": groups["communication"].mean().round(0),
            "rounds": groups["rounds"].mean(),
            "ε spent": groups["epsilon"].mean(),
            "MSE": groups["mse"].mean(),
            "L1": groups["l1"].mean(),
            "MSE vs authors (%)": groups["mse_change"].mean(),
            "± s.e. (%)": groups["mse_change"].sem(),
            "reps lower": groups["mse_change"].apply(lambda c: f"{int((c < 0).sum())} / {len(c)}"),
            "L1 vs authors (%)": groups["l1_change"].mean(),
            "finest level": groups["deepest"].mean(),
            "reference": groups["method_ref"].first(),
        }
    )
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition instead of three")
    parser.add_argument("--data", default=DEFAULT_DATA, help="population .npy (relative to the project root)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--combination", action="store_true", help="authors' options vs defaults, last vs combined")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 1 with --quick, else 3)")
    parser.add_argument(
        "--out", default=None, help="--combination, --authors: write the per-repetition table here (CSV)"
    )
    parser.add_argument("--summary", default=None, help="print the comparison of a --combination CSV and exit")
    parser.add_argument(
        "--authors",
        default=None,
        metavar="DIR",
        help="run the authors' code from DIR (their analytics/location_heatmaps folder) side by side",
    )
    parser.add_argument("--inputs", nargs="+", default=["manhattan", "mixture"], choices=["manhattan", "mixture"])
    parser.add_argument("--users", nargs="+", type=int, default=[100_000, 1_000_000], help="--authors: n per sub-query")
    parser.add_argument(
        "--authors-noise",
        default="auto",
        choices=["auto", "tf", "law", "both"],
        help="their GeometricNoise (tf), PolyaSum (law), both; auto: both up to 10^5 users, else law",
    )
    parser.add_argument(
        "--rep",
        type=int,
        default=None,
        help="--authors: run only this repetition (the same as that repetition of a full run)",
    )
    parser.add_argument(
        "--noise-check",
        action="store_true",
        help="--authors: compare their GeometricNoise with PolyaSum over one shard, then exit",
    )
    parser.add_argument(
        "--summary-authors",
        nargs="+",
        default=None,
        metavar="CSV",
        help="print the comparison of --authors CSVs (concatenated) and exit",
    )
    args = parser.parse_args()
    if args.summary:
        print(summary(pd.read_csv(args.summary)).to_string(float_format="%.4g"))
        return
    if args.summary_authors:
        table = pd.concat([pd.read_csv(path) for path in args.summary_authors], ignore_index=True)
        print(authors_summary(table).to_string(float_format="%.4g"))
        return
    path = Path(args.data) if Path(args.data).is_absolute() else ROOT / args.data
    image = np.load(path)
    reps = args.reps or (1 if args.quick else 3)
    if args.authors:
        code = load_authors(args.authors)
        check_records(code, image.astype(np.int64))
        print(f"load average {os.getloadavg()[0]:.1f}; eps = {EPSILON}, shard {SHARD}; {reps} rep(s)\n", flush=True)
        if args.noise_check:
            noise_check(code, seed=args.seed)
            return
        inputs = {"manhattan": image.astype(np.int64), "mixture": synthetic_population(MIXTURE, args.seed)}
        table = authors_table(
            code,
            {k: inputs[k] for k in args.inputs},
            args.users,
            range(reps) if args.rep is None else [args.rep],
            args.seed,
            args.authors_noise,
            args.out,
        )
        print(f"\nload average {os.getloadavg()[0]:.1f}\n" + authors_summary(table).to_string(float_format="%.4g"))
        return
    if args.combination:
        inputs = {"manhattan": image.astype(np.int64), "mixture": synthetic_population(MIXTURE, args.seed)}
        print(f"eps = {EPSILON}, shard 10,000, disjoint samples per sub-query; {reps} rep(s)\n")
        table = combination_table(inputs, reps, args.seed)
        print("\n" + summary(table).to_string(float_format="%.4g"))
        if args.out:
            table.to_csv(args.out, index=False, float_format="%.6g")
        return
    print(
        f"{path.name}: {image.shape[0]}x{image.shape[1]}, {int(image.sum()):,} users; eps = {EPSILON}, "
        f"{USERS:,} users per sub-query, shard 10,000; mean of {reps} rep(s)\n"
    )
    accuracy_table(image, reps, args.seed)
    dropout_ratio(image, reps, args.seed)
    timing(image, args.seed)


if __name__ == "__main__":
    main()
