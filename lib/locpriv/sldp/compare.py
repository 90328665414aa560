"""Measurements behind the SLDP study's defaults and baselines.

``leaves``: MRE of SLDP's range answers with the four child leaves kept ("children", the
authors' code) or merged into their parent ("merge"), under ``counts`` "regions" (exact
region counts) or "noisy" (the transcript's n_hat); ``--child-share`` adds "children" runs
whose child cells are re-released at that share of eps (the partition gets the rest).

Same points, queries and protocol randomness for every option (at share 0 one transcript, so
the options differ only in the released cells); the study's range task: 200 anchored queries ([SLDP]
App. A.2), Q = 20, per-child split rule, max_depth 10, under the default calibration
(Laplace(2/eps): the authors' range notebook's noise, Alg. 1 run at eps / 2) and Alg. 1's printed
Laplace(1/eps) ("paper", 2 eps per round).  Writes one row per calibration x counts x dataset x
N x epsilon x rep::

    python -m locpriv.sldp.compare leaves --out docs/results/sldp_leaves.csv [--geolife PATH]

``methods``: the study's own range-query stages (``protocol_stage``, ``evaluate_stage``: SLDP,
PrivTree, the OUE grid, LDP-KDTree on the same points and queries), one row per method x run::

    python -m locpriv.sldp.compare methods --out docs/results/sldp_range_methods.csv [--geolife PATH]

``authors``: locpriv's SLDP against the authors' own code (a checkout of asuvor/privacy, given
with ``--authors DIR``; never part of this repository) on identical points and the same 200
anchored queries, one MRE function (``range_queries.mean_relative_error``), both at the same
printed eps.  Their range notebook (Appendix_spatial_queries_synthetic.ipynb) builds the
partition with ``run_dp_quadtree_optimized(X, eps / 2, Q=20, C=6, T=10, delta=0.05)`` (the
per-child rule) and re-releases every leaf's count with the other eps / 2; its cells that define
the data generator and the synopsis are run as they are (``_authors_namespace``).  locpriv runs
each split rule (``SPLIT_RULES``) at the study's defaults with exact region counts, and
``per_child`` also with the transcript's n_hat ("noisy").  Neither per-child side has a proof;
``all_children`` and ``pooled`` are (eps, delta)-SLDP (``protocol.guarantee``).  Datasets: the
study's synthetic clusters, the authors' clustered generator, and Geolife (``--geolife``)::

    python -m locpriv.sldp.compare authors --authors DIR --out docs/results/sldp_vs_authors.csv \
        --n 5000 20000 [--geolife PATH]

``summary``: the paired table of an ``authors`` csv (``--csv``): per setting, each method's mean
MRE and, against the authors and against ``per_child``, the mean paired relative difference with
its 95 % t interval over the repetitions and the repetitions in which the method is lower::

    python -m locpriv.sldp.compare summary --csv docs/results/sldp_vs_authors.csv --out TABLE.md
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from ..seeding import rng as make_rng
from . import range_queries, study
from .protocol import COUNTS, LEAVES, SPLIT_RULES, run_protocol

GEOLIFE_BBOX = [116.15, 116.60, 39.75, 40.10]


def leaves_table(
    n: int,
    epsilons: list[float],
    reps: int,
    seed: int,
    path: str | None = None,
    calibration: str = "sensitivity2",
    counts: str = "regions",
    child_shares: tuple[float, ...] = (0.0,),
) -> pd.DataFrame:
    """Paired MREs per leaves option; under counts "regions", "children" once per child share (the
    partition at (1 - share) eps, the child cells re-released at share eps)."""
    given = {"range": {"n": [n], "epsilon": epsilons}, "reps": reps, "calibration": calibration}
    if path:
        given["range"].update(path=path, lonlat_bbox=GEOLIFE_BBOX)
    cfg = study.validate_config(given)
    rows = []
    for eps in epsilons:
        for rep in range(reps):
            run = {"task": "range", "n": n, "epsilon": eps, "rep": rep}
            pts = study.client_points(run, cfg, seed)
            q = range_queries.anchored_workload(
                pts, study.UNIT, cfg["range"]["queries"], make_rng(seed, "sldp-evaluate", "range", n, eps, rep)
            )
            truth = range_queries.true_counts(q, pts)
            options = [
                (leaves, share)
                for leaves in LEAVES
                for share in (child_shares if (leaves, counts) == ("children", "regions") else (0.0,))
            ]
            for leaves, share in options:
                part = run_protocol(
                    pts,
                    study.UNIT,
                    eps * (1 - share),
                    cfg["range"]["threshold"],
                    cfg["max_depth"],
                    cfg["delta"],
                    make_rng(seed, "sldp-protocol", "range", n, eps, rep),
                    split_rule=cfg["split_rule"],
                    keep_reports=False,
                    calibration=cfg["calibration"],
                    leaves=leaves,
                    counts=counts,
                    child_epsilon=eps * share,
                ).cells
                mre = range_queries.mean_relative_error(range_queries.answer(q, part, study.UNIT), truth, n)
                rows.append(
                    {
                        "dataset": "geolife" if path else "synthetic_clusters",
                        "n": n,
                        "epsilon": eps,
                        "rep": rep,
                        "calibration": calibration,
                        "counts": counts,
                        "leaves": leaves,
                        "child_share": share,
                        "cells": len(part),
                        "mre": mre,
                    }
                )
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
            study.protocol_stage(
                run=run,
                cfg=cfg,
                seed=seed,
                out_partition=out[0],
                out_rounds=out[1],
                out_reports=out[2],
                out_regions=out[3],
            )
            study.evaluate_stage(run=run, cfg=cfg, seed=seed, partition_path=out[0], regions_path=out[3], out=out[4])
            # range queries have no classifier or k (the summary's classification columns)
            tables.append(
                pd.read_parquet(out[4])
                .drop(columns=["classifier", "k"])
                .assign(dataset="geolife" if path else "synthetic_clusters")
            )
    return pd.concat(tables, ignore_index=True)


# cells of the authors' range notebook run as they are: 1 the clustered generator, 2 the synopses
# (their cell 0 holds imports and an IPython magic, cell 3 the answering: ours is the same sum)
AUTHORS_NOTEBOOK, AUTHORS_CELLS = "Appendix_spatial_queries_synthetic.ipynb", (1, 2)


def _authors_namespace(directory: str) -> dict:
    """The authors' module and notebook cells, executed from their checkout ``directory``."""
    import json
    import sys

    import numpy as np

    notebook = Path(directory) / AUTHORS_NOTEBOOK
    if not notebook.exists():
        raise SystemExit(f"--authors {directory}: no {AUTHORS_NOTEBOOK}; give a checkout of asuvor/privacy")
    sys.path.insert(0, str(Path(directory)))
    from sldp_opt_utils import run_dp_quadtree_optimized  # their module, from their checkout

    namespace = {"np": np, "run_dp_quadtree_optimized": run_dp_quadtree_optimized}
    cells = json.loads(notebook.read_text())["cells"]
    for i in AUTHORS_CELLS:
        exec("".join(cells[i]["source"]), namespace)  # their code, run as published
    return namespace


def _points(dataset: str, n: int, rep: int, seed: int, path: str | None, authors: dict):
    """Each dataset's points for (N, rep): the study's own streams, or the authors' generator."""
    if dataset == "authors_clusters":
        authors["rng"] = make_rng(seed, "authors-data", n, rep)  # their generator reads a global rng
        return authors["generate_clustered_data"](n_samples=n, bounds=(0, 0, 1, 1))
    given = {"range": {"n": [n], "epsilon": [1.0]}}
    if dataset == "geolife":
        given["range"].update(path=path, lonlat_bbox=GEOLIFE_BBOX)
    return study.client_points(
        {"task": "range", "n": n, "epsilon": 1.0, "rep": rep}, study.validate_config(given), seed
    )


AUTHORS = "authors"  # the method label of their code's runs


def authors_table(
    ns: list[int],
    epsilons: list[float],
    reps: int,
    seed: int,
    directory: str,
    path: str | None = None,
    first_rep: int = 0,
) -> pd.DataFrame:
    """Paired MREs at the same printed eps: locpriv's SLDP under each split rule (exact region counts,
    and per_child also with the transcript's n_hat) and the authors' code, on the same points and queries."""
    authors = _authors_namespace(directory)
    cfg = study.validate_config({})
    datasets = ["synthetic_clusters", "authors_clusters"] + (["geolife"] if path else [])
    settings = [(rule, "regions") for rule in SPLIT_RULES] + [("per_child", "noisy")]
    rows = []
    for dataset in datasets:
        for n in ns:
            for rep in range(first_rep, reps):  # a repetition's streams depend on its index only
                pts = _points(dataset, n, rep, seed, path, authors)
                for eps in epsilons:
                    q = range_queries.anchored_workload(
                        pts, study.UNIT, cfg["range"]["queries"], make_rng(seed, "sldp-evaluate", dataset, n, eps, rep)
                    )
                    truth = range_queries.true_counts(q, pts)
                    answers = {}
                    for rule, counts in settings:
                        part = run_protocol(
                            pts,
                            study.UNIT,
                            eps,
                            cfg["range"]["threshold"],
                            cfg["max_depth"],
                            cfg["delta"],
                            make_rng(seed, "sldp-protocol", dataset, n, eps, rep),
                            split_rule=rule,
                            keep_reports=False,
                            calibration=cfg["calibration"],
                            leaves=cfg["leaves"],
                            counts=counts,
                        ).cells
                        label = rule if counts == "regions" else f"{rule}_{counts}"
                        answers[label] = range_queries.answer(q, part, study.UNIT)
                    authors["rng"] = make_rng(seed, "authors-sldp", dataset, n, eps, rep, "authors_printed")
                    cells, counts = authors["build_quadtree_synopsis"](pts, eps, bounds=(0, 0, 1, 1))
                    answers[AUTHORS] = range_queries.answer(
                        q,
                        pd.DataFrame(cells[:, [0, 2, 1, 3]], columns=["x0", "x1", "y0", "y1"]).assign(count=counts),
                        study.UNIT,
                    )
                    rows += [
                        {
                            "dataset": dataset,
                            "n": n,
                            "epsilon": eps,
                            "rep": rep,
                            "method": method,
                            "mre": range_queries.mean_relative_error(est, truth, n),
                        }
                        for method, est in answers.items()
                    ]
    return pd.DataFrame(rows)


SETTING = ["dataset", "n", "epsilon"]


def paired_summary(table: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Per setting and method, against ``reference``: the mean over repetitions of MRE / MRE(reference) - 1
    (%), its 95 % t interval, and the repetitions in which the method's MRE is lower (ties count half)."""
    from scipy import stats

    wide = table.pivot_table(index=[*SETTING, "rep"], columns="method", values="mre")
    rows = []
    for method in wide.columns.drop(reference):
        ratio = 100 * (wide[method] / wide[reference] - 1)
        lower = (wide[method] < wide[reference]) + 0.5 * (wide[method] == wide[reference])
        for key, r in ratio.groupby(level=SETTING):
            half = stats.t.ppf(0.975, len(r) - 1) * r.sem()
            rows.append(
                {
                    **dict(zip(SETTING, key, strict=True)),
                    "method": method,
                    "diff": r.mean(),
                    "low": r.mean() - half,
                    "high": r.mean() + half,
                    "lower": float(lower.loc[key].sum()),
                    "reps": len(r),
                }
            )
    return pd.DataFrame(rows)


METHODS = [AUTHORS, "per_child", "per_child_noisy", "all_children", "pooled"]  # the page's column order
COMPARISONS = (
    (AUTHORS, ["per_child", "all_children", "pooled"]),
    ("per_child", ["pooled"]),
    ("per_child_noisy", ["pooled"]),
)


def summary_markdown(table: pd.DataFrame) -> str:
    """The results page's tables: mean MREs per setting; then, against the authors (same printed eps) and
    ``pooled`` against ``per_child``, per setting "mean difference % [95 % interval] reps lower", and a
    one-line tally per method."""
    mres = table.pivot_table(index=SETTING, columns="method", values="mre")
    shown = mres[[m for m in METHODS if m in mres]].reset_index().astype({"epsilon": str})
    parts = [shown.to_markdown(index=False, floatfmt=".4f")]
    for reference, methods in COMPARISONS:
        paired = paired_summary(table, reference)
        paired = paired[paired["method"].isin(methods)]
        cell = [
            f"{r.diff:+.1f} [{r.low:+.1f}, {r.high:+.1f}] {r.lower:g}/{r.reps}" for r in paired.itertuples(index=False)
        ]
        shown = paired.assign(cell=cell).pivot(index=SETTING, columns="method", values="cell")[methods]
        shown.columns = [f"{m} vs {reference}: % [95 %] reps lower" for m in methods]
        parts.append(shown.reset_index().to_markdown(index=False))
        parts.append(
            "\n".join(
                f"* {method} vs {reference}: lower mean MRE in {int((g['diff'] < 0).sum())} of {len(g)} settings "
                f"(interval below 0 in {int((g['high'] < 0).sum())}, above 0 in {int((g['low'] > 0).sum())}); "
                f"lower in {g['lower'].sum():g} of {g['reps'].sum()} paired repetitions; mean difference "
                f"{g['diff'].min():+.1f} % to {g['diff'].max():+.1f} % (over all settings {g['diff'].mean():+.1f} %)"
                for method, g in paired.groupby("method", sort=False)
            )
        )
    return "\n\n".join(parts) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("table", choices=["leaves", "methods", "authors", "summary"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--csv", help="summary: an authors csv")
    parser.add_argument("--n", type=int, nargs="+", default=[20000])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--first-rep", type=int, default=0, help="authors: run repetitions first-rep .. reps - 1")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--geolife", help="Geolife CSV (each GPS point a user); synthetic clusters are always run")
    parser.add_argument("--calibration", nargs="+", default=["sensitivity2", "paper"])
    parser.add_argument("--counts", nargs="+", default=list(COUNTS), help="leaves: the count options compared")
    parser.add_argument(
        "--child-share",
        type=float,
        nargs="+",
        default=[0.0],
        help="leaves: shares of eps re-releasing the child cells (children, counts regions)",
    )
    parser.add_argument("--authors", help="authors: a checkout of asuvor/privacy (their code is run, never copied)")
    args = parser.parse_args(argv)
    if args.table == "summary":
        if not args.csv:
            parser.error("summary needs --csv (an authors table)")
        Path(args.out).write_text(summary_markdown(pd.read_csv(args.csv)))
        return
    paths = [None] + ([args.geolife] if args.geolife else [])
    if args.table == "leaves":
        table = pd.concat(
            [
                leaves_table(n, args.epsilon, args.reps, args.seed, path, calibration, counts, tuple(args.child_share))
                for n in args.n
                for calibration in args.calibration
                for counts in args.counts
                for path in paths
            ],
            ignore_index=True,
        )
        wide = table.pivot_table(
            index=["calibration", "counts", "dataset", "n", "epsilon"],
            columns=["leaves", "child_share"],
            values=["mre", "cells"],
        )
    elif args.table == "methods":
        table = pd.concat(
            [methods_table(n, args.epsilon, args.reps, args.seed, path) for n in args.n for path in paths],
            ignore_index=True,
        )
        wide = table.pivot_table(index=["dataset", "n", "epsilon"], columns="method", values="value")
    else:
        if not args.authors:
            parser.error("authors needs --authors DIR (a checkout of asuvor/privacy)")
        table = authors_table(args.n, args.epsilon, args.reps, args.seed, args.authors, args.geolife, args.first_rep)
        wide = table.pivot_table(index=["dataset", "n", "epsilon"], columns="method", values="mre")
    table.to_csv(args.out, index=False)
    print(wide.to_string(float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
