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
    epochs = sorted(uploads)
    G = np.stack([uploads[e] for e in epochs])
    k, user, cell = np.nonzero(G)
    return pd.DataFrame(
        {
            "epoch": np.asarray(epochs, np.int32)[k],
            "user": user.astype(np.int32),
            "cell": cell.astype(np.int32),
            "gradient": G[k, user, cell],
        }
    )


def uploads_from_frame(frame: pd.DataFrame, n_users: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """(epochs (E,), uploads (E, N, M)) from a transcript frame."""
    epochs, k = np.unique(frame["epoch"].to_numpy(), return_inverse=True)
    G = np.zeros((len(epochs), n_users, M))
    G[k, frame["user"].to_numpy(), frame["cell"].to_numpy()] = frame["gradient"].to_numpy()
    return epochs.astype(int), G


def model_frame(heights: list) -> pd.DataFrame:
    """The aggregate obstacle map h after every epoch."""
    H = np.asarray(heights)
    T, M = H.shape
    return pd.DataFrame(
        {
            "epoch": np.repeat(np.arange(1, T + 1, dtype=np.int32), M),
            "cell": np.tile(np.arange(M, dtype=np.int32), T),
            "h": H.ravel(),
        }
    )


def history_frame(hist) -> pd.DataFrame:
    """Per epoch: theta after the update, MAE, global loss and fraction of users clipped."""
    frame = pd.DataFrame(np.asarray(hist.theta), columns=list(THETA_NAMES))
    frame.insert(0, "epoch", np.arange(1, len(frame) + 1, dtype=np.int32))
    frame["mae_db"] = hist.mae
    frame["loss"] = hist.loss
    frame["clipped_fraction"] = hist.clipped
    return frame


def attack_frame(
    epochs: np.ndarray, uploads: np.ndarray, centres: np.ndarray, users: np.ndarray, nus: list
) -> pd.DataFrame:
    """WCL error (metres) per epoch, nu and user, from the uploads (E, N, M) of the epochs (E,)."""
    err = np.stack([localisation_error(uploads, centres, users, float(nu)) for nu in nus], axis=1)  # (E, nu, N)
    E, K, N = err.shape
    return pd.DataFrame(
        {
            "epoch": np.repeat(np.asarray(epochs, np.int32), K * N),
            "nu": np.tile(np.repeat(np.array([str(nu) for nu in nus], dtype=object), N), E),
            "user": np.tile(np.arange(N, dtype=np.int32), E * K),
            "error_m": err.ravel(),
        }
    )


def rmse_table(attack: pd.DataFrame) -> pd.DataFrame:
    """RMSE over users per (epoch, nu); users without an estimate are counted, not dropped silently."""
    g = attack.groupby(["epoch", "nu"], sort=True)["error_m"]
    return pd.DataFrame(
        {
            "rmse_m": g.apply(lambda e: float(np.sqrt(np.nanmean(e**2)))),
            "n_users": g.size(),
            "n_no_estimate": g.apply(lambda e: int(e.isna().sum())),
        }
    ).reset_index()
