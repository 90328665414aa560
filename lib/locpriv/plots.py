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


def metrics_vs_n(summary_path: str, out_png: str, settings: dict) -> None:
    """Spearman with the truth and privacy score Z against the number of users."""
    tab = pd.read_parquet(summary_path)
    fixed = {"dataset", "mechanism", "rep", "metric", "value"}
    params = [c for c in tab.columns if c not in fixed]
    wide = tab.pivot_table(index=["dataset", "mechanism", "rep", *params], columns="metric",
                           values="value").reset_index()
    wide["variant"] = wide.apply(_variant, axis=1, params=params)
    datasets = sorted(wide["dataset"].unique())
    fig, axes = plt.subplots(len(datasets), 2, figsize=(10, 3.6 * len(datasets)), squeeze=False)
    for row, ds in zip(axes, datasets):
        sub = wide[wide["dataset"] == ds]
        for variant, grp in sub.groupby("variant", sort=True):
            mean = grp.groupby("n_users")[["spearman", "privacy_Z"]].mean().sort_index()
            row[0].plot(mean.index, mean["spearman"], marker="o", label=variant)
            row[1].plot(mean.index, mean["privacy_Z"], marker="o", label=variant)
        row[0].set(title=f"{ds}: Spearman vs truth", xlabel="users N", ylabel="Spearman", xscale="log")
        row[1].set(title=f"{ds}: privacy score Z", xlabel="users N", ylabel="Z (distance units)",
                   xscale="log")
        row[0].legend(fontsize=7)
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
