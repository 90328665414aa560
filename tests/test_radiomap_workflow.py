"""The radiomap study's rules on a tiny config, run by Snakemake in a temporary directory."""

import copy
import re

import pandas as pd
import pytest

from conftest import TINY, assert_figure, run_snakemake, write_config
from locpriv.io import read_parquet_metadata

pytestmark = pytest.mark.workflow

SECTION = {
    "environment": {"size": 60.0, "cell": 6.0, "n_buildings": 5},
    "n_users": 6,
    "n_stations": 20,
    "n_measurements": 15,
    "training": {"epochs": 4},
    "evaluation": {"stride": 2, "n_stations": 2},
    "attack": {"nu": [1, 2, "inf"], "epochs": [1, 4]},
    "runs": {"radio_fedavg": {}, "radio_uniform": {"mu": [1.0]}, "radio_geo": {"mu": [1.0], "rho": [1.0]}},
    "plots": {"dpi": 30},
}
OUT = "results/studies/radiomap"
TABLES = [f"{OUT}/summary.parquet", f"{OUT}/summary.csv", f"{OUT}/gradient_maps.parquet"]
# figure -> panel layout (rows, columns): Fig. 5 has one map per noisy run (uniform mu=1, geo mu=1)
FIGURES = {
    f"{OUT}/plots/fig4_error_vs_mu.png": (1, 1),
    f"{OUT}/plots/fig5_gradient_maps.png": (2, 1),
    f"{OUT}/plots/fig6_error_vs_rho.png": (1, 1),
    f"{OUT}/plots/mae.png": (1, 1),
}
TARGETS = TABLES + list(FIGURES)


def config_with(section):
    cfg = copy.deepcopy(TINY)
    cfg["studies"] = {"radiomap": section}
    return cfg


def test_radiomap_rules_run_and_extend_incrementally(make_workdir):
    wd = make_workdir(config_with(SECTION))
    run_snakemake(wd, "--cores", "2", *TARGETS)
    for figure, panels in FIGURES.items():
        assert_figure(wd / figure, panels)
    maps = pd.read_parquet(wd / OUT / "gradient_maps.parquet")
    assert read_parquet_metadata(wd / OUT / "gradient_maps.parquet")["titles"] == [
        "uniform (DPFL) mu=1",
        "geometry-aligned mu=1",
    ]
    assert set(maps["panel"]) == {0, 1} and (maps["gradient"] != 0).all()
    run = wd / OUT / "runs/scheme~radio_geo/mu~1/rho~1"
    transcript = pd.read_parquet(run / "transcript.parquet")
    # kept epochs only (1 and 4); exact zeros are omitted (the noise, mu C^2 whatever the gradient, makes few)
    assert set(transcript["epoch"]) == {1, 4} and set(transcript["user"]) == set(range(6))
    assert len(pd.read_parquet(run / "model.parquet")) == 4 * 100  # h after every epoch, M = 100
    assert read_parquet_metadata(run / "history.parquet")["guarantee"]["epsilon"] is None
    # the uniform scheme with theta learned in the clear (the paper's protocol) claims nothing either
    uniform = read_parquet_metadata(wd / OUT / "runs/scheme~radio_uniform/mu~1/rho~0" / "history.parquet")
    assert uniform["guarantee"]["epsilon"] is None and "theta" in uniform["guarantee"]["note"]
    summary = pd.read_parquet(wd / OUT / "summary.parquet")
    att = summary[summary["metric"] == "wcl_rmse_m"]
    # every run x nu for each kept epoch with a nonzero upload: both for the noisy runs; FedAvg's
    # epoch-4 gradients round to 0 on the release grid in this tiny city (the model saturates)
    kept = att.groupby("method")["epoch"].agg(set)
    assert kept["radio_uniform"] == kept["radio_geo"] == {1, 4} and 1 in kept["radio_fedavg"]
    assert len(att) == 3 * sum(map(len, kept))
    assert att["value"].notna().all() and set(att["nu"]) == {"1.0", "2.0", "inf"}
    # the scheme is the method; training rows (no attack, nu "") for every epoch of every run
    mae = summary[summary["metric"] == "mae_db"]
    assert set(mae["method"]) == {"radio_fedavg", "radio_uniform", "radio_geo"} and (mae["nu"] == "").all()
    assert len(mae) == 3 * 4 and summary["n"].eq(6).all() and summary["rep"].eq(0).all()
    # no run here has a guarantee (theta learned in the clear): epsilon and delta NaN, the reason in the metadata
    assert summary["epsilon"].isna().all() and summary["delta"].isna().all()
    guarantees = read_parquet_metadata(wd / OUT / "summary.parquet")["guarantees"]
    assert set(guarantees) == {
        "scheme~radio_fedavg/mu~0/rho~0",
        "scheme~radio_uniform/mu~1/rho~0",
        "scheme~radio_geo/mu~1/rho~1",
    }
    assert "theta" in guarantees["scheme~radio_uniform/mu~1/rho~0"]["note"]

    # one more mu value schedules only that run's jobs and the summaries
    more = copy.deepcopy(SECTION)
    more["runs"]["radio_uniform"]["mu"] = [1.0, 10.0]
    write_config(wd, config_with(more))
    out = run_snakemake(wd, "--dry-run", *TARGETS).stdout
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", out.split("Job stats:")[1], flags=re.M))
    jobs.pop("total", None)
    assert {k: int(v) for k, v in jobs.items()} == {"radiomap_run": 1, "radiomap_summary": 1, "radiomap_plots": 1}
    assert "mu~10/" in out


def test_invalid_radiomap_section_fails_at_parse_time(make_workdir):
    wd = make_workdir(config_with({"n_users": -3}))
    proc = run_snakemake(wd, "--dry-run", *TARGETS, check=False)
    assert proc.returncode != 0
    assert "studies.radiomap.n_users" in proc.stderr + proc.stdout
