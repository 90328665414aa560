"""[Deconv-LDP] Fig. 1–9 for one dataset of the deconvolution study, as one PNG.

Per sample size n (a row): the fitted curves on noiseless data (Fig. 4, 7) and at
the figure epsilon (Fig. 1, 2, 5, 8) over the test clients' true data, the three
densities at the figure epsilon (Fig. 3), and the test metric vs epsilon with the
noiseless values as horizontal lines (Fig. 6: MSE, Fig. 9: log-likelihood).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import figures
from ..figures import plt
from .study import NOISELESS, figure_epsilon

SCATTER_POINTS = 2000


def _metric_table(summary: pd.DataFrame, name: str, metric: str) -> pd.DataFrame:
    """Mean over reps per (n, epsilon, method); the noiseless rows keep epsilon NaN, lose the suffix."""
    rows = summary[(summary["dataset"] == name) & (summary["metric"] == metric)]
    rows = rows.assign(method=rows["method"].str.removesuffix(NOISELESS))
    return rows.groupby(["n", "epsilon", "method"], dropna=False)["value"].mean().reset_index()


def _clients(table: pd.DataFrame, n: str) -> int:
    """The summary's n of the config's ``n`` ("all": the dataset's one training-split size)."""
    return int(n) if n != "all" else int(table["n"].iloc[0])


def _curves_panel(ax, curves: pd.DataFrame, test: pd.DataFrame, rng, title: str, base: str, scores: dict) -> None:
    pick = rng.choice(len(test), min(SCATTER_POINTS, len(test)), replace=False)
    ax.scatter(test["x"].to_numpy()[pick], test["y"].to_numpy()[pick], s=2, color="0.7", label="test data (true x)")
    if "truth" in curves:
        ax.plot(curves["x"], curves["truth"], "k-", lw=1.2, label="true curve")
    ax.plot(curves["x"], curves["kernel"], "C0-", lw=1.5, label=f"kernel (deconvoluting NW), {scores['kernel']}")
    ax.plot(curves["x"], curves["baseline"], "C1--", lw=1.5, label=f"{base}, {scores[base]}")
    ax.set(title=title, xlabel="covariate x [data units]", ylabel="response y [data units]")
    ax.legend(fontsize=8)


def dataset_figure(
    *, name: str, cfg: dict, summary_path: str, curve_paths: dict, test_paths: dict, out_png: str, dpi: int
) -> None:
    """``curve_paths[(n, eps)]``: rep-0 curves for eps in {"inf", figure epsilon}; ``test_paths[n]``."""
    summary = pd.read_parquet(summary_path)
    binary = cfg["datasets"][name]["source"] == "adult"
    metric = "loglik" if binary else "mse"
    base = "logistic" if binary else "linear"
    fig_eps = figure_epsilon(cfg, name)
    ns = cfg["datasets"][name]["n"]
    table = _metric_table(summary, name, metric)
    fig, axes = plt.subplots(len(ns), 4, figsize=(21, 4.2 * len(ns)), squeeze=False)
    rng = np.random.default_rng(0)  # which test points are drawn as dots: cosmetic, fixed
    for row, n in zip(axes, ns, strict=True):
        test = pd.read_parquet(test_paths[str(n)])
        for ax, eps in zip(row[:2], ("inf", fig_eps), strict=True):
            curves = pd.read_parquet(curve_paths[(str(n), str(eps))])
            at = table["epsilon"].isna() if eps == "inf" else table["epsilon"] == eps
            sel = table[(table["n"] == _clients(table, str(n))) & at].set_index("method")["value"]
            scores = {m: f"{metric} {sel.get(m, np.nan):.3f}" for m in ("kernel", base)}
            label = "noiseless data" if eps == "inf" else f"epsilon = {eps:g} LDP data"
            _curves_panel(ax, curves, test, rng, f"{name}, n = {n}: {label}", base, scores)
        curves = pd.read_parquet(curve_paths[(str(n), str(fig_eps))])
        ax = row[2]
        ax.plot(curves["x"], curves["density_noiseless"], color="0.6", lw=2, label="noiseless data, kernel K")
        ax.plot(curves["x"], curves["density_naive"], "k--", label="LDP data, kernel K (naive)")
        ax.plot(curves["x"], curves["density_deconv"], "k-", label="LDP data, adjusted kernel (eq. 5)")
        dens = cfg["datasets"][name]["density"]
        ax.set(
            title=f"density, epsilon = {fig_eps:g} ({dens['kernel']} kernel, h = {dens['h']})",
            xlabel="covariate x [data units]",
            ylabel="density [1/data unit]",
        )
        ax.legend(fontsize=8)
        ax = row[3]
        sub = table[table["n"] == _clients(table, str(n))]
        private = sub[sub["epsilon"].notna()].sort_values("epsilon")
        for method, style in (("kernel", "C0o-"), (base, "C1s--")):
            grp = private[private["method"] == method]
            ax.plot(grp["epsilon"], grp["value"], style, label=f"{method}, epsilon-LDP")
            ref = sub[sub["epsilon"].isna() & (sub["method"] == method)]["value"]
            if len(ref):
                ax.axhline(float(ref.iloc[0]), color=style[:2], lw=0.8, ls=":", label=f"{method}, noiseless")
        ax.set(
            xscale="log",
            xlabel="privacy budget epsilon [no unit]",
            ylabel="test log-likelihood [nats per client]" if binary else "test MSE [squared units of y]",
            title=f"{metric} vs epsilon (mean over reps)",
        )
        ax.legend(fontsize=8)
    fig.tight_layout()
    figures.save(fig, out_png, dpi)
