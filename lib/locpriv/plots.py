"""Figures for the report; they read the summary table (and, for surfaces, the NetCDF estimates)."""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import io  # noqa: E402
from .stages.metrics import per_run  # noqa: E402


def _save(fig, path, settings):
    with io.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=int(settings.get("dpi", 110)), format="png",
                    metadata={"Software": None})  # no version stamp: same data, same bytes
    plt.close(fig)


def _no_data(out_png: str, settings: dict, what: str) -> None:
    """A figure saying why there is nothing to plot (e.g. every query refused), instead of a crash."""
    fig, ax = plt.subplots(figsize=(5, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, f"no data to plot: {what}", ha="center", va="center", wrap=True)
    _save(fig, out_png, settings)


def _log_ticks(ax, values, axis: str = "x") -> None:
    """A log axis ticked at the data's own values, written plainly ("20000", not "2×10⁴")."""
    values = sorted({float(v) for v in values if np.isfinite(v) and v > 0})
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(matplotlib.ticker.FixedLocator(values))
    target.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _variants(wide: pd.DataFrame, params: list[str]) -> pd.Series:
    """Each run's label: its mechanism and the parameters that vary among that mechanism's runs
    (defaults every run shares would only lengthen the legend)."""
    def label(group):
        varied = [p for p in params if p != "n" and group[p].nunique(dropna=False) > 1]
        return group.apply(lambda row: row["mechanism"] + (
            " (" + ", ".join(f"{p}={row[p]}" for p in varied) + ")" if varied else ""), axis=1)
    return pd.concat([label(group) for _, group in wide.groupby("mechanism", sort=False)]).reindex(wide.index)


def wide_metrics(summary_path: str) -> tuple[pd.DataFrame, list[str]]:
    """The tidy summary as one row per run (metrics as columns) and its parameter columns."""
    wide, columns = per_run(pd.read_parquet(summary_path))
    # the guarantee's text columns describe a run, they are not settings to tell runs apart by
    return wide.dropna(subset=["answered"]), [c for c in columns if not c.startswith("guarantee_")]


def metrics_vs_n(summary_path: str, out_png: str, settings: dict) -> None:
    """Spearman with the truth and privacy score Z against the number of users."""
    wide, params = wide_metrics(summary_path)
    if wide.empty:
        return _no_data(out_png, settings, "the summary holds no runs")
    wide["variant"] = _variants(wide, params)
    datasets = sorted(wide["dataset"].unique())
    fig, axes = plt.subplots(len(datasets), 2, figsize=(14, 3.8 * len(datasets)), squeeze=False)
    # one colour per mechanism, one line style / marker per variant of it: a legend of 15+ lines stays readable
    mechs = sorted(wide["mechanism"].unique())
    colours = dict(zip(mechs, plt.get_cmap("tab10" if len(mechs) <= 10 else "tab20").colors))
    styles = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ("-", "v"), ("--", "P")]
    for row, ds in zip(axes, datasets):
        sub = wide[wide["dataset"] == ds]
        for (mech, variant), grp in sub.groupby(["mechanism", "variant"], sort=True):
            k = sorted(sub.loc[sub["mechanism"] == mech, "variant"].unique()).index(variant)
            ls, marker = styles[k % len(styles)]
            mean = grp.groupby("n_users")[["spearman", "privacy_Z"]].mean().sort_index()
            for ax, col in zip(row, ("spearman", "privacy_Z")):
                ax.plot(mean.index, mean[col], ls=ls, marker=marker, ms=4, color=colours[mech], label=variant)
        row[0].set(title=f"{ds}: Spearman vs truth", xlabel="users N", ylabel="Spearman", xscale="log")
        row[1].set(title=f"{ds}: privacy score Z", xlabel="users N", ylabel="Z (distance units)",
                   xscale="log")
        for ax in row:
            _log_ticks(ax, sub["n_users"])
        row[1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout(rect=(0, 0, 0.82, 1))   # the right margin holds the legends
    _save(fig, out_png, settings)


SURFACE_COLUMNS = 4
# A released partition can put most of its mass in a few tiny cells whose density dwarfs the rest,
# which a min-max scale paints black everywhere else; each panel's scale stops at this quantile.
ROBUST_QUANTILE = 0.99


def _robust_max(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    top = float(np.quantile(finite, ROBUST_QUANTILE)) if finite.size else 0.0
    return top if top > 0 else float(finite.max(initial=0.0)) or 1.0


def surfaces(truth_path: str, estimate_paths: list[str], labels: list[str], out_png: str,
             settings: dict) -> None:
    """True density beside each mechanism's estimate, a grid of panels with one colour bar each.

    Each panel's colours run from 0 to its own 99th percentile (values above are drawn in the top
    colour), so a map whose mass sits in a few small cells still shows its structure; panels are
    compared by shape, the colour bars give the values (density per squared distance unit).
    """
    truth = io.read_netcdf(truth_path)["density"]
    panels = [("truth", truth)] + [(lab, io.read_netcdf(p)["density"]) for lab, p in zip(labels, estimate_paths)]
    ncol = min(SURFACE_COLUMNS, len(panels))
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 3.4 * nrow), squeeze=False)
    extent = [float(truth.x[0]), float(truth.x[-1]), float(truth.y[0]), float(truth.y[-1])]
    units = truth.attrs.get("units", "")
    units = "" if units in ("1/1^2", "1") else units      # a unitless box: no "[1/1^2]"
    for ax, (label, da) in zip(axes.ravel(), panels):
        values = np.asarray(da.values, dtype=float)
        if not np.isfinite(values).any():   # a refused query: no estimate to draw
            ax.text(0.5, 0.5, "no estimate\n(query refused)", ha="center", va="center", transform=ax.transAxes)
        else:
            im = ax.imshow(values.T, origin="lower", extent=extent, cmap=settings.get("cmap", "viridis"),
                           vmin=0.0, vmax=_robust_max(values), aspect="equal")
            bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03, extend="max")
            bar.ax.tick_params(labelsize=7)
            bar.set_label(f"density [{units}]" if units else "density", fontsize=7)
        ax.set_title(textwrap.fill(label, 34), fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    _save(fig, out_png, settings)


# [RFF-KDE] scores utility against the same users' non-private KDE (§4.2.1).
UTILITY = "spearman_pooled"


def _mean_by(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """Mean utility and Z over repetitions, per value of ``key`` (numeric order)."""
    out = frame.assign(_k=pd.to_numeric(frame[key])).groupby("_k")[[UTILITY, "privacy_Z"]].mean()
    return out.sort_index()


def tradeoff(summary_path: str, out_png: str, settings: dict) -> None:
    """[RFF-KDE] Fig. 10-12: Spearman against privacy score Z, one panel per dataset and N.

    RFF is a curve over B and GeoInd a curve over epsilon (answered runs only);
    exact federated KDE and the 0-feature baseline are reference points.
    """
    wide, params = wide_metrics(summary_path)
    wide = wide[wide["answered"] == 1]
    if wide.empty:
        return _no_data(out_png, settings, "no run was answered (every user refused every query)")
    cells = sorted({(ds, n) for ds, n in zip(wide["dataset"], wide["n_users"])})
    datasets = sorted({ds for ds, _ in cells})
    ncol = max(sum(1 for ds2, _ in cells if ds2 == ds) for ds in datasets)
    fig, axes = plt.subplots(len(datasets), ncol, figsize=(3.6 * ncol, 3.3 * len(datasets)),
                             squeeze=False)
    for r, ds in enumerate(datasets):
        ns = [n for ds2, n in cells if ds2 == ds]
        for c, ax in enumerate(axes[r]):
            if c >= len(ns):
                ax.axis("off")
                continue
            sub = wide[(wide["dataset"] == ds) & (wide["n_users"] == ns[c])]
            for mech, key, style in (("rff", "B", "o-"), ("geoind", "epsilon", "s--"),
                                     ("laplace_ldp", "epsilon", "^:")):
                grp = sub[sub["mechanism"] == mech]
                if grp.empty:
                    continue
                # other swept parameters (e.g. h) give separate curves
                varied = [p for p in params if p not in (key, "n") and grp[p].nunique(dropna=False) > 1]
                for values, part in (grp.groupby(varied, sort=True, dropna=False) if varied else [((), grp)]):
                    mean = _mean_by(part, key)
                    label = ", ".join(f"{p}={v}" for p, v in zip(varied, values))
                    ax.plot(mean["privacy_Z"], mean[UTILITY], style, ms=3,
                            label=f"{mech} over {key}" + (f" ({label})" if label else ""))
                    for k, row in mean.iterrows():
                        ax.annotate(f"{k:g}", (row["privacy_Z"], row[UTILITY]), fontsize=6)
            for mech, marker in (("fedkde", "*"), ("zero", "X")):
                grp = sub[sub["mechanism"] == mech]
                if not grp.empty:
                    ax.plot(grp["privacy_Z"].mean(), grp[UTILITY].mean(), marker, ms=9, label=mech)
            ax.set(title=f"{ds}, N = {int(ns[c])}", xlabel="privacy score Z (higher = more private)",
                   ylabel="Spearman vs same users' exact KDE")
            ax.legend(fontsize=6)
    fig.tight_layout()
    _save(fig, out_png, settings)


def gain_per_cost(summary_path: str, out_png: str, settings: dict) -> None:
    """[RFF-KDE] Fig. 13: (S_B - S_1) / (Z_1 - Z_B) for B >= 2, one line per dataset and N.

    The paper defines the privacy cost as 'the privacy score with B minus that
    with one feature'; Z falls as B grows, so we take Z_1 - Z_B to make the cost
    positive, as the paper's positive gains per cost imply.
    """
    wide, _ = wide_metrics(summary_path)
    rff = wide[(wide["mechanism"] == "rff") & (wide["answered"] == 1)]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for (ds, n), grp in rff.groupby(["dataset", "n_users"], sort=True):
        mean = _mean_by(grp, "B")
        if 1 not in mean.index or len(mean) < 2:
            continue
        base = mean.loc[1]
        later = mean[mean.index > 1]
        gain = (later[UTILITY] - base[UTILITY]) / (base["privacy_Z"] - later["privacy_Z"])
        ax.plot(later.index, gain, "o-", ms=3, label=f"{ds}, N = {int(n)}")
    ax.set(xlabel="features per user B", ylabel="Spearman gain per unit Z cost", xscale="log",
           title="RFF: performance gain per privacy cost (vs B = 1)")
    _log_ticks(ax, pd.to_numeric(rff["B"]))
    ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, out_png, settings)
