"""[DDP-Heatmaps] figures: the heatmap per round (the paper's animation as a strip), MSE sweeps
(Fig. 7, 8), the multi-location scale / clip-bits effect (Table 2), and the secure-aggregation
protocol's bytes per client beside the heatmap's own vector (Table 1 is :mod:`.tables`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import figures, io
from ..figures import plt
from ..secagg import ProtocolParams
from ..secagg.protocol import client_bytes
from .study import SWEEPS, round_maps
from .tables import COLUMN, at_base


def plot_rounds(*, population_path: str, releases_path: str, out_png: str, dpi: int) -> None:
    """The population and the server's map after each sub-query, on one logarithmic colour scale
    (every map is normalised to sum 1, so their colours compare) with one colour bar."""
    from matplotlib.colors import LogNorm

    truth = io.read_netcdf(population_path)["users"].to_numpy()
    depth = int(truth.shape[0]).bit_length() - 1
    maps = [truth / truth.sum(), *round_maps(releases_path, depth)]
    positive = np.concatenate([m[m > 0] for m in maps])
    top = float(positive.max()) if positive.size else 1.0
    # empty pixels and tiny noisy shares are drawn at the floor: 10^-4 of the largest share
    norm = LogNorm(vmin=top * 1e-4, vmax=top, clip=True)
    fig, axes = plt.subplots(1, len(maps), figsize=(2.7 * len(maps) + 1.2, 3.3), layout="constrained")
    for t, (ax, image) in enumerate(zip(np.atleast_1d(axes), maps, strict=True)):
        im = ax.imshow(np.maximum(image, norm.vmin).T, origin="lower", cmap="magma", norm=norm)
        ax.set(title="population" if t == 0 else f"after sub-query {t}", xticks=[], yticks=[])
    fig.colorbar(im, ax=axes, fraction=0.02, pad=0.01, extend="min").set_label(
        "share of users per pixel [fraction, log scale]"
    )
    figures.save(fig, out_png, dpi)


def plot_sweeps(*, summary_path: str, base: dict, out_png: str, dpi: int) -> None:
    table = pd.read_parquet(summary_path)
    table = table[table["metric"] == "mse"]
    fig, axes = plt.subplots(1, len(SWEEPS), figsize=(5 * len(SWEEPS), 4.0))
    labels = {
        "users_per_round": "users per sub-query n [users]",
        "calibration": "calibration c [no unit]",
        "shard_size": "SecAgg shard size [users]",
        "dropout": "dropout rate, noise provisioned for it [fraction]",
    }
    for ax, key in zip(axes, SWEEPS, strict=True):
        for method, grp in at_base(table, base, key).groupby("method"):
            mean = grp.groupby(COLUMN[key])["value"].agg(["mean", "std"]).reset_index()
            if len(mean) > 1 or method in ("dp_heatmap", "nonprivate"):
                ax.errorbar(
                    mean[COLUMN[key]], mean["mean"], yerr=mean["std"].fillna(0), fmt="o-", ms=3, capsize=2, label=method
                )
        ax.set(
            xlabel=labels[key],
            ylabel="MSE of the normalised maps [no unit]",
            yscale="log",
            xscale="log" if key in ("users_per_round", "shard_size", "calibration") else "linear",
        )
        ax.legend(fontsize=8)
    fig.tight_layout()
    figures.save(fig, out_png, dpi)


def plot_multi(*, multi_path: str, out_png: str, dpi: int) -> None:
    table = pd.read_parquet(multi_path)
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    for scale, grp in table.groupby("scale"):
        axes[0].plot(grp["bits"], grp["overflow_fraction"], "o-", label=f"scale s = {scale:g}")
        axes[1].plot(grp["bits"], grp["mse_without_noise"], "o-", label=f"scale s = {scale:g}")
        axes[2].plot(grp["bits"], grp["mse"], "o-", label=f"scale s = {scale:g}")
    bits = "SecAgg clip bits, m = 2^bits [bits]"
    axes[0].set(xlabel=bits, ylabel="wrapped noisy shard-sum entries [fraction]")
    axes[1].set(xlabel=bits, ylabel="MSE, rounding + wrap-around only [no unit]", yscale="log")
    axes[2].set(xlabel=bits, ylabel="MSE with DP noise [no unit]", yscale="log")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.tight_layout()
    figures.save(fig, out_png, dpi)


STEP_LABELS = {
    "advertise_keys": "public keys and seed commitment",
    "share_keys": "sealed key shares",
    "masked_input": "masked vector (the heatmap's payload)",
    "consistency": "survivor-set signature (active variant)",
    "unmasking": "unmasking shares",
}


def secagg_bytes_per_client(protocol_path: str) -> pd.DataFrame:
    """Mean bytes one client sent per protocol step and round (rows: round, columns: step)."""
    log = pd.read_parquet(protocol_path)
    per_client = log.groupby(["round", "shard", "sender", "step"])["bytes"].sum().reset_index()
    clients = log[log["step"] == "advertise_keys"].groupby("round")["sender"].size()
    total = per_client.groupby(["round", "step"])["bytes"].sum().unstack("step", fill_value=0)
    return total.div(clients, axis=0)[[s for s in STEP_LABELS if s in total.columns]]


def plot_secagg_cost(*, protocol_path: str, transcript_path: str, out_png: str, dpi: int) -> None:
    """Left: bytes per client and round, by protocol step and in total, beside the plain vector (K x 4 bytes).
    Right: bytes one client sends against shard size n at the run's largest K (``secagg.protocol.client_bytes``,
    equal to the transcript's counts), complete graph vs Harary graph, with and without 10 % planned dropout."""
    table = secagg_bytes_per_client(protocol_path)
    vector = pd.read_parquet(transcript_path).set_index("round")["vector_length"]
    fig, (ax, by_n) = plt.subplots(1, 2, figsize=(12, 3.8))
    for step in table.columns:
        ax.plot(table.index, table[step], "o-", ms=4, label=STEP_LABELS[step])
    ax.plot(table.index, table.sum(axis=1), "k-", lw=2, label="total sent by one client")
    ax.plot(vector.index, vector.to_numpy() * 4, "k:", marker="s", ms=4, label="plain heatmap vector, K x 32 bits")
    ax.set(
        xlabel="sub-query (round) [index]",
        ylabel="bytes sent per client, mean [bytes]",
        yscale="log",
        xticks=list(table.index),
        title="secure aggregation: what one client sends",
    )
    ax.legend(fontsize=8)
    sizes = np.unique(np.geomspace(10, 10_000, 25).astype(int))
    dim = int(vector.max())
    for graph, dropout, style in (("complete", 0.0, "C3-"), ("harary", 0.0, "C0-"), ("harary", 0.1, "C0--")):
        params = ProtocolParams(graph=graph, planned_dropout=dropout)
        total = [sum(client_bytes(int(n), dim, params).values()) for n in sizes]
        by_n.plot(sizes, total, style, label=f"{graph}" + (f", planned dropout {dropout:.0%}" if dropout else ""))
    by_n.axhline(dim * 4, color="k", ls=":", label=f"plain vector, K = {dim}")
    by_n.set(
        xlabel="shard size n [clients]",
        ylabel="bytes one client sends [bytes]",
        xscale="log",
        yscale="log",
        title="per-client bytes vs shard size (m = 2^32)",
    )
    by_n.legend(fontsize=8)
    fig.tight_layout()
    figures.save(fig, out_png, dpi)
