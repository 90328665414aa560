"""The privacy-utility frontier, per trust model: every mechanism x setting judged by one adversary.

Per dataset and N, each mechanism x parameter setting (averaged over repetitions) is a point
(adversary's expected error, utility).  The privacy axis is the expected localisation error of one
adversary (Shokri et al. 2011; higher = more private), chosen by ``frontier.adversary``:

* ``informed`` (default): the DP neighbour model's adversary, which knows every other user's
  location and sees what the mechanism releases to the parties the user does not trust
  (``informed_expected_error``);
* ``population``: an adversary whose only background knowledge is the population prior
  (``bayes_expected_error``).

Mechanisms differ in whom the user must trust (``trust_model``: ``local`` trusts no one,
``distributed`` trusts secure aggregation not to collude, ``central`` trusts a curator with the raw
data, ``none`` has no privacy mechanism to trust), so they are ranked within their trust model
only.  A point is Pareto-optimal within its trust model if no other point of that model is at
least as private and at least as useful and strictly better in one.  For each privacy level L the
recommendation is the setting with the best utility among those whose adversary error is >= L:
"the most useful map that keeps an attacker at least L away on average".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import io, report_tables
from . import units as lpunits

# frontier.adversary -> the prefix of its metrics in the summary
ADVERSARIES = {"informed": "informed", "population": "bayes"}
ADVERSARY_NAMES = {
    "informed": "informed adversary (knows everyone else)",
    "population": "population adversary (knows the prior)",
}
PRIVACY = ("expected_error", "guess_error", "hit_r")
# utility metrics the frontier can use, and whether larger is better
UTILITIES = {"spearman": True, "hotspot_recall": True, "range_mre": False, "ise": False}
UTILITY_LABELS = {
    "spearman": "Spearman correlation with the true density [rank corr.]",
    "hotspot_recall": "recall of the true top-k cells [fraction]",
    "range_mre": "range-query mean relative error [fraction]",
    "ise": "integrated squared error [1/{u}²]",
}
TRUST_MODELS = ("local", "distributed", "central", "none")
TRUST_MARKERS = {"local": "o", "distributed": "s", "central": "D", "none": "^"}
TRUST_LINES = {"local": "-", "distributed": (0, (5, 2)), "central": (0, (1, 1.5)), "none": (0, (6, 2, 1, 2))}
LEVEL_STYLE = {"color": "0.55", "lw": 1.0, "ls": (0, (4, 3)), "zorder": 1}
DEFAULTS = {
    "utility": "spearman",
    "adversary": "informed",
    "levels": {"synthetic": [0.1, 0.25, 0.5], "real": [250, 500, 1000]},
}
TABLE_COLUMNS = [
    "dataset",
    "n",
    "trust_model",
    "row",
    "level",
    "mechanism",
    "setting",
    "utility_metric",
    "utility",
    "adversary",
    *PRIVACY,
    "distance_unit",
    "reps",
    "note",
]
# parameters that are the privacy budget: always part of a setting's name, first
BUDGET = ("epsilon", "delta", "B")
SYMBOLS = {"epsilon": "ε", "delta": "δ"}
NO_SETTING = "no setting of this trust model keeps the adversary's expected error at or above the level"


def settings(config: dict) -> dict:
    given = config.get("frontier", {})
    return {
        "utility": given.get("utility", DEFAULTS["utility"]),
        "adversary": given.get("adversary", DEFAULTS["adversary"]),
        "levels": {**DEFAULTS["levels"], **given.get("levels", {})},
    }


def dataset_levels(datasets: dict, levels: dict, domains: dict) -> dict[str, dict]:
    """Absolute privacy levels per dataset, in its distance units, keyed by what they mean.

    Synthetic data: ``levels.synthetic`` are fractions of the domain's shorter side
    ({"10 % of side": 0.6, ...}); real data in a length unit: ``levels.real`` are metres,
    converted to the dataset's unit by ``locpriv.sanity.privacy_levels`` ({"250 m": 0.25} for
    data in km); real data without a length unit: the fractions, as for synthetic data.
    ``domains`` maps each dataset to its Domain.  Values are rounded to 12 significant digits
    (0.6, not 0.6000000000000001).
    """
    from .sanity import distance_unit, privacy_levels

    out = {}
    for name, spec in datasets.items():
        values = privacy_levels(spec, domains[name], levels)
        if spec["source"] == "synthetic" or distance_unit(spec) is None:
            labels = [f"{f * 100:g} % of side" for f in levels["synthetic"]]
        else:
            labels = [f"{v:g} m" for v in levels["real"]]
        out[name] = {label: float(f"{v:.12g}") for label, v in zip(labels, values, strict=True)}
    return out


def _value(v) -> str | None:
    """A parameter value as written in a setting: numbers plainly (2, not 2.0), missing as None."""
    if v is None or (isinstance(v, str) and v == "") or (not isinstance(v, str) and pd.isna(v)):
        return None
    try:
        return f"{float(v):g}"
    except (TypeError, ValueError):
        return str(v)


def _n_key(n) -> tuple:
    try:
        return (0, float(n), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(n))


def _n_value(n):
    """N as an integer where it is one (a typed 1000.0 or a string "1000"), else as given ("all")."""
    try:
        f = float(n)
    except (TypeError, ValueError):
        return n
    return int(f) if f.is_integer() else f


def _settings(runs: pd.DataFrame, params: list[str]) -> tuple[pd.Series, pd.Series]:
    """Each run's setting ("epsilon=2, estimator=naive") and its short label for figures ("ε=2, naive").

    A setting names the privacy budget (epsilon, delta, B) and the parameters that differ between
    the mechanism's runs; values every run of the mechanism shares (defaults) are left out.
    """
    setting, label = pd.Series("", index=runs.index), pd.Series("", index=runs.index)
    for _, group in runs.groupby("mechanism", sort=False):
        values = group[params].map(_value) if params else group[[]]
        varied = [p for p in params if values[p].nunique(dropna=False) > 1]
        shown = [p for p in BUDGET if p in params and values[p].notna().any()]
        shown += sorted(p for p in varied if p not in shown)
        for idx, row in values.iterrows():
            items = [(p, row[p]) for p in shown if row[p] is not None]
            setting[idx] = ", ".join(f"{p}={v}" for p, v in items)
            # a word value names itself ("naive"); a number needs its parameter ("B=8", "ε=2")
            label[idx] = ", ".join(
                v if p not in BUDGET and not _is_number(v) else f"{SYMBOLS.get(p, p)}={v}" for p, v in items
            )
    return setting, label


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def points(summary: pd.DataFrame, utility: str, adversary: str = "informed") -> pd.DataFrame:
    """One row per dataset x n x mechanism x setting: the metrics' means over repetitions.

    Columns: dataset, n, trust_model, mechanism, setting, label, the utility, expected_error,
    guess_error, hit_r (of ``adversary``) and reps.  Runs whose query was refused (no utility or no
    adversary error) are left out.  A summary without the adversary's metrics or without
    ``trust_model`` is refused with the fix.
    """
    prefix = ADVERSARIES[adversary]
    metrics = {utility: utility, **{f"{prefix}_{p}": p for p in PRIVACY}}
    if f"{prefix}_expected_error" not in set(summary["metric"]):
        raise ValueError(
            f"no {prefix}_expected_error metric, which frontier.adversary: {adversary} ranks by; "
            f"re-run the attack stage with this version, or set frontier.adversary: "
            f"{'population' if adversary == 'informed' else 'informed'}"
        )
    if "trust_model" not in summary.columns:
        raise ValueError(
            "no trust_model column: the summary was made by an older version; "
            "delete results/summary/metrics.parquet and run the workflow again"
        )
    unknown = summary.loc[~summary["trust_model"].isin(TRUST_MODELS), "mechanism"].unique()
    if len(unknown):
        raise ValueError(
            f"trust_model is not one of {', '.join(TRUST_MODELS)} for mechanism(s) "
            f"{', '.join(sorted(unknown))}: each mechanism must declare whom its users trust"
        )
    fixed = {"dataset", "mechanism", "rep", "metric", "value", "n", "trust_model"}
    params = sorted(c for c in summary.columns if c not in fixed and not c.startswith("guarantee_"))
    key = ["dataset", "n", "trust_model", "mechanism", *params]
    rows = summary[summary["metric"].isin(list(metrics))]
    wide = (
        rows.set_index([*key, "rep", "metric"])["value"]
        .unstack("metric")
        .rename(columns=metrics)
        .reset_index()
        .rename_axis(columns=None)
    )
    grouped = wide.groupby(key, sort=False, dropna=False)
    out = grouped[[m for m in metrics.values() if m in wide]].mean()
    out["reps"] = grouped["rep"].nunique()
    out = out.reset_index().dropna(subset=[utility, "expected_error"])
    out["setting"], out["label"] = _settings(out, params)
    out["n"] = out["n"].map(_n_value)
    out = out[
        [
            "dataset",
            "n",
            "trust_model",
            "mechanism",
            "setting",
            "label",
            utility,
            *PRIVACY[:1],
            *[p for p in PRIVACY[1:] if p in out],
            "reps",
        ]
    ]
    order = out.assign(_n=out["n"].map(_n_key), _t=out["trust_model"].map(TRUST_MODELS.index))
    return out.loc[order.sort_values(["dataset", "_n", "_t", "mechanism", "setting"]).index].reset_index(drop=True)


def pareto_mask(privacy: np.ndarray, utility: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """True where no other point has privacy >= and utility >= (better-or-equal) with one strict."""
    p = np.asarray(privacy, dtype=float)
    u = np.asarray(utility, dtype=float) * (1.0 if higher_is_better else -1.0)
    ge = (p[None, :] >= p[:, None]) & (u[None, :] >= u[:, None])
    gt = (p[None, :] > p[:, None]) | (u[None, :] > u[:, None])
    return ~(ge & gt).any(axis=1)


def _groups(pts: pd.DataFrame):
    """(dataset, n, its points) in dataset and numeric-N order."""
    keys = sorted({(d, n) for d, n in zip(pts["dataset"], pts["n"], strict=True)}, key=lambda k: (k[0], _n_key(k[1])))
    for dataset, n in keys:
        yield dataset, n, pts[(pts["dataset"] == dataset) & (pts["n"] == n)]


def _front(group: pd.DataFrame, utility: str) -> pd.DataFrame:
    return group[pareto_mask(group["expected_error"], group[utility], UTILITIES[utility])].sort_values(
        ["expected_error", utility]
    )


def table(
    pts: pd.DataFrame,
    utility: str,
    levels: dict[str, dict],
    adversary: str = "informed",
    units: dict[str, str] | None = None,
) -> pd.DataFrame:
    """``frontier.csv``: per dataset, n and trust model, the Pareto-optimal settings (row = pareto)
    and, per privacy level, the best-utility setting with adversary error >= level
    (row = best_at_level).  When no setting of a trust model reaches a level its row keeps the
    level, leaves mechanism, setting and the metrics empty and says so in ``note``."""
    higher = UTILITIES[utility]
    units = units or {}
    rows = []
    for dataset, n, group in _groups(pts):
        unit = lpunits.name(units.get(dataset, ""))
        for trust in [t for t in TRUST_MODELS if t in set(group["trust_model"])]:
            part = group[group["trust_model"] == trust]
            base = {"dataset": dataset, "n": n, "trust_model": trust, "distance_unit": unit, "note": ""}
            rows += [{**r, **base, "row": "pareto", "level": np.nan} for r in _front(part, utility).to_dict("records")]
            for level in levels.get(dataset, {}).values():
                ok = part[part["expected_error"] >= level]
                if ok.empty:
                    rows.append(
                        {
                            **base,
                            "row": "best_at_level",
                            "level": level,
                            "mechanism": "",
                            "setting": "",
                            "note": NO_SETTING,
                        }
                    )
                    continue
                # best utility; among equals the more private, then by name (a stable choice)
                best = ok.sort_values(
                    [utility, "expected_error", "mechanism", "setting"], ascending=[not higher, False, True, True]
                ).iloc[0]
                rows.append({**best.to_dict(), **base, "row": "best_at_level", "level": level})
    out = pd.DataFrame(rows, columns=[c for c in TABLE_COLUMNS if c not in ("utility", "utility_metric")] + [utility])
    out["utility"] = out.pop(utility)
    out["utility_metric"] = utility
    out["adversary"] = adversary
    out["reps"] = out["reps"].astype("Int64")
    return out[TABLE_COLUMNS]


def recommendation(frontier_table: pd.DataFrame, levels: dict[str, dict]) -> pd.DataFrame:
    """The decision at a glance: one row per dataset x N x privacy level, one column per trust model.

    A cell is (mechanism and setting, "utility u · error e") for the recommended setting, or
    ("—", "none reaches this level") where no setting of that trust model does.
    """
    best = frontier_table[frontier_table["row"] == "best_at_level"]
    names = {(d, v): label for d, lv in levels.items() for label, v in lv.items()}
    trusts = [t for t in TRUST_MODELS if t in set(best["trust_model"])]
    rows = []
    for (dataset, n, level), part in best.groupby(["dataset", "n", "level"], sort=False):
        unit = part["distance_unit"].iloc[0]
        meaning = names.get((dataset, level))
        row = {
            "dataset": dataset,
            "N": n,
            "adversary's expected error at least": (f"{level:.4g} {unit}", meaning or ""),
        }
        for trust in trusts:
            cell = part[part["trust_model"] == trust]
            if cell.empty:
                row[trust] = ""
            elif not cell["mechanism"].iloc[0]:
                row[trust] = ("—", "none reaches this level")
            else:
                r = cell.iloc[0]
                # no-break spaces keep each number with its name when the cell wraps
                row[trust] = (
                    f"{r['mechanism']} {r['setting']}".strip(),
                    f"{r['utility_metric']}\u00a0{r['utility']:.3f} · error\u00a0{r['expected_error']:.3g}",
                )
        rows.append(row)
    return pd.DataFrame(rows, columns=["dataset", "N", "adversary's expected error at least", *trusts])


def plot(
    pts: pd.DataFrame,
    utility: str,
    levels: dict[str, dict],
    units: dict[str, str],
    out_png: str,
    dpi: int = 110,
    adversary: str = "informed",
) -> None:
    """One panel per dataset x n: every setting a marker (colour: mechanism, shape: trust model)
    labelled with its setting, the Pareto front of each trust model a black step line (drawn from
    the panel's left edge, so a one-point front shows), the privacy levels grey verticals."""
    from . import figures  # matplotlib: here, not at the top (the Snakefile imports this module)

    fig = figure(pts, utility, levels, units, dpi, adversary)
    figures.save(fig, out_png, dpi)


def figure(
    pts: pd.DataFrame,
    utility: str,
    levels: dict[str, dict],
    units: dict[str, str],
    dpi: int = 110,
    adversary: str = "informed",
):
    """The frontier figure (see :func:`plot`), not yet saved."""
    from . import figures

    plt = figures.plt
    colours = figures.colours(pts["mechanism"])
    panels = list(_groups(pts))
    datasets = sorted({d for d, _, _ in panels})
    per_row = {d: [g for g in panels if g[0] == d] for d in datasets}
    cols = max((len(v) for v in per_row.values()), default=1)
    fig, axes = plt.subplots(
        len(datasets) or 1,
        cols,
        figsize=(6.6 * cols + 3.4, 5.4 * max(len(datasets), 1)),
        squeeze=False,
        dpi=dpi,
        layout="constrained",
    )
    level_names, drawn = [], []
    for r, dataset in enumerate(datasets):
        unit = lpunits.long_name(units.get(dataset, ""))
        for c in range(cols):
            ax = axes[r, c]
            if c >= len(per_row[dataset]):
                fig.delaxes(ax)
                continue
            _, n, group = per_row[dataset][c]
            top = max([group["expected_error"].max(), *levels.get(dataset, {}).values()])
            ax.set_xlim(-0.02 * top, 1.06 * top)
            _panel(ax, group, utility, colours)
            drawn.append((ax, group))
            for name, level in levels.get(dataset, {}).items():
                if name not in level_names:
                    level_names.append(name)
                tag = f"L{level_names.index(name) + 1}"  # named in the legend
                ax.axvline(level, **LEVEL_STYLE)
                ax.annotate(
                    tag,
                    (level, 1),
                    xycoords=("data", "axes fraction"),
                    xytext=(2, -2),
                    textcoords="offset points",
                    ha="left",
                    va="top",
                    fontsize=8,
                    color="0.35",
                )
            ax.set_title(f"{dataset}, N = {n}", fontsize=11)
            ax.set_xlabel(
                f"{ADVERSARY_NAMES[adversary].split(' (')[0]}'s expected error [{unit}]  (more private →)", fontsize=9
            )
            ax.set_ylabel(
                UTILITY_LABELS[utility].format(u=unit) + f"  ({'higher' if UTILITIES[utility] else 'lower'} is better)",
                fontsize=9,
            )
            ax.grid(alpha=0.3)
    fig.legend(handles=_legend(pts, colours, level_names), loc="outside right upper", fontsize=9, frameon=False)
    # labels go where the final layout leaves room: fix the layout, then place them
    fig.canvas.draw()
    fig.set_layout_engine("none")
    for ax, group in drawn:
        figures.place_labels(ax, group["expected_error"], group[utility], list(group["label"]), obstacles=ax.texts)
    return fig


def _panel(ax, group: pd.DataFrame, utility: str, colours: dict) -> None:
    """One dataset x N: the points, each trust model's front (the x limits already set)."""
    left = ax.get_xlim()[0]
    for trust in [t for t in TRUST_MODELS if t in set(group["trust_model"])]:
        part = group[group["trust_model"] == trust]
        front = _front(part, utility)
        on_front = part.index.isin(front.index)
        for mech, g in part.groupby("mechanism"):
            sel = on_front[part.index.get_indexer(g.index)]
            ax.scatter(
                g["expected_error"],
                g[utility],
                s=46,
                marker=TRUST_MARKERS[trust],
                color=colours[mech],
                edgecolors=np.where(sel, "black", "white"),
                linewidths=np.where(sel, 1.4, 0.5),
                zorder=3,
            )
        # between two front points the best utility at error >= x is the right one's ("pre"); left of
        # the first point it is the first point's, so the line starts at the panel's edge
        xs = np.r_[left, front["expected_error"].to_numpy()]
        ys = np.r_[front[utility].iloc[0], front[utility].to_numpy()]
        ax.step(xs, ys, where="pre", color="black", lw=1.3, ls=TRUST_LINES[trust], zorder=2)


def _legend(pts: pd.DataFrame, colours: dict, level_names: list[str]) -> list:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def header(text):
        return Line2D([], [], ls="none", label=text)

    trusts = [t for t in TRUST_MODELS if t in set(pts["trust_model"])]
    by_trust = {t: sorted(set(pts.loc[pts["trust_model"] == t, "mechanism"])) for t in trusts}
    handles = [header("mechanism (colour)")]
    for trust in trusts:
        handles += [Patch(color=colours[m], label=f"{m}") for m in by_trust[trust]]
    handles += [header(""), header("trust model (marker)")]
    handles += [Line2D([], [], ls="none", marker=TRUST_MARKERS[t], color="0.3", ms=8, label=t) for t in trusts]
    handles += [header(""), header("Pareto front of (line)")]
    handles += [Line2D([], [], color="black", lw=1.3, ls=TRUST_LINES[t], label=t) for t in trusts]
    handles += [
        Line2D([], [], ls="none", marker="o", color="0.8", mec="black", mew=1.4, ms=8, label="setting on its front")
    ]
    if level_names:
        handles += [header(""), header("privacy level: error at least")]
        handles += [Line2D([], [], **LEVEL_STYLE, label=f"L{k + 1}: {name}") for k, name in enumerate(level_names)]
    return handles


def frontier(
    *,
    summary_parquet: str,
    cfg: dict,
    levels: dict[str, dict],
    units: dict[str, str],
    dpi: int,
    out_csv: str,
    out_png: str,
    out_html: str,
    out_recommendation: str,
) -> None:
    utility, adversary = cfg["utility"], cfg["adversary"]
    try:
        pts = points(pd.read_parquet(summary_parquet), utility, adversary)
    except ValueError as exc:
        raise ValueError(f"{summary_parquet}: {exc}") from None
    out = table(pts, utility, levels, adversary, units)
    rec = recommendation(out, levels)
    with io.atomic_path(out_csv) as tmp:
        out.to_csv(tmp, index=False, float_format="%.6g")
    adversary_name = ADVERSARY_NAMES[adversary].split(" (")[0]
    report_tables.write_html(
        rec,
        out_recommendation,
        fragment=True,
        title=f"The most useful setting per trust model and privacy level (utility: {utility}; "
        f"privacy: the {adversary_name}'s expected error)",
    )
    report_tables.write_html(out, out_html, title="The privacy-utility frontier (frontier.csv)")
    plot(pts, utility, levels, units, out_png, dpi, adversary)
