"""The deconv study's rules on a tiny section."""

import copy

import pandas as pd
import pytest

from conftest import ROOT, TINY, assert_figure, run_snakemake

LENDINGCLUB = ROOT.parent / "shared/data/lendingclub_loan_data/loan_data.csv"

pytestmark = pytest.mark.workflow


def test_deconv_study_runs_with_noiseless_reference(make_workdir):
    cfg = copy.deepcopy(TINY)
    datasets = {"chi_g2": {"source": "synthetic", "x": "chi2", "curve": "g2", "n": [400], "test_size": 1000}}
    if LENDINGCLUB.exists():
        datasets["lc"] = {"source": "lendingclub", "path": str(LENDINGCLUB)}
    cfg["studies"] = {
        "deconv": {"datasets": datasets, "epsilon": [5.0], "reps": 1, "bandwidth": {"count": 8, "cv_points": 300}}
    }
    wd = make_workdir(cfg)
    run_snakemake(
        wd,
        "--cores",
        "2",
        "results/studies/deconv/summary.csv",
        *[f"results/studies/deconv/plots/{d}.png" for d in datasets],
    )
    for d in datasets:  # one row of four panels per n; the density panel (column 2) is drawn in greys
        assert_figure(wd / f"results/studies/deconv/plots/{d}.png", (1, 4), skip=((0, 2),))
    table = pd.read_parquet(wd / "results/studies/deconv/summary.parquet")
    assert table["epsilon"].dtype == "float64" and set(table["dataset"]) == set(datasets)
    assert set(table["epsilon"].dropna()) == {5.0} and table["epsilon"].isna().any()  # NaN: noiseless
    mse = table[table["metric"] == "mse"]
    assert len(mse) == 4 * len(datasets) and (mse["value"] > 0).all()
    run = wd / "results/studies/deconv/runs/dataset~chi_g2/n~400/rep~0"
    assert not pd.read_parquet(run / "epsilon~5.0/reports.parquet")["z"].equals(
        pd.read_parquet(run / "train.parquet")["x"]
    )


def test_missing_data_path_names_the_key(make_workdir):
    cfg = copy.deepcopy(TINY)
    cfg["studies"] = {"deconv": {"datasets": {"lc": {"source": "lendingclub", "path": "nowhere/loans.csv"}}}}
    proc = run_snakemake(make_workdir(cfg), "--dry-run", check=False)
    assert proc.returncode != 0 and "studies.deconv.datasets.lc.path" in proc.stderr + proc.stdout
