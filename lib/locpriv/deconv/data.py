"""Inputs of the deconvolution study ([Deconv-LDP] §Results): (x, y) pairs with public bounds of x.

Synthetic: x from (1/3) N(−1, 1) + (2/3) N(3/2, 1/2) truncated to [−3, 3]
(N(μ, σ²): the second component has variance 1/2) or χ²(3) truncated to [0, 3];
y = g(x) + N(0, 1) with g₁(x) = x² (1 − x²) / 5 or g₂(x) = 4.5 sin(x) − 5.

LendingClub (``loan_data.csv``): x = log(fico − 600), y = interest rate in
percent (the paper's Fig. 3–5 axes; its file is the 2010 accepted loans, ours the
2007–2010 extract of 9,578 loans).  Adult (``adult.data``/``adult.test``, no
header): x = education-num (column 4, 0-based), y = 1 if income is ">50K".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import InputError

SYNTHETIC_X = {"mixture": (-3.0, 3.0), "chi2": (0.0, 3.0)}
CURVES = {"g1": lambda x: x * x * (1 - x * x) / 5, "g2": lambda x: 4.5 * np.sin(x) - 5}


def sample_x(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    lo, hi = SYNTHETIC_X[kind]
    if kind == "chi2":
        # inverse CDF restricted to [0, F(3)]: exact truncation, no rejection loop
        law = stats.chi2(3)
        return law.ppf(rng.uniform(0.0, law.cdf(hi), n))
    out = np.empty(0)
    while len(out) < n:  # rejection: each pass keeps ~96 % of its draws, so this ends in a few passes
        m = 2 * (n - len(out)) + 16
        first = rng.uniform(size=m) < 1 / 3
        x = np.where(first, rng.normal(-1.0, 1.0, m), rng.normal(1.5, np.sqrt(0.5), m))
        out = np.concatenate([out, x[(x >= lo) & (x <= hi)]])
    return out[:n]


def synthetic(kind: str, curve: str, n: int, rng: np.random.Generator) -> pd.DataFrame:
    x = sample_x(kind, n, rng)
    return pd.DataFrame({"x": x, "y": CURVES[curve](x) + rng.normal(0.0, 1.0, n)})


def _require(frame: pd.DataFrame, path: Path, column: str, fix: str) -> pd.Series:
    if column not in frame.columns:
        raise InputError(str(path), str(column), "column missing", fix)
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = int(values.isna().sum())
    if bad:
        raise InputError(str(path), str(column), f"{bad} missing or non-numeric values", fix)
    return values


def lendingclub(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    frame = pd.read_csv(path)
    fix = "use the LendingClub loan_data.csv with numeric 'fico' and 'int.rate' columns"
    fico = _require(frame, path, "fico", fix)
    rate = _require(frame, path, "int.rate", fix)
    low = int((fico <= 600).sum())
    if low:
        raise InputError(
            str(path),
            "fico",
            f"{low} scores <= 600, where log(fico - 600) is undefined",
            "drop those rows from the file or use a different transform",
        )
    return pd.DataFrame({"x": np.log(fico.to_numpy(float) - 600.0), "y": 100.0 * rate.to_numpy(float)})


def _adult_file(path: Path) -> pd.DataFrame:
    # adult.test starts with a "|1x3 Cross validator" line and labels end in "."
    frame = pd.read_csv(path, header=None, skipinitialspace=True, comment="|", na_values="?")
    if frame.shape[1] != 15:
        raise InputError(
            str(path),
            "columns",
            f"found {frame.shape[1]} columns, expected 15",
            "use the UCI Adult adult.data / adult.test files (no header)",
        )
    edu = _require(frame, path, 4, "column 4 (0-based) must be education-num")
    label = frame[14].astype(str).str.rstrip(".")
    unknown = ~label.isin([">50K", "<=50K"])
    if unknown.any():
        raise InputError(
            str(path),
            "14 (income)",
            f"{int(unknown.sum())} values other than '>50K'/'<=50K', e.g. {label[unknown].iloc[0]!r}",
            "use the UCI Adult income labels",
        )
    return pd.DataFrame({"x": edu.to_numpy(float), "y": (label == ">50K").to_numpy(float)})


def adult(directory: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test) from adult.data and adult.test in ``directory``."""
    directory = Path(directory)
    return _adult_file(directory / "adult.data"), _adult_file(directory / "adult.test")
