"""Figures and the wide per-run table a person decides from."""

import copy

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from conftest import TINY, assert_figure, run_snakemake, write_config
from locpriv import figures, io, plots
from locpriv.domain import Domain, Grid
from locpriv.stages.metrics import runs_table


def _tidy(rows):
    return pd.DataFrame(
        rows,
        columns=["dataset", "mechanism", "trust_model", "rep", "epsilon", "estimator", "h", "n", "metric", "value"],
    )


def _summary(tmp_path):
    """A typed tidy summary: laplace_ldp over epsilon and estimator, zero and fedkde, two reps, two N."""
    rows = []
    for rep in (0, 1):
        for n in (300, 600):
            for eps in (4.0, 16.0):
                for est in ("naive", "deconv"):
                    for metric, value in (
                        ("spearman_pooled", 0.5 + 0.01 * eps + 0.1 * rep),
                        ("spearman", 0.4),
                        ("privacy_Z", 2.0 / eps),
                        ("answered", 1.0),
                        ("n_users", float(n)),
                        ("guarantee_epsilon", eps),
                    ):
                        rows.append(("g", "laplace_ldp", "local", rep, eps, est, 0.55, n, metric, value))
            for mech, z in (("zero", 3.0), ("fedkde", 0.0)):
                for metric, value in (
                    ("spearman_pooled", 0.9 if mech == "fedkde" else 0.0),
                    ("spearman", 0.5),
                    ("privacy_Z", z),
                    ("answered", 1.0),
                    ("n_users", float(n)),
                    ("guarantee_epsilon", np.nan),
                ):
                    rows.append(
                        (
                            "g",
                            mech,
                            "local" if mech == "zero" else "none",
                            rep,
                            np.nan,
                            None,
                            0.55 if mech == "fedkde" else np.nan,
                            n,
                            metric,
                            value,
                        )
                    )
    path = tmp_path / "metrics.parquet"
    io.write_parquet(_tidy(rows), path)
    return path


def test_log_axis_ticks_are_the_data_values_written_plainly():
    fig, ax = plt.subplots()
    ax.plot([2, 8, 1000, 20000], [1, 2, 3, 4])
    ax.set_xscale("log")
    figures.log_ticks(ax, [2, 8, 1000, 20000])
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    minor = [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
    plt.close(fig)
    assert labels == ["2", "8", "1000", "20000"] and minor == []


def test_tradeoff_legend_names_the_swept_parameter(tmp_path, monkeypatch):
    figs = []
    real_save = figures.save
    monkeypatch.setattr(figures, "save", lambda fig, path, dpi: figs.append(fig) or real_save(fig, path, dpi))
    plots.tradeoff(summary_path=str(_summary(tmp_path)), out_png=str(tmp_path / "t.png"), settings={"dpi": 40})
    assert_figure(tmp_path / "t.png")
    (legend,) = figs[0].legends  # one legend for every panel, beside them, not over the points
    seen = [t.get_text() for t in legend.get_texts()]
    assert "laplace_ldp over epsilon (estimator=deconv)" in seen
    assert "laplace_ldp over epsilon (estimator=naive)" in seen
    assert not any("(" in label and "'" in label for label in seen), seen
    assert not any(ax.get_legend() for ax in figs[0].axes)


def test_surfaces_grid_has_colour_bars_and_a_robust_scale(tmp_path, monkeypatch):
    grid = Grid.regular(Domain(-3, 3, -3, 3), 40, 40)
    gx, gy = np.meshgrid(grid.x, grid.y, indexing="ij")
    smooth = np.exp(-(gx**2 + gy**2))
    spiky = smooth.copy()
    spiky[3, 3] = 1e4 * smooth.max()  # one tiny leaf with a huge density (as PrivTree can give)
    paths = []
    for name, values in (("truth", smooth), *((f"m{i}", spiky) for i in range(5))):
        path = tmp_path / f"{name}.nc"
        io.write_netcdf(grid.surface(values, "density", {"units": "1/m^2"}, "m"), path)
        paths.append(str(path))
    out = tmp_path / "s.png"
    captured = {}
    real_save = plots.save_figure

    def keep(fig, path, settings):
        captured["fig"] = fig
        real_save(fig, path, settings)

    monkeypatch.setattr(plots, "save_figure", keep)
    plots.surfaces(
        truth_path=paths[0],
        estimate_paths=paths[1:],
        labels=[f"mechanism {i}: n=600, epsilon=2" for i in range(5)],
        out_png=str(out),
        settings={},
    )
    fig = captured["fig"]
    panels = [ax for ax in fig.axes if ax.images]
    bars = [ax for ax in fig.axes if not ax.images and ax.get_label() == "<colorbar>"]
    assert len(panels) == 6 and len(bars) == 6
    # a grid, not a strip: 6 panels in 2 rows of at most 4
    assert len({round(ax.get_position().y0, 3) for ax in panels}) == 2
    # the spiky panel still shows the smooth bump: its scale stops below the spike
    image = panels[1].images[0]
    assert image.norm.vmax < 0.01 * spiky.max()
    shown = image.norm(spiky)
    assert (np.clip(shown, 0, 1) > 0.2).mean() > 0.05  # min-max scaling would leave ~0 % above 0.2
    png = plt.imread(out)
    assert png.shape[1] < 2.5 * png.shape[0]  # no 10:1 strip
    assert_figure(out, (2, 4), skip=((1, 2), (1, 3)))  # every panel shows its surface (4 + 2 layout)


def test_runs_table_is_one_row_per_setting_with_units_and_relation(tmp_path):
    tidy = pd.read_parquet(_summary(tmp_path))
    tidy["guarantee_relation"] = np.where(tidy["mechanism"] == "laplace_ldp", "any two locations in the box", "none")
    io.write_parquet(tidy, tmp_path / "with_relation.parquet")
    table = runs_table(
        summary_parquet=str(tmp_path / "with_relation.parquet"), units={"g": "m"}, out_csv=str(tmp_path / "runs.csv")
    )
    # 2 N x (4 laplace_ldp settings + zero + fedkde), reps averaged
    assert len(table) == 12 and (table["reps"] == 2).all()
    assert list(table.columns[:8]) == ["dataset", "mechanism", "trust_model", "n", "epsilon", "estimator", "h", "reps"]
    assert {
        "privacy_Z [m]",
        "spearman [rank corr.]",
        "n_users [users]",
        "epsilon_guaranteed",
        "epsilon_relation",
    } <= set(table.columns)
    row = table[
        (table["mechanism"] == "laplace_ldp")
        & (table["epsilon"] == 4.0)
        & (table["n"] == 600)
        & (table["estimator"] == "naive")
    ].iloc[0]
    assert row["spearman_pooled [rank corr.]"] == pytest.approx(0.5 + 0.04 + 0.05)  # mean of reps 0 and 1
    assert row["epsilon_guaranteed"] == 4.0 and row["epsilon_relation"] == "any two locations in the box"
    assert np.isnan(table.loc[table["mechanism"] == "zero", "epsilon_guaranteed"]).all()
    back = pd.read_csv(tmp_path / "runs.csv")
    assert list(back.columns) == list(table.columns)


def test_runs_table_with_mixed_units_names_the_unit_column(tmp_path):
    tidy = pd.read_parquet(_summary(tmp_path))
    tidy = pd.concat([tidy, tidy.assign(dataset="city")], ignore_index=True)
    io.write_parquet(tidy, tmp_path / "two.parquet")
    table = runs_table(
        summary_parquet=str(tmp_path / "two.parquet"), units={"g": "1", "city": "m"}, out_csv=str(tmp_path / "runs.csv")
    )
    assert "privacy_Z [distance_unit]" in table and set(table["distance_unit"]) == {"domain units", "m"}
    one = runs_table(summary_parquet=str(_summary(tmp_path)), units={"g": "1"}, out_csv=str(tmp_path / "one.csv"))
    assert "privacy_Z [domain units]" in one and "ise" not in one  # no ISE rows in this summary


@pytest.mark.workflow
@pytest.mark.parametrize("illustrations", [False, True])
def test_paper_illustrations_only_when_configured(make_workdir, illustrations):
    config = copy.deepcopy(TINY)
    config["plots"]["illustrations"] = illustrations
    config["experiments"]["density"]["mechanisms"]["rff"] = {"n": [300], "h": 0.55, "B": [1, 2]}
    wd = make_workdir(config)
    write_config(wd, config)
    dry = run_snakemake(wd, "-n", "--cores", "1", "--quiet", "rules")
    assert ("plot_rff_illustrations" in dry.stdout) == illustrations
    assert "plot_surfaces" in dry.stdout
