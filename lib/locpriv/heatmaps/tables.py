"""Tables of the heatmaps study from its tidy summary: the base-setting selection and Table 1."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import io
from .study import SWEEPS

TABLE_METRICS = ["mse", "l1_elementwise", "l1_matrix_norm", "mape", "smape", "maape", "communication", "epsilon_spent"]
# the summary column of each swept setting (users per round is the summary's n)
COLUMN = {"users_per_round": "n", "calibration": "calibration", "shard_size": "shard_size", "dropout": "dropout"}


def at_base(table: pd.DataFrame, base: dict, free: str) -> pd.DataFrame:
    """Rows at the base setting in every swept key but ``free``; non-private rows (epsilon NaN) at any epsilon."""
    keep = np.ones(len(table), bool)
    for key in SWEEPS:
        if key != free:
            keep &= np.isclose(table[COLUMN[key]].astype(float), float(base[key]))
    return table[keep & (np.isclose(table["epsilon"], float(base["epsilon"])) | table["epsilon"].isna())]


def results_table(*, summary_path: str, base: dict, out_csv: str) -> None:
    """Table 1: every method at the base setting, mean (and std) over repetitions."""
    table = at_base(pd.read_parquet(summary_path), base, free="")
    wide = table[table["metric"].isin(TABLE_METRICS)].groupby(["method", "metric"])["value"].agg(["mean", "std"])
    wide = wide.unstack("metric")
    wide.columns = [f"{m}_{stat}" for stat, m in wide.columns]
    order = [f"{m}_{s}" for m in TABLE_METRICS for s in ("mean", "std") if f"{m}_{s}" in wide.columns]
    with io.atomic_path(out_csv) as tmp:
        wide[order].sort_values("mse_mean").to_csv(tmp, float_format="%.6g")
