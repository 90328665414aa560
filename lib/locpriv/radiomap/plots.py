"""Figures of the radiomap study from its tidy summary and Fig. 5's map table: MAE vs epoch
(Table II), Fig. 4, Fig. 5, Fig. 6."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import io
from .tables import LABEL


def save_figure(fig, path, dpi):
    with io.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png")
    plt.close(fig)


def mae_curves(mae: pd.DataFrame, path, dpi: int) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    for (scheme, mu, rho), part in mae.groupby(["scheme", "mu", "rho"], sort=True):
        label = (
            LABEL[scheme]
            + ("" if scheme == "radio_fedavg" else f" mu={mu:g}")
            + (f" rho={rho:g}" if scheme == "radio_geo" else "")
        )
        ax.plot(part["epoch"], part["mae_db"], label=label)
    ax.set(xlabel="epoch", ylabel="radio-map MAE (dB)", title="MAE vs epoch (Table II)")
    ax.legend(fontsize=8)
    save_figure(fig, path, dpi)


def error_vs(attack: pd.DataFrame, by: str, schemes, epoch: int, nus, path, dpi: int, title: str) -> None:
    """Attack RMSE against ``by`` (mu or rho) at one epoch, a line per (scheme, nu)."""
    sub = attack[(attack["epoch"] == epoch) & attack["scheme"].isin(schemes) & attack["nu"].isin(nus)]
    fig, ax = plt.subplots(figsize=(6, 4))
    for (scheme, nu), part in sub.groupby(["scheme", "nu"], sort=True):
        if by == "rho":
            for mu, p in part.groupby("mu"):
                ax.plot(p[by], p["rmse_m"], "o-", label=f"{LABEL[scheme]} mu={mu:g} nu={nu}")
        else:
            part = part.groupby(by, as_index=False)["rmse_m"].max() if scheme == "radio_geo" else part
            ax.plot(
                part[by], part["rmse_m"], "o-" if scheme == "radio_geo" else "s--", label=f"{LABEL[scheme]} nu={nu}"
            )
    ax.set(xlabel=by, ylabel="WCL localisation RMSE (m)", title=title)
    ax.set_xscale("log")
    ax.legend(fontsize=8)
    save_figure(fig, path, dpi)


def gradient_maps(maps: list[tuple[str, np.ndarray]], n: int, path, dpi: int) -> None:
    """One panel per (title, gradient vector of one user), |g| on the n x n grid, all panels on one
    colour scale with one colour bar (so the noise schemes' magnitudes compare)."""
    from matplotlib.colors import Normalize

    cols = max(1, int(np.ceil(len(maps) / 2)))
    fig, axes = plt.subplots(2, cols, figsize=(2.9 * cols + 1.4, 5.8), squeeze=False, layout="constrained")
    norm = Normalize(0.0, max((float(np.abs(g).max()) for _, g in maps), default=1.0) or 1.0)
    for ax in axes.ravel()[len(maps) :]:
        fig.delaxes(ax)
    for ax, (title, g) in zip(axes.ravel(), maps, strict=False):
        im = ax.imshow(np.abs(g).reshape(n, n), origin="lower", cmap="viridis", norm=norm)
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    if maps:
        fig.colorbar(im, ax=axes.ravel()[: len(maps)].tolist(), fraction=0.05, pad=0.02).set_label(
            "uploaded gradient magnitude |g~_m| [dB²/m]", fontsize=9
        )
    save_figure(fig, path, dpi)


def metric_frame(summary: pd.DataFrame, metric: str, name: str) -> pd.DataFrame:
    """One metric of the tidy summary as a column ``name``, the method back under its name ``scheme``."""
    rows = summary[summary["metric"] == metric]
    return rows.rename(columns={"method": "scheme", "value": name})[["scheme", "mu", "rho", "epoch", "nu", name]]


def study_figures(*, cfg: dict, tables: dict, out: dict) -> None:
    """Every figure of the study, from the summary (``tables["summary"]``) and Fig. 5's map table."""
    dpi = cfg["plots"]["dpi"]
    summary = pd.read_parquet(tables["summary"])
    attack_tab = metric_frame(summary, "wcl_rmse_m", "rmse_m")
    mae_curves(metric_frame(summary, "mae_db", "mae_db"), out["mae"], dpi)
    first = min(cfg["attack"]["epochs"])
    nus = [str(n) for n in cfg["attack"]["nu"]]
    error_vs(
        attack_tab,
        "mu",
        ["radio_uniform", "radio_geo"],
        first,
        nus,
        out["fig4"],
        dpi,
        f"Fig. 4: WCL error vs mu (epoch {first}; geo: best rho)",
    )
    error_vs(
        attack_tab,
        "rho",
        ["radio_geo"],
        first,
        [n for n in nus if n == "2.0"] or nus[:1],
        out["fig6"],
        dpi,
        f"Fig. 6: WCL error vs rho (epoch {first})",
    )
    maps = pd.read_parquet(tables["gradient_maps"])
    meta = io.read_parquet_metadata(tables["gradient_maps"])
    n = meta["n"]
    panels = []
    for k, title in enumerate(meta["titles"]):
        part = maps[maps["panel"] == k]
        g = np.zeros(n * n)
        g[part["cell"].to_numpy()] = part["gradient"].to_numpy()
        panels.append((title, g))
    gradient_maps(panels, n, out["fig5"], dpi)
