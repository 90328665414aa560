"""Figures for the report; they read the summary table (and, for surfaces, the NetCDF estimates)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import io  # noqa: E402


def _save(fig, path, settings):
    with io.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=int(settings.get("dpi", 110)), format="png",
                    metadata={"Software": None})  # no version stamp: same data, same bytes
    plt.close(fig)


def _variant(row: pd.Series, params: list[str]) -> str:
    parts = [f"{p}={row[p]}" for p in params if p != "n" and row.get(p, "") not in ("", None)]
    return row["mechanism"] + (" (" + ", ".join(parts) + ")" if parts else "")


def wide_metrics(summary_path: str) -> tuple[pd.DataFrame, list[str]]:
    """The tidy summary as one row per run (metrics as columns) and its parameter columns."""
    tab = pd.read_parquet(summary_path)
    fixed = {"dataset", "mechanism", "rep", "metric", "value"}
    params = [c for c in tab.columns if c not in fixed]
    wide = tab.pivot_table(index=["dataset", "mechanism", "rep", *params], columns="metric",
                           values="value", dropna=False).reset_index()
    return wide.dropna(subset=["answered"]), params


def metrics_vs_n(summary_path: str, out_png: str, settings: dict) -> None:
    """Spearman with the truth and privacy score Z against the number of users."""
    wide, params = wide_metrics(summary_path)
    wide["variant"] = wide.apply(_variant, axis=1, params=params)
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
        row[1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    _save(fig, out_png, settings)


def surfaces(truth_path: str, estimate_paths: list[str], labels: list[str], out_png: str,
             settings: dict) -> None:
    """True density beside each mechanism's estimate, same colour scale per panel."""
    truth = io.read_netcdf(truth_path)["density"]
    panels = [("truth", truth)] + [(lab, io.read_netcdf(p)["density"]) for lab, p in zip(labels, estimate_paths)]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.3), squeeze=False)
    extent = [float(truth.x[0]), float(truth.x[-1]), float(truth.y[0]), float(truth.y[-1])]
    for ax, (label, da) in zip(axes[0], panels):
        ax.imshow(np.asarray(da.values).T, origin="lower", extent=extent,
                  cmap=settings.get("cmap", "viridis"), aspect="auto")
        ax.set_title(label, fontsize=9)
    fig.tight_layout()
    _save(fig, out_png, settings)


# Seed 000 scores utility against the same users' non-private KDE (§4.2.1).
UTILITY = "spearman_pooled"


def _mean_by(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """Mean utility and Z over repetitions, per value of ``key`` (numeric order)."""
    out = frame.assign(_k=pd.to_numeric(frame[key])).groupby("_k")[[UTILITY, "privacy_Z"]].mean()
    return out.sort_index()


def tradeoff(summary_path: str, out_png: str, settings: dict) -> None:
    """Seed 000 Fig. 10-12: Spearman against privacy score Z, one panel per dataset and N.

    RFF is a curve over B and GeoInd a curve over epsilon (answered runs only);
    exact federated KDE and the 0-feature baseline are reference points.
    """
    wide, params = wide_metrics(summary_path)
    wide = wide[wide["answered"] == 1]
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
                varied = [p for p in params if p not in (key, "n") and grp[p].nunique() > 1]
                for label, part in (grp.groupby(varied, sort=True) if varied else [("", grp)]):
                    mean = _mean_by(part, key)
                    ax.plot(mean["privacy_Z"], mean[UTILITY], style, ms=3,
                            label=f"{mech} over {key} {label}".rstrip())
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
    """Seed 000 Fig. 13: (S_B - S_1) / (Z_1 - Z_B) for B >= 2, one line per dataset and N.

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
    ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, out_png, settings)
