"""Measurements behind the SLDP study's defaults and baselines.

``leaves``: MRE of SLDP's range answers with the four child leaves kept ("children", the
authors' code) or merged into their parent ("merge").

Same points, queries and protocol randomness for both options (``leaves`` is post-processing of
one transcript, so the pair differs only in the released cells); the study's range task:
200 anchored queries ([SLDP] App. A.2), Q = 20, per-child split rule, max_depth 10, under the
default calibration and the paper's (Alg. 1's Laplace(1/eps), as the authors' code).  Writes one
row per calibration x dataset x N x epsilon x rep::

    python -m locpriv.sldp.compare leaves --out docs/results/sldp_leaves.csv [--geolife PATH]

``methods``: the study's own range-query stages (``protocol_stage``, ``evaluate_stage``: SLDP,
PrivTree, the OUE grid, LDP-KDTree on the same points and queries), one row per method x run::

    python -m locpriv.sldp.compare methods --out docs/results/sldp_range_methods.csv [--geolife PATH]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from ..seeding import rng as make_rng
from . import range_queries, study
from .protocol import LEAVES, run_protocol

GEOLIFE_BBOX = [116.15, 116.60, 39.75, 40.10]


def leaves_table(n: int, epsilons: list[float], reps: int, seed: int, path: str | None = None,
                 calibration: str = "sensitivity2") -> pd.DataFrame:
    given = {"range": {"n": [n], "epsilon": epsilons}, "reps": reps, "calibration": calibration}
    if path:
        given["range"].update(path=path, lonlat_bbox=GEOLIFE_BBOX)
    cfg = study.validate_config(given)
    rows = []
    for eps in epsilons:
        for rep in range(reps):
            run = {"task": "range", "n": n, "epsilon": eps, "rep": rep}
            pts = study._data(run, cfg, seed)
            q = range_queries.anchored_workload(pts, study.UNIT, cfg["range"]["queries"],
                                                make_rng(seed, "sldp-evaluate", "range", n, eps, rep))
            truth = range_queries.true_counts(q, pts)
            for leaves in LEAVES:
                part = run_protocol(pts, study.UNIT, eps, cfg["range"]["threshold"], cfg["max_depth"], cfg["delta"],
                                    make_rng(seed, "sldp-protocol", "range", n, eps, rep),
                                    delta_constant=cfg["delta_constant"], split_rule=cfg["split_rule"],
                                    keep_reports=False, calibration=cfg["calibration"], leaves=leaves).cells
                mre = range_queries.mean_relative_error(range_queries.answer(q, part, study.UNIT), truth, n)
                rows.append({"dataset": "geolife" if path else "synthetic_clusters", "n": n, "epsilon": eps,
                             "rep": rep, "calibration": calibration, "leaves": leaves, "cells": len(part), "mre": mre})
    return pd.DataFrame(rows)


def methods_table(n: int, epsilons: list[float], reps: int, seed: int, path: str | None = None) -> pd.DataFrame:
    given = {"range": {"n": [n], "epsilon": epsilons}, "reps": reps}
    if path:
        given["range"].update(path=path, lonlat_bbox=GEOLIFE_BBOX)
    cfg = study.validate_config(given)
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in (r for r in study.runs(cfg) if r["task"] == "range"):
            out = [str(Path(tmp) / f"{name}.parquet") for name in ("partition", "rounds", "reports", "regions", "eval")]
            study.protocol_stage(run=run, cfg=cfg, seed=seed, out_partition=out[0], out_rounds=out[1],
                                 out_reports=out[2], out_regions=out[3])
            study.evaluate_stage(run=run, cfg=cfg, seed=seed, partition_path=out[0], regions_path=out[3], out=out[4])
            # range queries have no classifier or k (the summary's classification columns)
            tables.append(pd.read_parquet(out[4]).drop(columns=["classifier", "k"])
                          .assign(dataset="geolife" if path else "synthetic_clusters"))
    return pd.concat(tables, ignore_index=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("table", choices=["leaves", "methods"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--geolife", help="Geolife CSV (each GPS point a user); synthetic clusters are always run")
    parser.add_argument("--calibration", nargs="+", default=["sensitivity2", "paper"])
    args = parser.parse_args(argv)
    paths = [None] + ([args.geolife] if args.geolife else [])
    if args.table == "leaves":
        table = pd.concat([leaves_table(args.n, args.epsilon, args.reps, args.seed, path, calibration)
                           for calibration in args.calibration for path in paths], ignore_index=True)
        wide = table.pivot_table(index=["calibration", "dataset", "n", "epsilon"], columns="leaves",
                                 values=["mre", "cells"])
    else:
        table = pd.concat([methods_table(args.n, args.epsilon, args.reps, args.seed, path) for path in paths],
                          ignore_index=True)
        wide = table.pivot_table(index=["dataset", "n", "epsilon"], columns="method", values="value")
    table.to_csv(args.out, index=False)
    print(wide.to_string(float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
