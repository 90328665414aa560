"""HDG and TDG (``sldp.hdg``) beside the authors' code and the other LDP range-query baselines.

One workload for every method: per dataset x N x rep, N points (the SLDP study's synthetic
clusters, or Geolife scaled to the unit square) snapped to the centres of a 256 x 256 grid
(privmdr's integer attribute domain), and 200 anchored queries ([SLDP] App. A.2) snapped to
that grid's lines, with their true counts on the snapped points.  Per epsilon, every method
answers the same queries and one function scores them all (``range_queries.mean_relative_error``):

* ``hdg``, ``tdg``: ours (``sldp.hdg``);
* ``privmdr_hdg``, ``privmdr_tdg``: the authors' classes (github.com/YangJianyu-bupt/privmdr,
  ``HDG.AG_Uniform_Grid_1_2_way_optimal``, ``TDG.AG_Uniform_Grid_optimal``) run unmodified from a
  checkout given by ``--privmdr`` (not part of locpriv), in the order of their ``example_main.py``:
  records shuffled, group_attribute, construct_Grid_set, get_LDP_Grid_set_divide_user,
  get_consistent_Grid_set, get_weight_update_for_2_way_group (HDG), answer_range_query_list;
* ``ldp_kdtree`` (height 4, ``sldp.ldp_kdtree``), ``ldp_oue_grid`` at level 4 (16 x 16, the fixed
  default), 3 (8 x 8) and the guideline's level (``ldp_grid.grid_level``: ``oue_rule``).

Writes one row per dataset x N x epsilon x rep x method and prints the tables of
docs/results/hdg_vs_privmdr.md::

    python -m locpriv.sldp.hdg_compare --privmdr PATH --out docs/results/hdg_vs_privmdr.csv \\
        [--geolife CSV] [--n 20000 100000] [--epsilon 0.5 1 2] [--reps 10]
    python -m locpriv.sldp.hdg_compare --tables docs/results/hdg_vs_privmdr.csv
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import random
import sys
import types
from argparse import Namespace

import numpy as np
import pandas as pd

from ..seeding import rng as make_rng
from . import hdg, ldp_grid, ldp_kdtree, range_queries, study
from .compare import GEOLIFE_BBOX

RESOLUTION = 256
QUERIES = 200
OURS = {"hdg": "privmdr_hdg", "tdg": "privmdr_tdg"}


def workload(dataset: str, n: int, rep: int, seed: int, path: str | None):
    """(grid cells (N, 2) ints, points at their centres, queries (Q, 4), integer queries (Q, 4), truth)."""
    given = {"range": {"n": [n], **({"path": path, "lonlat_bbox": GEOLIFE_BBOX} if path else {})}}
    pts = study.client_points({"task": "range", "n": n, "rep": rep}, study.validate_config(given), seed)
    cells = np.minimum((pts * RESOLUTION).astype(np.int64), RESOLUTION - 1)
    centres = (cells + 0.5) / RESOLUTION
    q = range_queries.anchored_workload(
        pts, study.UNIT, QUERIES, make_rng(seed, "hdg-compare-queries", dataset, n, rep)
    )
    lo = np.clip(np.rint(q[:, [0, 2]] * RESOLUTION), 0, RESOLUTION - 1).astype(np.int64)
    hi = np.clip(np.rint(q[:, [1, 3]] * RESOLUTION) - 1, lo, RESOLUTION - 1).astype(np.int64)
    integer = np.stack([lo[:, 0], hi[:, 0], lo[:, 1], hi[:, 1]], axis=1)  # inclusive cell ranges
    boxes = np.stack([lo[:, 0], hi[:, 0] + 1, lo[:, 1], hi[:, 1] + 1], axis=1) / RESOLUTION
    return cells, centres, boxes, integer, range_queries.true_counts(boxes, centres)


def _import_privmdr(path: str) -> dict:
    if path not in sys.path:
        sys.path.insert(0, path)
    # frequency_oracle.py imports xxhash for OLH, which HDG and TDG never use (they build OUE)
    with contextlib.suppress(ImportError):
        importlib.import_module("xxhash")
    sys.modules.setdefault("xxhash", types.ModuleType("xxhash"))
    return {name: importlib.import_module(name) for name in ("HDG", "TDG", "generate_query")}


def privmdr(
    path: str, variant: str, cells: np.ndarray, integer_queries: np.ndarray, epsilon: float, seed: int
) -> tuple[np.ndarray, int, int]:
    """The authors' HDG or TDG on integer records: (answers, g1, g2)."""
    mods = _import_privmdr(path)
    n = len(cells)
    args = Namespace(
        user_num=n,
        attribute_num=2,
        domain_size=RESOLUTION,
        epsilon=epsilon,
        consistency_iteration_num_max=hdg.ITERATIONS,
        weighted_update_iteration_num_max=hdg.ITERATIONS,
    )
    random.seed(seed)
    np.random.seed(seed)
    records = cells.tolist()
    np.random.shuffle(records)
    algo = (mods["HDG"].AG_Uniform_Grid_1_2_way_optimal if variant == "hdg" else mods["TDG"].AG_Uniform_Grid_optimal)(
        args=args
    )
    queries = []
    for x0, x1, y0, y1 in integer_queries.tolist():
        rq = mods["generate_query"].RangeQuery(query_dimension=2, attribute_num=2, args=args)
        rq.initialize_range_query()
        rq.selected_attribute_list = [0, 1]
        for node, (lo, hi) in zip(rq.query_attribute_node_list, ((x0, x1), (y0, y1)), strict=True):
            node.left_interval, node.right_interval = lo, hi
        queries.append(rq)
    with contextlib.redirect_stdout(io.StringIO()):  # the classes print progress
        algo.group_attribute()
        algo.construct_Grid_set()
        algo.get_LDP_Grid_set_divide_user(records)
        algo.get_consistent_Grid_set()
        if variant == "hdg":
            algo.get_weight_update_for_2_way_group()
        algo.answer_range_query_list(queries)
    g2 = args.granularity
    return np.asarray(algo.weighted_update_answer_list, dtype=float), getattr(args, "granularity_1_way", g2), g2


def _answers(method: str, centres, boxes, epsilon: float, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    n = len(centres)
    if method in OURS:
        res = hdg.hdg(centres, study.UNIT, epsilon, rng, variant=method, resolution=RESOLUTION)
        return hdg.answer(boxes, res.matrix, study.UNIT), {"g1": res.g1, "g2": res.g2}
    if method == "ldp_kdtree":
        tree = ldp_kdtree.ldp_kdtree(centres, study.UNIT, epsilon, ldp_kdtree.DEFAULT_HEIGHT, rng)
        return range_queries.answer(boxes, tree.leaves, study.UNIT), {}
    level = {"ldp_oue_grid": 4, "oue_8x8": 3, "oue_rule": ldp_grid.grid_level(n, epsilon)}[method]
    cells = ldp_grid.oue_grid(centres, study.UNIT, epsilon, level, rng)
    return range_queries.answer(boxes, cells, study.UNIT), {"g2": 2**level}


def table(privmdr_path: str, n_values, epsilons, reps: int, seed: int, geolife: str | None) -> pd.DataFrame:
    rows = []
    datasets = [("synthetic_clusters", None)] + ([("geolife", geolife)] if geolife else [])
    methods = list(OURS) + list(OURS.values()) + ["ldp_kdtree", "ldp_oue_grid", "oue_8x8", "oue_rule"]
    for dataset, path in datasets:
        for n in n_values:
            for rep in range(reps):
                cells, centres, boxes, integer, truth = workload(dataset, n, rep, seed, path)
                for eps in epsilons:
                    for method in methods:
                        rng = make_rng(seed, "hdg-compare", method, dataset, n, eps, rep)
                        if method in OURS.values():
                            variant = method.split("_")[1]
                            est, g1, g2 = privmdr(privmdr_path, variant, cells, integer, eps, int(rng.integers(2**31)))
                            extra = {"g1": g1, "g2": g2}
                        else:
                            est, extra = _answers(method, centres, boxes, eps, rng)
                        rows.append(
                            {
                                "dataset": dataset,
                                "n": n,
                                "epsilon": eps,
                                "rep": rep,
                                "method": method,
                                "mre": range_queries.mean_relative_error(est, truth, n),
                                **extra,
                            }
                        )
                print(f"{dataset} N={n} rep {rep} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def _markdown(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _mean_se(values: pd.Series) -> str:
    return f"{values.mean():.4f} ± {values.std(ddof=1) / np.sqrt(len(values)):.4f}"


def summaries(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The recorded tables: ours vs privmdr; HDG vs the baselines (paired); the OUE grid's level rule."""
    keys = ["dataset", "n", "epsilon"]
    wide = rows.pivot_table(index=[*keys, "rep"], columns="method", values="mre")
    out = {}
    check = []
    for (dataset, n, eps), grp in wide.groupby(level=[0, 1, 2]):
        for ours, theirs in OURS.items():
            g = rows[(rows.dataset == dataset) & (rows.n == n) & (rows.epsilon == eps) & (rows.method == ours)]
            ratio = grp[ours].mean() / grp[theirs].mean()
            check.append(
                {
                    "dataset": dataset,
                    "N": n,
                    "ε": eps,
                    "variant": ours,
                    "g1, g2": f"{g.g1.iloc[0]:.0f}, {g.g2.iloc[0]:.0f}",
                    "ours": _mean_se(grp[ours]),
                    "privmdr": _mean_se(grp[theirs]),
                    "ratio": f"{ratio:.3f}",
                    "within ±5 %": "yes" if abs(ratio - 1) <= 0.05 else "NO",
                }
            )
    out["privmdr"] = pd.DataFrame(check)
    versus = []
    for (dataset, n, eps), grp in wide.groupby(level=[0, 1, 2]):
        row = {"dataset": dataset, "N": n, "ε": eps, "hdg": _mean_se(grp["hdg"])}
        for other in ("ldp_kdtree", "ldp_oue_grid", "oue_8x8", "oue_rule", "tdg"):
            gain = 1 - grp["hdg"].mean() / grp[other].mean()
            row[other] = f"{_mean_se(grp[other])} ({gain:+.0%}, {int((grp['hdg'] < grp[other]).sum())}/{len(grp)})"
        versus.append(row)
    out["baselines"] = pd.DataFrame(versus)
    rule = []
    for (dataset, n, eps), grp in wide.groupby(level=[0, 1, 2]):
        level = ldp_grid.grid_level(n, eps)
        rule.append(
            {
                "dataset": dataset,
                "N": n,
                "ε": eps,
                "rule level": f"{level} ({2**level} × {2**level})",
                "rule": _mean_se(grp["oue_rule"]),
                "16 × 16": _mean_se(grp["ldp_oue_grid"]),
                "8 × 8": _mean_se(grp["oue_8x8"]),
                "rule vs 16 × 16": f"{grp['oue_rule'].mean() / grp['ldp_oue_grid'].mean() - 1:+.0%}, "
                f"wins {int((grp['oue_rule'] < grp['ldp_oue_grid']).sum())}/{len(grp)}",
            }
        )
    out["rule"] = pd.DataFrame(rule)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--privmdr", help="a checkout of github.com/YangJianyu-bupt/privmdr")
    parser.add_argument("--out", help="CSV of every run")
    parser.add_argument("--tables", help="print the tables of an existing CSV instead of running")
    parser.add_argument("--n", type=int, nargs="+", default=[20000, 100000])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--geolife", help="Geolife CSV (each GPS point a user); synthetic clusters always run")
    args = parser.parse_args(argv)
    if args.tables:
        rows = pd.read_csv(args.tables)
    else:
        if not (args.privmdr and args.out):
            parser.error("--privmdr and --out are required to run (or --tables CSV)")
        rows = table(args.privmdr, args.n, args.epsilon, args.reps, args.seed, args.geolife)
        rows.to_csv(args.out, index=False)
    for name, frame in summaries(rows).items():
        print(f"\n## {name}\n\n{_markdown(frame)}")


if __name__ == "__main__":
    main()
