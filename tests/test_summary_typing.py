"""The main summary is typed: identity columns keep their numbers, so epsilon sorts as a number."""

from pathlib import Path

import numpy as np
import pandas as pd

from locpriv import io
from locpriv.stages.metrics import per_run, runs_table, summary

RUNS = [  # as run_metrics writes a run's rows: its parameters with the types the config validated
    {"mechanism": "laplace_ldp", "trust_model": "local", "params": {"n": 300, "h": 0.55, "epsilon": 16.0}},
    {"mechanism": "laplace_ldp", "trust_model": "local", "params": {"n": 300, "h": 0.55, "epsilon": 2.0}},
    {"mechanism": "laplace_ldp", "trust_model": "local", "params": {"n": 300, "h": 0.55, "epsilon": 4.0}},
    {"mechanism": "fedkde", "trust_model": "none", "params": {"n": 300, "h": "knn"}},
    {"mechanism": "rff", "trust_model": "none", "params": {"n": 300, "h": 0.55, "B": 8}},
    {"mechanism": "rff", "trust_model": "none", "params": {"n": 300, "h": 0.55, "B": 1}},
    {"mechanism": "zero", "trust_model": "local", "params": {"n": 300}},
]


def _write_runs(tmp_path) -> list[str]:
    paths = []
    for i, run in enumerate(RUNS):
        rows = pd.DataFrame({"metric": ["answered", "spearman"], "value": [1.0, 0.1 * i]})
        rows.insert(0, "rep", 0)
        rows.insert(0, "trust_model", run["trust_model"])
        rows.insert(0, "mechanism", run["mechanism"])
        rows.insert(0, "dataset", "g")
        for k, v in run["params"].items():
            rows[k] = v
        rows["guarantee_model"] = "m"
        paths.append(str(tmp_path / f"run{i}.parquet"))
        io.write_parquet(rows, paths[-1])
    return paths


def test_summary_columns_have_real_dtypes_and_sort_numerically(tmp_path):
    out = {k: str(tmp_path / f"summary.{k}") for k in ("parquet", "csv")}
    summary(metric_paths=_write_runs(tmp_path), out_parquet=out["parquet"], out_csv=out["csv"])
    table = pd.read_parquet(out["parquet"])
    assert list(table.columns) == [
        "dataset",
        "mechanism",
        "trust_model",
        "rep",
        "B",
        "epsilon",
        "guarantee_model",
        "h",
        "n",
        "metric",
        "value",
    ]
    dtypes = {c: str(t) for c, t in table.dtypes.items()}
    assert (dtypes["epsilon"], dtypes["n"], dtypes["B"], dtypes["rep"], dtypes["value"]) == (
        "float64",
        "int64",
        "Int64",
        "int64",
        "float64",
    )
    # a column holding a word anywhere (h: knn) is text; numbers written as the config gave them
    assert pd.api.types.is_string_dtype(table["h"]) and set(table["h"].dropna()) == {"0.55", "knn"}
    assert table["h"].isna().any()
    ldp = table[(table["mechanism"] == "laplace_ldp") & (table["metric"] == "answered")]
    assert ldp["epsilon"].tolist() == [2.0, 4.0, 16.0]  # not "16.0" < "2.0"
    assert table.loc[table["mechanism"] == "rff", "B"].drop_duplicates().tolist() == [1, 8]
    assert table.loc[table["mechanism"] == "zero", ["B", "epsilon", "h"]].isna().all().all()
    back = pd.read_csv(out["csv"])
    assert back.loc[back["mechanism"] == "laplace_ldp", "epsilon"].drop_duplicates().tolist() == [2, 4, 16]
    # the same bytes whatever order the runs come in
    again = {k: str(tmp_path / f"again.{k}") for k in ("parquet", "csv")}
    summary(metric_paths=_write_runs(tmp_path)[::-1], out_parquet=again["parquet"], out_csv=again["csv"])
    for k in out:
        assert Path(out[k]).read_bytes() == Path(again[k]).read_bytes(), k


def test_per_run_and_runs_table_keep_every_run_with_missing_parameters(tmp_path):
    out = {k: str(tmp_path / f"summary.{k}") for k in ("parquet", "csv")}
    summary(metric_paths=_write_runs(tmp_path), out_parquet=out["parquet"], out_csv=out["csv"])
    wide, params = per_run(pd.read_parquet(out["parquet"]))
    assert len(wide) == len(RUNS) and params[0] == "n" and "trust_model" not in params
    table = runs_table(summary_parquet=out["parquet"], units={"g": "1"}, out_csv=str(tmp_path / "runs.csv"))
    assert len(table) == len(RUNS)  # a parameter a mechanism lacks is missing, not a reason to drop the run
    assert list(table.columns[:3]) == ["dataset", "mechanism", "trust_model"]
    assert dict(zip(table["mechanism"], table["trust_model"], strict=True)) == {
        r["mechanism"]: r["trust_model"] for r in RUNS
    }
    assert table.loc[table["mechanism"] == "laplace_ldp", "epsilon"].tolist() == [2.0, 4.0, 16.0]
    assert np.isnan(table.loc[table["mechanism"] == "zero", "epsilon"]).all()
