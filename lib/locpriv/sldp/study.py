"""The ``studies.sldp`` workflow section: validation and the file-level stages.

One run = (task, N, epsilon, rep).  ``mean``: N(0, 1.5^2 I) truncated to the box,
the protocol on ``partition_share`` of epsilon, Ex. 3.1 / 2.1 / 2.2 on the rest
(LDP and central DP get the whole epsilon).  ``range``: clustered points on the
unit square, the protocol on all of epsilon, 200 anchored queries answered from
the partition, PrivTree (epsilon split in halves), the LDP OUE grid (level ``range.grid_level``,
or ``auto``: the granularity guideline), LDP-KDTree (``ldp_kdtree``, height
``range.kdtree_height``) and HDG (``hdg``, Yang et al. 2021, its own granularity guideline).

Split threshold Q = ``threshold`` per task, as the paper and its notebooks set it: 100 for
mean estimation, 20 for range queries and classification (§5.2, App. A.1/A.2);
``leaves``: "merge" (default, measured) or "children" (the authors' code; ``protocol``);
``counts``: "regions" (default: each released region's exact user count, free) or "noisy";
``child_share`` of a range run's epsilon re-releases the child cells inside regions
(``leaves: children`` only; the partition gets the rest);
``calibration`` "sensitivity2" (default) makes a round cost epsilon, "paper"
reproduces Alg. 1's printed noise and records its true cost (2 epsilon per round).
Each protocol run records its guarantee (``protocol.guarantee``) in the metadata.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io, laplace_ldp
from ..config import StudySection, listed
from ..datasets.points import load_points, projected_box
from ..quadtree import cell_box
from ..seeding import rng as make_rng
from ..study import Study
from . import classify, hdg, ldp_grid, ldp_kdtree, mean, privtree, range_queries
from .protocol import guarantee as protocol_guarantee
from .protocol import run_protocol

TASKS = ("mean", "range")  # tasks with a sample size N; "classify" uses its whole dataset
# the settings every protocol run reads (the split threshold Q is per task)
PROTOCOL_KEYS = ("delta", "max_depth", "split_rule", "calibration", "leaves", "counts", "child_share")
UNIT = (0.0, 1.0, 0.0, 1.0)
# keys, bounds and defaults: workflow/schemas/config.source.yaml, $defs.sldp (docs/configuration.md)
SECTION = StudySection("sldp")


def validate_config(section: dict) -> dict:
    """The section checked against its schema, defaults filled in, value-or-list keys as lists."""
    if "threshold" in (section or {}):  # Q differs by task in the paper: one shared key would hide that
        raise SECTION.error(
            "threshold",
            "moved into each task",
            "mean.threshold (default 100), range.threshold (20) or classify.threshold (20)",
        )
    if "delta_constant" in (section or {}):  # Alg. 2 line 14's margin missed its delta (protocol, margin)
        raise SECTION.error(
            "delta_constant",
            "removed: the split margin is now the exact-tail quantile of the report noise, valid for every delta",
            "leave it out (delta alone sets the margin)",
        )
    cfg = SECTION.validate(section)
    if cfg["child_share"] and (cfg["leaves"], cfg["counts"]) != ("children", "regions"):
        raise SECTION.error(
            "child_share",
            f"{cfg['child_share']} re-releases the child cells inside regions, "
            f"which leaves: {cfg['leaves']} / counts: {cfg['counts']} do not publish",
            "0, or leaves: children with counts: regions",
        )
    for task in TASKS:
        cfg[task]["n"] = listed(cfg[task]["n"], int)
        cfg[task]["epsilon"] = listed(cfg[task]["epsilon"], float)
    if cfg["classify"] is not None:
        cfg["classify"]["epsilon"] = listed(cfg["classify"]["epsilon"], float)
        cfg["classify"]["k"] = listed(cfg["classify"]["k"], float)
    if bool(cfg["range"]["path"]) != bool(cfg["range"]["lonlat_bbox"]):
        raise SECTION.error("range.path", "path and lonlat_bbox must be given together", "both or neither")
    return cfg


def runs(cfg: dict) -> list[dict]:
    return [
        {"task": task, "n": n, "epsilon": eps, "rep": rep}
        for task in TASKS
        for n in cfg[task]["n"]
        for eps in cfg[task]["epsilon"]
        for rep in range(cfg["reps"])
    ]


def classify_runs(cfg: dict) -> list[dict]:
    if cfg["classify"] is None:
        return []
    return [
        {"task": "classify", "n": "all", "epsilon": eps, "rep": rep}
        for eps in cfg["classify"]["epsilon"]
        for rep in range(cfg["reps"])
    ]


def run_dir(run: dict) -> str:
    return f"task~{run['task']}/n~{run['n']}/epsilon~{run['epsilon']}/rep~{run['rep']}"


def every_run(cfg: dict) -> list[dict]:
    """The runs the summary holds: every task with a sample size N, then the classification runs."""
    return runs(cfg) + classify_runs(cfg)


def client_points(run: dict, cfg: dict, seed: int) -> np.ndarray:
    rng = make_rng(seed, "sldp-data", run["task"], run["n"], run["rep"])
    if run["task"] == "mean":
        box = cfg["mean"]["box"]
        pts = rng.normal(0, cfg["mean"]["sd"], size=(2 * run["n"], 2))
        inside = (pts[:, 0] >= box[0]) & (pts[:, 0] <= box[1]) & (pts[:, 1] >= box[2]) & (pts[:, 1] <= box[3])
        return pts[inside][: run["n"]]
    if cfg["range"]["path"]:
        return _real_points(cfg["range"]["path"], tuple(cfg["range"]["lonlat_bbox"]), run["n"], rng)
    centres = np.array([[0.3, 0.3], [0.7, 0.6], [0.4, 0.8]])
    k = rng.integers(0, 4, run["n"])
    pts = np.where(
        k[:, None] < 3, centres[np.minimum(k, 2)] + rng.normal(0, 0.05, (run["n"], 2)), rng.uniform(0, 1, (run["n"], 2))
    )
    return pts.clip(0, 1)


@lru_cache(maxsize=1)
def _projected(path: str, lonlat_bbox: tuple) -> np.ndarray:
    pts, _, _ = load_points(path, lonlat_bbox=list(lonlat_bbox))
    xy = pts[["x", "y"]].to_numpy()
    box, _ = projected_box(list(lonlat_bbox))
    return (xy - [box[0], box[2]]) / [box[1] - box[0], box[3] - box[2]]


def _real_points(path: str, lonlat_bbox: tuple, n: int, rng: np.random.Generator) -> np.ndarray:
    """n points drawn without replacement from the file, in the unit square (each row a user)."""
    xy = _projected(path, lonlat_bbox)
    if n > len(xy):
        raise ValueError(f"studies.sldp.range.n = {n} exceeds the {len(xy)} points of {path}")
    return xy[rng.choice(len(xy), n, replace=False)].clip(0, 1)


def protocol_stage(
    *, run: dict, cfg: dict, seed: int, out_partition: str, out_rounds: str, out_reports: str, out_regions: str
) -> None:
    """Client data + the interactive protocol; writes the server's transcript and partition."""
    pts = client_points(run, cfg, seed)
    box = cfg["mean"]["box"] if run["task"] == "mean" else list(UNIT)
    task = run["task"] == "mean"
    # the mean task spends the rest of epsilon on its estimate; a range run may re-release child cells
    share = cfg["mean"]["partition_share"] if task else 1.0 - cfg["child_share"]
    eps, child_eps = run["epsilon"] * share, 0.0 if task else run["epsilon"] * cfg["child_share"]
    threshold = cfg[run["task"]]["threshold"]
    res = run_protocol(
        pts,
        box,
        eps,
        threshold,
        cfg["max_depth"],
        cfg["delta"],
        make_rng(seed, "sldp-protocol", run["task"], run["n"], run["epsilon"], run["rep"]),
        split_rule=cfg["split_rule"],
        calibration=cfg["calibration"],
        leaves=cfg["leaves"],
        counts=cfg["counts"],
        child_epsilon=child_eps,
    )
    guarantee = protocol_guarantee(
        eps,
        cfg["delta"],
        threshold,
        cfg["split_rule"],
        cfg["calibration"],
        task_epsilon=run["epsilon"] - eps if task else 0.0,
        task="mean task (Ex. 3.1)" if task else "",
        child_epsilon=child_eps,
    ).as_dict()
    meta = {
        "run": run,
        "box": box,
        "guarantee": guarantee,
        "split_rule": cfg["split_rule"],
        "threshold": threshold,
        "leaves": cfg["leaves"],
        "counts": cfg["counts"],
    }
    io.write_parquet(res.cells, out_partition, metadata=meta)
    io.write_parquet(res.rounds, out_rounds, metadata=meta)
    io.write_parquet(res.reports, out_reports, metadata=meta)
    # each user's own region: known to the user (client side), used by its task answer
    io.write_parquet(res.user_cell, out_regions, metadata=meta)


def _rows(run: dict, rows: list[dict], n: int) -> pd.DataFrame:
    """One run's tidy summary rows; ``n`` the users whose data it used (classifier and k only in classify)."""
    return STUDY.run_table(
        [{"classifier": "", "k": np.nan, **row} for row in rows],
        epsilon=float(run["epsilon"]),
        n=n,
        rep=run["rep"],
        task=run["task"],
    )


def evaluate_stage(*, run: dict, cfg: dict, seed: int, partition_path: str, regions_path: str, out: str) -> None:
    pts = client_points(run, cfg, seed)
    rng = make_rng(seed, "sldp-evaluate", run["task"], run["n"], run["epsilon"], run["rep"])
    eps = run["epsilon"]
    if run["task"] == "mean":
        box = cfg["mean"]["box"]
        true = float((pts**2).sum(axis=1).mean())
        task_eps = eps * (1 - cfg["mean"]["partition_share"])
        est = {
            "sldp": mean.sldp_mean(pts, pd.read_parquet(regions_path), box, task_eps, rng),
            "ldp": mean.ldp_mean(pts, box, eps, rng),
            "central": mean.central_mean(pts, box, eps, rng),
        }
        rows = [{"method": k, "metric": "squared_error", "value": (v - true) ** 2} for k, v in est.items()]
    else:
        q = (
            range_queries.anchored_workload(pts, UNIT, cfg["range"]["queries"], rng)
            if cfg["range"]["workload"] == "anchored"
            else range_queries.uniform_workload(UNIT, cfg["range"]["queries"], rng)
        )
        truth = range_queries.true_counts(q, pts)
        parts = {
            "sldp": pd.read_parquet(partition_path),
            "privtree": privtree.privtree(pts, UNIT, eps / 2, eps / 2, rng),
            "ldp_oue_grid": ldp_grid.oue_grid(pts, UNIT, eps, _grid_level(cfg, run["n"], eps), rng),
            "ldp_kdtree": ldp_kdtree.ldp_kdtree(pts, UNIT, eps, cfg["range"]["kdtree_height"], rng).leaves,
        }
        answers = {k: range_queries.answer(q, p, UNIT) for k, p in parts.items()}
        answers["hdg"] = hdg.answer(q, hdg.hdg(pts, UNIT, eps, rng).matrix, UNIT)
        rows = [
            {"method": k, "metric": "mre", "value": range_queries.mean_relative_error(a, truth, run["n"])}
            for k, a in answers.items()
        ]
    io.write_parquet(_rows(run, rows, run["n"]), out)


def _grid_level(cfg: dict, n: int, epsilon: float) -> int:
    """The OUE grid's level: configured, or ``auto`` (the granularity guideline, ``ldp_grid.grid_level``)."""
    level = cfg["range"]["grid_level"]
    return ldp_grid.grid_level(n, epsilon) if level == "auto" else level


def classify_stage(*, run: dict, cfg: dict, seed: int, data_path: str, out: str) -> None:
    X, y, counts = classify.load_housing(data_path, cfg["classify"]["lonlat_bbox"])
    cfg = {**cfg, "threshold": cfg["classify"]["threshold"]}  # the protocol's Q (the k study overrides it)
    rows = []
    for mechanism in cfg["classify"]["mechanisms"]:
        rng = make_rng(seed, "sldp-classify", mechanism, run["epsilon"], run["rep"])
        for name, f1 in classify.f1_scores(X, y, mechanism, run["epsilon"], cfg, rng).items():
            rows.append({"method": mechanism, "classifier": name, "metric": "f1", "value": f1})
    if run["epsilon"] == cfg["classify"]["k_epsilon"]:
        for k in cfg["classify"]["k"]:
            rng = make_rng(seed, "sldp-k-study", k, run["epsilon"], run["rep"])
            for metric, value in classify.k_sensitivity(X, y, run["epsilon"], k, cfg, rng).items():
                rows.append(
                    {
                        "method": "sldp_quantization",
                        "classifier": "random_forest",
                        "k": float(k),
                        "metric": metric,
                        "value": value,
                    }
                )
    io.write_parquet(_rows(run, rows, len(X)), out, metadata=counts)


def setting_stage(*, task: str, n: int, epsilon: float, reps: int, cfg: dict, seed: int, out: dict) -> None:
    """Every rep of one (task, N, epsilon): the protocol, then the task's evaluation (one job: each
    takes well under a second).  ``out`` maps partition, rounds, reports, regions and evaluation
    to one path per rep; each file is the one the separate stages write for that rep.
    """
    for rep in range(reps):
        run = {"task": task, "n": n, "epsilon": epsilon, "rep": rep}
        protocol_stage(
            run=run,
            cfg=cfg,
            seed=seed,
            out_partition=out["partition"][rep],
            out_rounds=out["rounds"][rep],
            out_reports=out["reports"][rep],
            out_regions=out["regions"][rep],
        )
        evaluate_stage(
            run=run,
            cfg=cfg,
            seed=seed,
            partition_path=out["partition"][rep],
            regions_path=out["regions"][rep],
            out=out["evaluation"][rep],
        )


def classify_reps_stage(*, epsilon: float, reps: int, cfg: dict, seed: int, data_path: str, out: list) -> None:
    """Every rep of the classification study at one epsilon (``out``: one path per rep)."""
    for rep in range(reps):
        classify_stage(
            run={"task": "classify", "n": "all", "epsilon": epsilon, "rep": rep},
            cfg=cfg,
            seed=seed,
            data_path=data_path,
            out=out[rep],
        )


def protocol_config(cfg: dict, task: str) -> dict:
    """The config a run uses: the shared protocol settings plus its own task's section only."""
    return {**{k: cfg[k] for k in PROTOCOL_KEYS}, task: cfg[task]}


def check_data_paths(cfg: dict) -> None:
    """The real-data files the section names exist (checked before any job)."""
    for key, path in (("classify.path", (cfg["classify"] or {}).get("path")), ("range.path", cfg["range"]["path"])):
        if path and not Path(path).exists():
            raise SECTION.error(
                key, f"file {path!r} does not exist", "a path (absolute or relative to the working directory)"
            )


def summary_stage(*, paths: list[str], out_parquet: str, out_csv: str) -> None:
    STUDY.collect(paths, out_parquet=out_parquet, out_csv=out_csv)


def plot_stage(*, summary_path: str, out_png: str, dpi: int) -> None:
    """The study's figure: one panel per task the summary holds (mean estimation, range queries,
    classification, the k study), so a study without the classification data has no blank panels."""
    from .. import figures
    from ..figures import plt

    table = pd.read_parquet(summary_path)
    k_rows = table[(table["task"] == "classify") & table["metric"].isin(["precision", "recall"])]
    avg = table[~table["metric"].isin(["precision", "recall"])]
    # classification lines are mechanism/classifier; the other tasks have no classifier
    avg = avg.assign(method=avg["method"].where(avg["classifier"] == "", avg["method"] + "/" + avg["classifier"]))
    avg = avg.groupby(["task", "n", "epsilon", "method"])["value"].mean().reset_index()
    panels = [task for task in ("mean", "range", "classify") if (avg["task"] == task).any()]
    panels += ["k"] if not k_rows.empty else []
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 5.2), squeeze=False)
    axes = dict(zip(panels, axes[0], strict=True))
    if "k" in axes:
        ax = axes["k"]
        for metric, grp in k_rows.groupby("metric"):
            ax.plot(*zip(*grp.groupby("k")["value"].mean().items(), strict=True), "o-", label=metric)
        ax.set(
            xlabel="k, minimum users per region [users]",
            ylabel="random forest on the test set,\nmean [fraction]",
            title="SLDP hyperparameter k (App. A.1)",
        )
    if "classify" in axes:
        ax, classified = axes["classify"], avg[avg["task"] == "classify"]
        mechs = sorted({m.split("/")[0] for m in classified["method"]})
        kinds = sorted({m.split("/")[-1] for m in classified["method"]})
        for method, grp in classified.groupby("method"):
            mech, kind = method.split("/")[0], method.split("/")[-1]
            ax.plot(
                grp["epsilon"], grp["value"], ms=4, label=method, **_line_style(mechs.index(mech), kinds.index(kind))
            )
        ax.set(
            xscale="log",
            xlabel="epsilon [no unit]",
            ylabel="F1 on the test set [fraction]",
            title="California housing (§5.2)",
        )
    # Fig. 2: MSE vs N per epsilon; Fig. 4/9: MRE vs epsilon per N
    for task, x, line, xlabel, ylabel, title in (
        (
            "mean",
            "n",
            "epsilon",
            "users N [users]",
            "MSE of the mean of ||x||² [domain units⁴]",
            "mean estimation (Ex. 2.1, 2.2, 3.1)",
        ),
        ("range", "epsilon", "n", "epsilon [no unit]", "mean relative error [fraction]", "range queries (App. A.2)"),
    ):
        if task not in axes:
            continue
        ax, sub = axes[task], avg[avg["task"] == task].sort_values(x)
        methods, values = sorted(sub["method"].unique()), sorted(sub[line].unique())
        for (method, value), grp in sub.groupby(["method", line]):
            ax.plot(
                grp[x],
                grp["value"],
                ms=4,
                label=f"{method}, {'eps' if line == 'epsilon' else 'N'}={value:g}",
                **_line_style(methods.index(method), values.index(value)),
            )
        ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
        figures.log_ticks(ax, sub[x])  # ticked at the values run, written plainly
    for ax in axes.values():
        ax.grid(alpha=0.3)
        # below the panel: a legend of up to ~20 lines inside it would cover the data
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, frameon=False)
    fig.tight_layout()
    figures.save(fig, out_png, dpi)


# a panel holds up to ~20 lines: the colour names the method, the line style and marker the other key
_DASHES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "v", "D", "x")


def _line_style(method: int, other: int) -> dict:
    return {
        "color": f"C{method % 10}",
        "linestyle": _DASHES[other % len(_DASHES)],
        "marker": _MARKERS[other % len(_MARKERS)],
    }


def plot_partition(
    *, run: dict, cfg: dict, seed: int, regions_path: str, partition_path: str, out_png: str, dpi: int
) -> None:
    """[SLDP] Fig. 1: the private partition over the data, and what users release under SLDP
    (region centre + Laplace over the region, the task half of epsilon) vs LDP (Laplace over the
    whole box per coordinate, the whole epsilon)."""
    from .. import figures
    from ..figures import plt

    pts = client_points(run, cfg, seed)
    box = cfg["mean"]["box"] if run["task"] == "mean" else list(UNIT)
    rng = make_rng(seed, "sldp-figure-1", run["task"], run["n"], run["epsilon"], run["rep"])
    regions = pd.read_parquet(regions_path)
    cells = pd.read_parquet(partition_path)
    eps = run["epsilon"]
    sldp = classify.region_release(cell_box(regions["level"].to_numpy(), regions["code"].to_numpy(), box), eps / 2, rng)
    ldp = laplace_ldp.randomize(pts, np.reshape(box, (2, 2)), eps, rng)
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2), sharex=True, sharey=True)
    for ax, xy, title in (
        (axes[0], pts, f"data (N = {len(pts)}) and private partition ({len(cells)} cells)"),
        (axes[1], sldp, f"SLDP releases, eps = {eps:g}"),
        (axes[2], ldp, f"LDP releases, eps = {eps:g}"),
    ):
        ax.scatter(xy[:, 0], xy[:, 1], s=1, alpha=0.3)
        ax.set(title=title, xlim=box[:2], ylim=box[2:], aspect="equal", xlabel="x [domain units]")
    axes[0].set_ylabel("y [domain units]")
    for x0, x1, y0, y1 in cell_box(cells["level"].to_numpy(), cells["code"].to_numpy(), box):
        axes[0].add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, lw=0.4, color="k"))
    fig.tight_layout(w_pad=2.5)  # the shared axis's end ticks ("10", "-10") must not touch
    figures.save(fig, out_png, dpi)


STUDY = Study(
    name="sldp",
    validate=validate_config,
    runs=every_run,
    run_dir=run_dir,
    identity={"task": "str", "classifier": "str", "k": "float64"},
)
