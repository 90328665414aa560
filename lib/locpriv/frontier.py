"""The privacy-utility frontier: every mechanism x setting judged by one adversary.

Per dataset and N, each mechanism x parameter setting (averaged over repetitions)
is a point (``bayes_expected_error``, utility): the Bayes adversary's expected
localisation error (Shokri et al. 2011; higher = more private) against a utility
score.  A point is Pareto-optimal if no other point is at least as private and at
least as useful and strictly better in one.  For each privacy level L the
recommendation is the setting with the best utility among those whose adversary
error is >= L: "the most useful map that keeps an attacker at least L away on
average".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import io

PRIVACY = "bayes_expected_error"
# utility metrics the frontier can use, and whether larger is better
UTILITIES = {"spearman": True, "hotspot_recall": True, "range_mre": False, "ise": False}
DEFAULTS = {"utility": "spearman", "levels": {"synthetic": [0.1, 0.25, 0.5], "real": [250, 500, 1000]}}
TABLE_COLUMNS = ["dataset", "n", "row", "level", "mechanism", "setting", "utility_metric", "utility", PRIVACY,
                 "bayes_guess_error", "bayes_hit_r", "reps"]


def settings(config: dict) -> dict:
    given = config.get("frontier", {})
    return {"utility": given.get("utility", DEFAULTS["utility"]),
            "levels": {**DEFAULTS["levels"], **given.get("levels", {})}}


def dataset_levels(datasets: dict, levels: dict, domains: dict) -> dict[str, list[float]]:
    """Absolute privacy levels per dataset, in its distance units.

    Synthetic data: ``levels.synthetic`` are fractions of the domain's shorter side;
    real data: ``levels.real`` are distances in the dataset's units (metres for lon/lat data).
    ``domains`` maps each dataset to its Domain.
    """
    return {name: ([f * domains[name].inscribed_square for f in levels["synthetic"]]
                   if spec["source"] == "synthetic" else [float(v) for v in levels["real"]])
            for name, spec in datasets.items()}


def points(summary: pd.DataFrame, utility: str) -> pd.DataFrame:
    """One row per dataset x n x mechanism x setting: the metrics' means over repetitions.

    ``setting`` is the run's parameters other than n ("k=v, ..."); runs whose query was
    refused (no utility or no adversary error) are left out.
    """
    fixed = {"dataset", "mechanism", "trust_model", "rep", "metric", "value", "n"}
    params = sorted(c for c in summary.columns if c not in fixed and not c.startswith("guarantee_"))
    table = summary.copy()
    # typed columns: a parameter the mechanism lacks is missing; numbers print as the config wrote them
    table["setting"] = table[params].astype(object).apply(
        lambda row: ", ".join(f"{k}={v}" for k, v in row.items() if not pd.isna(v)), axis=1) if params else ""
    key = ["dataset", "n", "mechanism", "setting"]
    metrics = [utility, PRIVACY, "bayes_guess_error", "bayes_hit_r"]
    wide = (table[table["metric"].isin(metrics)]
            .pivot_table(index=[*key, "rep"], columns="metric", values="value", aggfunc="first")
            .reset_index())
    grouped = wide.groupby(key, sort=True)
    out = grouped[[m for m in metrics if m in wide]].mean()
    out["reps"] = grouped["rep"].nunique()
    out = out.reset_index().dropna(subset=[utility, PRIVACY])
    out["n"] = out["n"].astype(str)
    return out.sort_values(key, ignore_index=True)


def pareto_mask(privacy: np.ndarray, utility: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """True where no other point has privacy >= and utility >= (better-or-equal) with one strict."""
    p = np.asarray(privacy, dtype=float)
    u = np.asarray(utility, dtype=float) * (1.0 if higher_is_better else -1.0)
    ge = (p[None, :] >= p[:, None]) & (u[None, :] >= u[:, None])
    gt = (p[None, :] > p[:, None]) | (u[None, :] > u[:, None])
    return ~(ge & gt).any(axis=1)


def table(pts: pd.DataFrame, utility: str, levels: dict[str, list[float]]) -> pd.DataFrame:
    """``frontier.csv``: per dataset and n, the Pareto-optimal settings (row = pareto) and, per
    privacy level, the best-utility setting with adversary error >= level (row = best_at_level;
    mechanism empty when no setting reaches the level)."""
    higher = UTILITIES[utility]
    rows = []
    for (dataset, n), group in pts.groupby(["dataset", "n"], sort=True):
        group = group.reset_index(drop=True)
        front = group[pareto_mask(group[PRIVACY], group[utility], higher)].sort_values(PRIVACY)
        rows += [{**r, "row": "pareto", "level": np.nan} for r in front.to_dict("records")]
        for level in levels.get(dataset, []):
            ok = group[group[PRIVACY] >= level]
            if ok.empty:
                rows.append({"dataset": dataset, "n": n, "row": "best_at_level", "level": level,
                             "mechanism": "", "setting": "no setting keeps the adversary this far"})
                continue
            best = ok.loc[ok[utility].idxmax() if higher else ok[utility].idxmin()]
            rows.append({**best.to_dict(), "row": "best_at_level", "level": level})
    out = pd.DataFrame(rows, columns=[c for c in TABLE_COLUMNS if c != "utility_metric"] + [utility])
    out["utility"] = out.pop(utility)
    out["utility_metric"] = utility
    return out[TABLE_COLUMNS]


def plot(pts: pd.DataFrame, utility: str, levels: dict[str, list[float]], units: dict[str, str],
         out_png: str, dpi: int = 110) -> None:
    """One panel per dataset x n: every setting a dot coloured by mechanism, the Pareto front a
    black step line, the privacy levels dashed verticals."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    higher = UTILITIES[utility]
    mechs = sorted(pts["mechanism"].unique())
    colours = dict(zip(mechs, plt.get_cmap("tab20" if len(mechs) > 10 else "tab10").colors))
    panels = sorted({(d, n) for d, n in zip(pts["dataset"], pts["n"])},
                    key=lambda k: (k[0], float("inf") if k[1] == "all" else float(k[1])))
    datasets = sorted({d for d, _ in panels})
    ns = {d: [n for dd, n in panels if dd == d] for d in datasets}
    cols = max(len(v) for v in ns.values())
    fig, axes = plt.subplots(len(datasets), cols, figsize=(4.6 * cols + 2.2, 3.8 * len(datasets)),
                             squeeze=False, constrained_layout=True)
    for r, dataset in enumerate(datasets):
        for c in range(cols):
            ax = axes[r, c]
            if c >= len(ns[dataset]):
                ax.set_axis_off()
                continue
            n = ns[dataset][c]
            group = pts[(pts["dataset"] == dataset) & (pts["n"] == n)]
            for mech, g in group.groupby("mechanism"):
                ax.scatter(g[PRIVACY], g[utility], s=28, color=colours[mech], label=mech, zorder=3)
            front = group[pareto_mask(group[PRIVACY], group[utility], higher)].sort_values(PRIVACY)
            # "pre": between two front points the best utility at error >= x is the right one's
            ax.step(front[PRIVACY], front[utility], where="pre", color="black",
                    lw=1.2, zorder=2, label="Pareto front")
            for level in levels.get(dataset, []):
                ax.axvline(level, color="grey", ls="--", lw=0.8, zorder=1)
            ax.set_title(f"{dataset}, N = {n}", fontsize=10)
            ax.set_xlabel(f"Bayes adversary's expected error [{units.get(dataset, '')}]  (more private →)",
                          fontsize=8)
            ax.set_ylabel(f"{utility} ({'higher' if higher else 'lower'} is better)", fontsize=8)
            ax.grid(alpha=0.3)
    handles = {}
    for ax in axes.ravel():
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(handles.values(), handles.keys(), loc="outside right upper", fontsize=8)
    with io.atomic_path(out_png) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png")
    plt.close(fig)


def frontier(summary_parquet: str, cfg: dict, levels: dict[str, list[float]], units: dict[str, str],
             dpi: int, out_csv: str, out_png: str) -> None:
    utility = cfg["utility"]
    pts = points(pd.read_parquet(summary_parquet), utility)
    with io.atomic_path(out_csv) as tmp:
        table(pts, utility, levels).to_csv(tmp, index=False, float_format="%.6g")
    plot(pts, utility, levels, units, out_png, dpi)
