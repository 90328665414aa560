"""The studies' one contract (locpriv.study): the tidy summary schema and what each study declares."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from locpriv import study as lpstudy
from locpriv.errors import InputError
from locpriv.study import SUMMARY_COLUMNS, Study

TOY = Study(name="toy", validate=dict, runs=lambda cfg: [], run_dir=str, identity={"dataset": "str"}, register=False)


def _rows(eps):
    return TOY.run_table(
        [{"method": "m", "metric": "mse", "value": 1.0 / (1 + i)} for i in range(2)],
        epsilon=eps,
        n=100,
        rep=0,
        dataset="d",
    )


def test_summary_sorts_epsilon_as_a_number_and_writes_the_same_bytes_twice(tmp_path):
    frame = pd.concat([_rows(10.0), _rows(5.0), _rows(np.nan)], ignore_index=True)
    out = {k: str(tmp_path / f"a.{k}") for k in ("parquet", "csv")}
    table = TOY.write_summary(frame, out_parquet=out["parquet"], out_csv=out["csv"])
    assert table["epsilon"].iloc[::2].tolist()[:2] == [5.0, 10.0] and np.isnan(table["epsilon"].iloc[-1])
    back = pd.read_parquet(out["parquet"])
    assert list(back.columns) == [*list(SUMMARY_COLUMNS)[:5], "dataset", "metric", "value"]
    assert {c: str(t) for c, t in back.dtypes.items()} == {**TOY.columns}
    again = {k: str(tmp_path / f"b.{k}") for k in ("parquet", "csv")}
    TOY.write_summary(frame.iloc[::-1], out_parquet=again["parquet"], out_csv=again["csv"])  # row order is free
    for k in out:
        assert Path(out[k]).read_bytes() == Path(again[k]).read_bytes(), k
    assert pd.read_csv(out["csv"])["epsilon"].isna().sum() == 2  # NaN: the empty cell of a non-private run


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda t: t.drop(columns="dataset"), "columns"),
        (lambda t: t.assign(extra=1), "columns"),
        (lambda t: t.assign(epsilon=t["epsilon"].astype(str)), "epsilon"),
        (lambda t: t.assign(n=t["n"].astype(float)), "n"),
        (lambda t: t.assign(study="other"), "study"),
    ],
)
def test_a_table_off_the_schema_is_named_with_its_field(tmp_path, change, field):
    with pytest.raises(InputError, match=rf"run-3\.parquet: field '{field}'"):
        TOY.tidy(change(_rows(1.0)), "run-3.parquet")


@pytest.mark.parametrize(
    "damage, problem",
    [
        (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "cannot be read"),
        (lambda p: p.write_bytes(b"garbage"), "cannot be read"),
        (lambda p: _rows(1.0).assign(study="other").to_parquet(p), "rows of ['other']"),
        (lambda p: _rows(1.0).drop(columns="dataset").to_parquet(p), "missing ['dataset']"),
    ],
)
def test_a_summary_of_a_damaged_run_file_names_it_and_the_fix(tmp_path, damage, problem):
    """Issue 40: the summary failing on a damaged input named the file but not what to do: delete it and
    run the same command (its run job makes it again)."""
    paths = [tmp_path / f"run-{i}.parquet" for i in range(3)]
    for path in paths:
        _rows(1.0).to_parquet(path)
    damage(paths[1])
    out = {k: str(tmp_path / f"summary.{k}") for k in ("parquet", "csv")}
    with pytest.raises(InputError) as err:
        TOY.collect(paths, out_parquet=out["parquet"], out_csv=out["csv"])
    assert str(err.value).startswith(f"{paths[1]}: field ") and problem in str(err.value)
    assert str(err.value).endswith(f"Fix: delete {paths[1]} and run the same command again: it is made again")
    assert "\n" not in str(err.value) and not Path(out["parquet"]).exists()


def test_identity_columns_cannot_shadow_the_common_ones_or_take_other_types():
    with pytest.raises(ValueError, match="epsilon"):
        Study(name="x", validate=dict, runs=list, run_dir=str, identity={"epsilon": "str"}, register=False)
    with pytest.raises(ValueError, match="bool"):
        Study(name="x", validate=dict, runs=list, run_dir=str, identity={"flag": "bool"}, register=False)


def test_every_study_declares_the_contract():
    from locpriv.deconv.study import STUDY as deconv

    assert lpstudy.builtin_names() == ["deconv", "heatmaps", "radiomap", "sldp"] == lpstudy.names()
    studies = {name: lpstudy.get(name) for name in lpstudy.names()}  # each defined in locpriv/<name>/study.py
    assert studies["deconv"] is deconv and all(s.name == name for name, s in studies.items())
    for study in studies.values():
        assert list(study.columns)[:5] == list(SUMMARY_COLUMNS)[:5] and list(study.columns)[-2:] == ["metric", "value"]
        assert study.schema is None  # a built-in study's section is $defs.<name> of the config schema


def test_a_study_registers_itself_by_name_once():
    name = "_registry_probe"
    try:
        probe = Study(name=name, validate=dict, runs=lambda cfg: [], run_dir=str, schema={"type": "object"})
        assert lpstudy.get(name) is probe and name in lpstudy.names()
        assert lpstudy.section_schema(name) == {"type": "object"}
        with pytest.raises(RuntimeError, match="registered twice"):
            Study(name=name, validate=lambda section: section, runs=list, run_dir=str)
    finally:
        lpstudy.REGISTRY.pop(name, None)
    with pytest.raises(ValueError, match=r"unknown study '_registry_probe'; allowed: \['deconv'"):
        lpstudy.get(name)
