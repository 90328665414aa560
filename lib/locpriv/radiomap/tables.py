"""Transcript and result tables of the radiomap study (long-format DataFrames)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .model import THETA_NAMES
from .wcl import localisation_error

# display names of the noise schemes (figure titles and legends)
LABEL = {"radio_fedavg": "FedAvg", "radio_uniform": "uniform (DPFL)", "radio_geo": "geometry-aligned"}


def transcript_frame(uploads: dict) -> pd.DataFrame:
    """Each user's uploaded obstacle gradient for the kept epochs; exact zeros omitted."""
    parts = []
    for epoch in sorted(uploads):
        G = uploads[epoch]
        user, cell = np.nonzero(G)
        parts.append(pd.DataFrame({"epoch": np.full(len(user), epoch, np.int32), "user": user.astype(np.int32),
                                   "cell": cell.astype(np.int32), "gradient": G[user, cell]}))
    return pd.concat(parts, ignore_index=True)


def uploads_from_frame(frame: pd.DataFrame, n_users: int, M: int) -> dict:
    out = {}
    for epoch, part in frame.groupby("epoch", sort=True):
        G = np.zeros((n_users, M))
        G[part["user"].to_numpy(), part["cell"].to_numpy()] = part["gradient"].to_numpy()
        out[int(epoch)] = G
    return out


def model_frame(heights: list) -> pd.DataFrame:
    """The aggregate obstacle map h after every epoch."""
    H = np.asarray(heights)
    T, M = H.shape
    return pd.DataFrame({"epoch": np.repeat(np.arange(1, T + 1, dtype=np.int32), M),
                         "cell": np.tile(np.arange(M, dtype=np.int32), T), "h": H.ravel()})


def history_frame(hist) -> pd.DataFrame:
    """Per epoch: theta after the update, MAE, global loss and fraction of users clipped."""
    frame = pd.DataFrame(np.asarray(hist.theta), columns=list(THETA_NAMES))
    frame.insert(0, "epoch", np.arange(1, len(frame) + 1, dtype=np.int32))
    frame["mae_db"] = hist.mae
    frame["loss"] = hist.loss
    frame["clipped_fraction"] = hist.clipped
    return frame


def attack_frame(uploads: dict, centres: np.ndarray, users: np.ndarray, nus: list) -> pd.DataFrame:
    """WCL error (metres) per epoch, nu and user."""
    parts = []
    for epoch in sorted(uploads):
        for nu in nus:
            err = localisation_error(uploads[epoch], centres, users, float(nu))
            parts.append(pd.DataFrame({"epoch": np.int32(epoch), "nu": str(nu),
                                       "user": np.arange(len(users), dtype=np.int32), "error_m": err}))
    return pd.concat(parts, ignore_index=True)


def rmse_table(attack: pd.DataFrame) -> pd.DataFrame:
    """RMSE over users per (epoch, nu); users without an estimate are counted, not dropped silently."""
    g = attack.groupby(["epoch", "nu"], sort=True)["error_m"]
    return pd.DataFrame({"rmse_m": g.apply(lambda e: float(np.sqrt(np.nanmean(e ** 2)))),
                         "n_users": g.size(), "n_no_estimate": g.apply(lambda e: int(e.isna().sum()))}).reset_index()
