"""Figures for the report; they read the summary table (and, for surfaces, the NetCDF estimates)."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pandas as pd

from . import figures, io, units
from .figures import plt
from .frontier import ADVERSARIES, ADVERSARY_NAMES
from .stages.metrics import per_run


def save_figure(fig, path, settings):
    figures.save(fig, path, int(settings.get("dpi", 110)))


def _no_data(out_png: str, settings: dict, what: str) -> None:
    """A figure saying why there is nothing to plot (e.g. every query refused), instead of a crash."""
    fig, ax = plt.subplots(figsize=(5, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, f"no data to plot: {what}", ha="center", va="center", wrap=True)
    save_figure(fig, out_png, settings)


def _variants(wide: pd.DataFrame, params: list[str]) -> pd.Series:
    """Each run's label: its mechanism and the parameters that vary among that mechanism's runs
    (defaults every run shares would only lengthen the legend)."""

    def label(group):
        varied = [p for p in params if p != "n" and group[p].map(_plain).nunique() > 1]
        return group.apply(
            lambda row: (
                row["mechanism"] + (" (" + ", ".join(f"{p}={_plain(row[p])}" for p in varied) + ")" if varied else "")
            ),
            axis=1,
        )

    return pd.concat([label(group) for _, group in wide.groupby("mechanism", sort=False)]).reindex(wide.index)


def _plain(v) -> str:
    """A parameter value as a reader writes it: 2, not 2.0; nothing for a missing one."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):  # NaN, or pd.NA in a nullable integer column
        return ""
    try:
        return f"{float(v):g}"
    except (TypeError, ValueError):
        return str(v)


def wide_metrics(summary_path: str) -> tuple[pd.DataFrame, list[str]]:
    """The tidy summary as one row per run (metrics as columns) and its parameter columns."""
    wide, columns = per_run(pd.read_parquet(summary_path))
    # the guarantee's text columns and the trust model describe a run, they are not settings to tell runs apart by
    return wide.dropna(subset=["answered"]), [
        c for c in columns if not c.startswith("guarantee_") and c != "trust_model"
    ]


def _natural(text: str) -> list:
    """Sort key reading numbers as numbers: "epsilon=4" before "epsilon=16"."""
    return [
        (0, float(part), "") if part and part[0].isdigit() else (1, 0.0, part)
        for part in re.split(r"(\d+(?:\.\d+)?)", text)
    ]


def _shared_unit(settings: dict, datasets) -> str:
    """The datasets' common distance unit for an axis label ("distance units" when they differ)."""
    names = {units.long_name(settings.get("units", {}).get(ds, "")) for ds in datasets}
    return names.pop() if len(names) == 1 else "distance units"


def metrics_vs_n(*, summary_path: str, out_png: str, settings: dict) -> None:
    """Utility and the adversary's error per mechanism setting, at each number of users N.

    One row per mechanism setting (a dot plot, not a line per setting: with two or three N values
    18 lines lie on top of each other), its N values as markers joined by a line: open the smallest
    N, filled and larger the bigger ones.  Left: Spearman with the truth; right: the frontier's
    adversary's expected error (``settings["adversary"]``).
    """
    wide, params = wide_metrics(summary_path)
    if wide.empty:
        return _no_data(out_png, settings, "the summary holds no runs")
    adversary = settings.get("adversary", "informed")
    privacy = f"{ADVERSARIES[adversary]}_expected_error"
    if privacy not in wide:
        raise ValueError(
            f"{summary_path}: no {privacy} metric for the privacy column (frontier.adversary: "
            f"{adversary}); re-run the attack stage with this version"
        )
    wide["variant"] = _variants(wide, params)
    datasets = sorted(wide["dataset"].unique())
    colours = figures.mechanism_colours(wide["mechanism"])
    variants = sorted(wide["variant"].unique(), key=_natural)
    ns = sorted(wide["n_users"].unique())
    sizes = dict(zip(ns, np.linspace(30, 70, len(ns)), strict=True))
    height = 0.26 * len(variants) + 1.4
    fig, axes = plt.subplots(
        len(datasets), 2, figsize=(13, height * len(datasets)), squeeze=False, sharey=True, layout="constrained"
    )
    rows = {v: k for k, v in enumerate(variants)}
    for row, ds in zip(axes, datasets, strict=True):
        sub = wide[wide["dataset"] == ds]
        unit = units.long_name(settings.get("units", {}).get(ds, ""))
        for ax, col in zip(row, ("spearman", privacy), strict=True):
            for variant, grp in sub.groupby("variant", sort=False):
                mean = grp.groupby("n_users")[col].mean().sort_index()
                y = np.full(len(mean), rows[variant])
                colour = colours[grp["mechanism"].iloc[0]]
                ax.plot(mean.to_numpy(), y, "-", color=colour, lw=1.4, zorder=2)
                for n, v in mean.items():
                    ax.scatter(
                        [v],
                        [rows[variant]],
                        s=sizes[n],
                        zorder=3,
                        color=colour,
                        facecolor="white" if n == ns[0] and len(ns) > 1 else colour,
                        linewidths=1.4,
                    )
            ax.grid(axis="x", alpha=0.3)
            ax.set_yticks(range(len(variants)), variants, fontsize=9)
            ax.set_ylim(len(variants) - 0.5, -0.5)
        row[0].set(title=f"{ds}: utility")
        row[0].set_xlabel("Spearman correlation with the true density [rank corr.]\n(higher is better)")
        row[1].set(title=f"{ds}: privacy against the {ADVERSARY_NAMES[adversary].split(' (')[0]}")
        row[1].set_xlabel(f"expected error in locating a user [{unit}]  (more private →)")
    from matplotlib.lines import Line2D

    handles = [
        Line2D(
            [],
            [],
            ls="none",
            marker="o",
            ms=np.sqrt(sizes[n]),
            color="0.3",
            mfc="white" if k == 0 and len(ns) > 1 else "0.3",
            label=f"N = {n:g}",
        )
        for k, n in enumerate(ns)
    ]
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncols=len(ns),
        fontsize=9,
        frameon=False,
        title="users (marker)",
        title_fontsize=9,
    )
    save_figure(fig, out_png, settings)


SURFACE_COLUMNS = 4
# A released partition can put most of its mass in a few tiny cells whose density dwarfs the rest,
# which a min-max scale paints black everywhere else; each panel's scale stops at this quantile.
ROBUST_QUANTILE = 0.99


def _robust_max(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    top = float(np.quantile(finite, ROBUST_QUANTILE)) if finite.size else 0.0
    return top if top > 0 else float(finite.max(initial=0.0)) or 1.0


def surfaces(*, truth_path: str, estimate_paths: list[str], labels: list[str], out_png: str, settings: dict) -> None:
    """True density beside each mechanism's estimate, a grid of panels with one colour bar each.

    Each panel's colours run from 0 to its own 99th percentile (values above are drawn in the top
    colour), so a map whose mass sits in a few small cells still shows its structure; panels are
    compared by shape, the colour bars give the values (density per squared distance unit).
    """
    truth = io.read_netcdf(truth_path)["density"]
    panels = [("truth", truth)] + [
        (lab, io.read_netcdf(p)["density"]) for lab, p in zip(labels, estimate_paths, strict=True)
    ]
    ncol = min(SURFACE_COLUMNS, len(panels))
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.9 * ncol, 3.7 * nrow), squeeze=False)
    extent = [float(truth.x[0]), float(truth.x[-1]), float(truth.y[0]), float(truth.y[-1])]
    unit = units.name(truth.x.attrs.get("units", ""))
    per_area = "1/m²" if unit == "m" else f"per squared {unit.removesuffix('s')}"
    for k, (ax, (label, da)) in enumerate(zip(axes.ravel(), panels, strict=False)):  # the last row may have spare axes
        values = np.asarray(da.values, dtype=float)
        if not np.isfinite(values).any():  # a refused query: no estimate to draw
            ax.text(0.5, 0.5, "no estimate\n(query refused)", ha="center", va="center", transform=ax.transAxes)
            ax.axis("off")
        else:
            im = ax.imshow(
                values.T,
                origin="lower",
                extent=extent,
                cmap=settings.get("cmap", "viridis"),
                vmin=0.0,
                vmax=_robust_max(values),
                aspect="equal",
            )
            bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03, extend="max")
            bar.ax.tick_params(labelsize=8)
            bar.set_label(f"density [{per_area}]", fontsize=8)
        ax.set_title(textwrap.fill(label, 34), fontsize=9)
        ax.tick_params(labelsize=8)
        # every map has the same extent: coordinates on the left column and the lowest map of each column
        col = k % ncol
        if col == 0:
            ax.set_ylabel(f"y [{units.long_name(unit)}]", fontsize=8)
        else:
            ax.tick_params(labelleft=False)
        if k + ncol >= len(panels):
            ax.set_xlabel(f"x [{units.long_name(unit)}]", fontsize=8)
        else:
            ax.tick_params(labelbottom=False)
    for ax in axes.ravel()[len(panels) :]:
        fig.delaxes(ax)
    fig.tight_layout()
    save_figure(fig, out_png, settings)


# [RFF-KDE] scores utility against the same users' non-private KDE (§4.2.1).
UTILITY = "spearman_pooled"


def _mean_by(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """Mean utility and Z over repetitions, per value of ``key`` (numeric order)."""
    out = frame.assign(_k=pd.to_numeric(frame[key])).groupby("_k")[[UTILITY, "privacy_Z"]].mean()
    return out.sort_index()


# the line styles of one mechanism's curves over another swept parameter (its colour is fixed)
CURVE_STYLES = ("-", "--", ":", "-.")


def tradeoff(*, summary_path: str, out_png: str, settings: dict) -> None:
    """[RFF-KDE] Fig. 10-12: Spearman against privacy score Z, one panel per dataset and N.

    RFF is a curve over B and GeoInd a curve over epsilon (answered runs only);
    exact federated KDE and the 0-feature baseline are reference points.
    """
    wide, params = wide_metrics(summary_path)
    wide = wide[wide["answered"] == 1]
    if wide.empty:
        return _no_data(out_png, settings, "no run was answered (every user refused every query)")
    cells = sorted({(ds, n) for ds, n in zip(wide["dataset"], wide["n_users"], strict=True)})
    datasets = sorted({ds for ds, _ in cells})
    ncol = max(sum(1 for ds2, _ in cells if ds2 == ds) for ds in datasets)
    fig, axes = plt.subplots(
        len(datasets), ncol, figsize=(4.6 * ncol + 3.2, 4.0 * len(datasets)), squeeze=False, layout="constrained"
    )
    labels = []  # (axes, x, y, text, colour): placed once the layout is final
    colours = figures.mechanism_colours(wide["mechanism"])
    for r, ds in enumerate(datasets):
        ns = [n for ds2, n in cells if ds2 == ds]
        unit = units.long_name(settings.get("units", {}).get(ds, ""))
        for c, ax in enumerate(axes[r]):
            if c >= len(ns):
                fig.delaxes(ax)
                continue
            sub = wide[(wide["dataset"] == ds) & (wide["n_users"] == ns[c])]
            for mech, key, marker in (("rff", "B", "o"), ("geoind", "epsilon", "s"), ("laplace_ldp", "epsilon", "^")):
                grp = sub[sub["mechanism"] == mech]
                if grp.empty:
                    continue
                # other swept parameters (e.g. h) give separate curves: one colour per mechanism, a line style each
                varied = [p for p in params if p not in (key, "n") and grp[p].map(_plain).nunique() > 1]
                curves = grp.groupby(varied, sort=True, dropna=False) if varied else [((), grp)]
                for k, (values, part) in enumerate(curves):
                    mean = _mean_by(part, key)
                    label = ", ".join(f"{p}={_plain(v)}" for p, v in zip(varied, np.atleast_1d(values), strict=True))
                    (line,) = ax.plot(
                        mean["privacy_Z"],
                        mean[UTILITY],
                        marker=marker,
                        ls=CURVE_STYLES[k % len(CURVE_STYLES)],
                        color=colours[mech],
                        ms=4,
                        label=f"{mech} over {key}" + (f" ({label})" if label else ""),
                    )
                    labels += [
                        (ax, row["privacy_Z"], row[UTILITY], f"{k:g}", line.get_color()) for k, row in mean.iterrows()
                    ]
            for mech, marker in (("fedkde", "*"), ("zero", "X")):
                grp = sub[sub["mechanism"] == mech]
                if not grp.empty:
                    ax.plot(
                        grp["privacy_Z"].mean(), grp[UTILITY].mean(), marker, color=colours[mech], ms=10, label=mech
                    )
            ax.set(
                title=f"{ds}, N = {int(ns[c])}",
                xlabel=f"privacy score Z [{unit}]  (more private →)",
                ylabel="Spearman vs the same users'\nexact KDE [rank corr.]",
            )
            ax.grid(alpha=0.3)
    handles = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.legend(
        handles.values(),
        handles.keys(),
        loc="outside right upper",
        fontsize=9,
        frameon=False,
        title="numbers at the points: B or epsilon",
        title_fontsize=9,
    )
    fig.canvas.draw()
    fig.set_layout_engine("none")
    for ax in fig.axes:
        mine = [lab for lab in labels if lab[0] is ax]
        figures.place_labels(
            ax, [m[1] for m in mine], [m[2] for m in mine], [m[3] for m in mine], colours=[m[4] for m in mine]
        )
    save_figure(fig, out_png, settings)


def gain_per_cost(*, summary_path: str, out_png: str, settings: dict) -> None:
    """[RFF-KDE] Fig. 13: (S_B - S_1) / (Z_1 - Z_B) for B >= 2, one line per dataset and N.

    The paper defines the privacy cost as 'the privacy score with B minus that
    with one feature'; Z falls as B grows, so we take Z_1 - Z_B to make the cost
    positive, as the paper's positive gains per cost imply.
    """
    wide, _ = wide_metrics(summary_path)
    rff = wide[(wide["mechanism"] == "rff") & (wide["answered"] == 1)]
    unit = _shared_unit(settings, rff["dataset"].unique())
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (ds, n), grp in rff.groupby(["dataset", "n_users"], sort=True):
        mean = _mean_by(grp, "B")
        if 1 not in mean.index or len(mean) < 2:
            continue
        base = mean.loc[1]
        later = mean[mean.index > 1]
        gain = (later[UTILITY] - base[UTILITY]) / (base["privacy_Z"] - later["privacy_Z"])
        ax.plot(later.index, gain, "o-", ms=3, label=f"{ds}, N = {int(n)}")
    ax.set(
        xlabel="features per user B [count]",
        ylabel=f"Spearman gain per unit Z cost\n[rank corr. per {unit.removesuffix('s')}]",
        xscale="log",
        title="RFF: performance gain per privacy cost (vs B = 1)",
    )
    figures.log_ticks(ax, pd.to_numeric(rff["B"]))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    save_figure(fig, out_png, settings)
