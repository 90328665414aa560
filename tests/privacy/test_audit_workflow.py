"""The audit as a DAG stage and its join into the summary; runs with non-private inputs state no ε."""

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import TINY, run_snakemake
from locpriv import config as lpconfig
from locpriv import mechanisms
from locpriv.audit.stage import audit_rows, audit_table, params_label, settings

MECHS = {
    "fedkde": {"n": [300], "h": [0.55, "knn"]},
    "zero": {"n": [300]},
    "laplace_ldp": {"n": [300, 600], "h": [0.55, "knn"], "epsilon": [4], "estimator": ["naive", "deconv"]},
}


def _config(mechs=MECHS, draws=2000):
    cfg = copy.deepcopy(TINY)
    cfg["experiments"]["density"]["mechanisms"] = copy.deepcopy(mechs)
    cfg["audit"] = {"draws": draws}
    return cfg


def test_a_non_private_bandwidth_voids_every_guarantee():
    for name in mechanisms.names():
        cls = mechanisms.get(name)
        if "h" not in cls.params:
            continue
        given = {k: 1 for k, p in cls.params.items() if p.default is None and k != "h"}
        raw = cls.validate({**given, "h": "knn"}, f"test.{name}")  # the config admits it
        mech = cls(**{**raw, "h": 0.5})  # the run's object, h resolved
        record = mech.run_guarantee(raw)
        assert record.epsilon is None and record.delta is None, name
        if mech.guarantee().epsilon is not None:  # it claimed one without the leak
            assert "knn" in record.non_private_inputs, name


def test_one_audit_per_claiming_setting_and_none_without_a_guarantee():
    found = settings(lpconfig.expand_runs(_config()))
    # laplace_ldp: n, h and the estimator are server side or void (knn): one setting, epsilon only;
    # fedkde claims nothing, zero claims 0
    assert sorted(found) == [("laplace_ldp", "epsilon~4.0"), ("zero", "default")]
    assert found[("laplace_ldp", "epsilon~4.0")]["datasets"] == ["gauss9"]
    assert found[("laplace_ldp", "epsilon~4.0")]["params"]["h"] == 0.55  # a run with a guarantee


def test_summary_rows_only_for_runs_stating_epsilon(tmp_path):
    audit = pd.DataFrame(
        {
            "dataset": "gauss9",
            "mechanism": "laplace_ldp",
            "audit_params": "epsilon~4.0",
            "pair": ["a", "b"],
            "model": "m",
            "relation": "r",
            "claimed_epsilon": 4.0,
            "delta": 0.0,
            "epsilon_lb": [3.1, 3.5],
            "spent_epsilon": np.nan,
            "confidence": 0.95,
            "draws": 10,
            "scored": "s",
            "event": "e",
            "k_x": 1,
            "k_xprime": 0,
            "seed": 1,
        }
    )
    part = tmp_path / "part.parquet"
    audit.to_parquet(part)
    paths = [str(tmp_path / n) for n in ("audit.parquet", "audit.csv")]
    audit_table(audit_paths=[str(part)], out_parquet=paths[0], out_csv=paths[1])
    rows = [("laplace_ldp", "0.55", 4.0), ("laplace_ldp", "knn", float("nan")), ("fedkde", "0.55", float("nan"))]
    # as the summary gathers run_metrics' rows: typed parameters (a column holding 'knn' is text, a
    # parameter a mechanism lacks is missing), plus per-run guarantee text columns
    metrics = pd.DataFrame(
        [
            {
                "dataset": "gauss9",
                "mechanism": m,
                "trust_model": "local",
                "rep": 0,
                "h": h,
                "n": 300,
                "epsilon": 4.0 if m == "laplace_ldp" else np.nan,
                "estimator": "naive" if m != "fedkde" else None,
                "guarantee_model": "some model",
                "metric": "guarantee_epsilon",
                "value": v,
            }
            for m, h, v in rows
        ]
    )
    out = audit_rows(metrics, paths[0])
    lb = out[out["metric"] == "audit_epsilon_lb"]
    assert lb[["mechanism", "h"]].values.tolist() == [["laplace_ldp", "0.55"]]
    assert lb["value"].tolist() == [3.5]  # the largest bound over the pairs
    # two pairs at 95 % each: the maximum holds with probability >= 90 % (union bound)
    assert out[out["metric"] == "audit_confidence"]["value"].tolist() == pytest.approx([0.90])
    assert "yes" in Path(paths[1]).read_text()
    assert params_label({}) == "default"


def test_dry_run_schedules_the_audit_jobs(make_workdir):
    wd = make_workdir(_config())
    out = run_snakemake(wd, "-n", "--quiet", "rules").stdout
    counts = {
        line.split()[0]: int(line.split()[1])
        for line in out.splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    }
    assert counts["audit"] == 2 and counts["audit_table"] == 1


def test_bad_audit_draws_is_one_clear_config_error(make_workdir):
    wd = make_workdir(_config(draws=5))
    proc = run_snakemake(wd, "-n", check=False)
    assert proc.returncode != 0 and "audit.draws" in proc.stdout + proc.stderr


@pytest.mark.heavy
def test_default_pipeline_reports_audited_bounds_beside_the_claims(make_workdir):
    wd = make_workdir(_config())
    run_snakemake(wd, "--cores", "2", "results/summary/metrics.parquet", "results/audit/audit.html")
    table = pd.read_parquet(wd / "results/summary/metrics.parquet")
    wide = table.pivot_table(
        index=["mechanism", "h", "n", "estimator"], columns="metric", values="value", dropna=False
    ).reset_index()
    claims = wide[wide["guarantee_epsilon"].notna()]
    assert set(claims["mechanism"]) == {"laplace_ldp", "zero"}
    assert (claims["h"] != "knn").all()  # h: knn voids the guarantee
    assert claims["audit_epsilon_lb"].notna().all()
    assert (claims["audit_epsilon_lb"] <= claims["guarantee_epsilon"]).all()
    assert wide.loc[wide["guarantee_epsilon"].isna(), "audit_epsilon_lb"].isna().all()
    audit = pd.read_parquet(wd / "results/audit/audit.parquet")
    assert set(audit["mechanism"]) == {"laplace_ldp", "zero"} and (audit["holds"] == "yes").all()
    assert not math.isnan(audit["epsilon_lb"].max()) and np.isfinite(audit["epsilon_lb"]).all()
