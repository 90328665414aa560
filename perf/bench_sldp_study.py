"""Where the [SLDP] study's CPU goes, and the bound it puts on `sldp.yaml`'s run time (issue 32.3).

Part 1 times the classification study's work per repetition (CPU seconds, one process, the
config's settings from ``workflow/configs/sldp.yaml``): for each mechanism the privatised 70 %
training features (the SLDP protocol included), then each classifier's fit and predict and the
F1 scores, the calls ``locpriv.sldp.classify.f1_scores`` makes; for the k study the
SLDP-Quantization features and one random forest per k.  The split here is the benchmark's own
(same sizes as the study's), so it measures the same work, not the study's numbers.

Part 2 (``--run DIR``, a finished ``sldp.yaml`` run's working directory) sums the run's
``benchmark:`` records per stage (jobs, CPU, wall) and applies part 1's random-forest share to
the classification jobs: the random forests' fits are work that identical result bytes cannot
skip (the data differ in every repetition, mechanism and epsilon, and the hyper-parameters are
the paper's), so the run's CPU divided by it bounds any result-preserving speed-up, and half of
it bounds the wall time on 2 cores.

Run:  python perf/bench_sldp_study.py [--reps 4] [--epsilon 0.5 1.0] [--run DIR] [--housing PATH]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from locpriv.seeding import rng as make_rng
from locpriv.sldp import classify, study

ROOT = Path(__file__).resolve().parents[1]


class Clock:
    """Summed CPU seconds per key."""

    def __init__(self):
        self.total = defaultdict(float)

    def __call__(self, key, fn, *args, **kwargs):
        t0 = time.process_time()
        out = fn(*args, **kwargs)
        self.total[key] += time.process_time() - t0
        return out


def repetition(X, y, epsilon, cfg, rng, clock, k_values):
    """One repetition's classification work at ``epsilon`` (and the k study's if ``k_values``)."""
    from sklearn.metrics import f1_score, precision_score, recall_score

    order = rng.permutation(len(X))
    train, test = order[: int(round(0.7 * len(X)))], order[int(round(0.7 * len(X))) :]
    for mechanism in cfg["classify"]["mechanisms"]:
        X_train = clock("privatise (SLDP protocol, noise)", classify.privatise, mechanism, X[train], epsilon, cfg, rng)
        for name, model in classify.classifiers(int(rng.integers(2**31))).items():
            clock(f"{name} fit", model.fit, X_train, y[train])
            pred = clock(f"{name} predict", model.predict, X[test])
            clock("scores", f1_score, y[test], pred)
    for k in k_values:
        X_train = clock(
            "privatise (SLDP protocol, noise)",
            classify.privatise,
            "sldp_quantization",
            X[train],
            epsilon,
            {**cfg, "threshold": float(k)},
            rng,
        )
        model = classify.classifiers(int(rng.integers(2**31)))["random_forest"]
        clock("random_forest fit", model.fit, X_train, y[train])
        pred = clock("random_forest predict", model.predict, X[test])
        clock("scores", precision_score, y[test], pred)
        clock("scores", recall_score, y[test], pred)


def classification_table(cfg, X, y, epsilons, reps):
    """CPU seconds per repetition by part, for each epsilon; returns {epsilon: (total, rf fit)}."""
    out = {}
    for eps in epsilons:
        k_values = cfg["classify"]["k"] if eps == cfg["classify"]["k_epsilon"] else []
        repetition(X, y, eps, cfg, make_rng(0, "bench-warm", eps), Clock(), k_values)  # margin cache, imports
        clock = Clock()
        for rep in range(reps):
            repetition(X, y, eps, cfg, make_rng(1, "bench-sldp-study", eps, rep), clock, k_values)
        total = sum(clock.total.values())
        print(f"\nclassification, epsilon = {eps:g}{' (with the k study)' if k_values else ''}: CPU s per repetition")
        for key, sec in sorted(clock.total.items(), key=lambda kv: -kv[1]):
            print(f"  {key:34s} {sec / reps:7.3f}  {sec / total:5.1%}")
        print(f"  {'total':34s} {total / reps:7.3f}")
        out[eps] = (total / reps, clock.total["random_forest fit"] / reps)
    return out


def run_records(run_dir: Path) -> pd.DataFrame:
    """Per stage of a finished run: jobs, summed CPU and wall seconds of its ``benchmark:`` records."""
    rows = []
    for tsv in (run_dir / "benchmarks").rglob("*.tsv"):
        rec = pd.read_csv(tsv, sep="\t").iloc[0]
        parts = tsv.relative_to(run_dir / "benchmarks").parts
        task = next((p.split("~")[1] for p in parts if p.startswith("task~")), "")
        rows.append({"stage": f"{tsv.stem}:{task}" if task else tsv.stem, "cpu": rec["cpu_time"], "wall": rec["s"]})
    table = pd.DataFrame(rows).groupby("stage").agg(jobs=("cpu", "size"), cpu=("cpu", "sum"), wall=("wall", "sum"))
    return table.sort_values("cpu", ascending=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=4, help="timed repetitions per epsilon (after one warm-up)")
    ap.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0], help="classification epsilons timed")
    ap.add_argument("--run", type=Path, help="a finished sldp.yaml run's working directory (its benchmarks/)")
    ap.add_argument("--housing", help="California housing CSV (default: the config's path from the working dir)")
    args = ap.parse_args()

    config = yaml.safe_load((ROOT / "workflow/configs/sldp.yaml").read_text())
    section = study.STUDY.validate(config["studies"]["sldp"])
    path = args.housing or section["classify"]["path"]
    if not Path(path).exists():
        raise SystemExit(f"{path}: California housing CSV not found; give it with --housing PATH")
    cfg = {**{k: section[k] for k in study.PROTOCOL_KEYS}, "classify": section["classify"]}
    cfg["threshold"] = section["classify"]["threshold"]
    X, y, _ = classify.load_housing(path, section["classify"]["lonlat_bbox"])
    per_rep = classification_table(cfg, X, y, args.epsilon, args.reps)
    if args.run is None:
        return
    table = run_records(args.run)
    print(f"\nrun {args.run}: per stage, summed over its jobs (benchmark records)")
    print(table.to_string(float_format=lambda v: f"{v:.1f}"))
    # the random forests' share of a classification job: the k-study epsilon's where timed, else the mean
    plain = [rf / tot for eps, (tot, rf) in per_rep.items() if eps != section["classify"]["k_epsilon"]]
    k_eps = per_rep.get(section["classify"]["k_epsilon"])
    share_plain = float(np.mean(plain)) if plain else k_eps[1] / k_eps[0]
    share_k = k_eps[1] / k_eps[0] if k_eps else share_plain
    records = args.run / "benchmarks/results/studies/sldp/runs/task~classify/n~all"
    rf = 0.0
    for tsv in records.glob("epsilon~*/classify.tsv"):
        eps = float(tsv.parent.name.split("~")[1])
        cpu = pd.read_csv(tsv, sep="\t")["cpu_time"].iloc[0]
        rf += cpu * (share_k if eps == section["classify"]["k_epsilon"] else share_plain)
    cpu, wall = table["cpu"].sum(), table["wall"].sum()
    print(
        f"\nwhole run: {table['jobs'].sum()} jobs, {cpu:.0f} s CPU, {wall:.0f} s summed job wall;"
        f"\nrandom-forest fits (share {share_plain:.0%} of a classification job, {share_k:.0%} with the k study):"
        f" {rf:.0f} s CPU = {rf / cpu:.0%} of the run's CPU"
        f"\nbound on a result-preserving speed-up: CPU {cpu / rf:.2f}x;"
        f" wall on 2 free cores >= {rf / 2:.0f} s (the run as it is: >= {cpu / 2:.0f} s)"
    )


if __name__ == "__main__":
    main()
