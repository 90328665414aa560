"""The rules every workflow figure follows (text of at least 8 pt, units on numeric axes, a colour bar
on every map, no empty panel) and the figures themselves, inspected as matplotlib objects.

Every PNG goes through ``locpriv.figures.save``, which runs the same check; the test suite sets
``LOCPRIV_STRICT_FIGURES=1`` (conftest), so every workflow test that draws a figure fails on a
figure breaking a rule.  Here each figure function of the density experiment is called on a
constructed summary and its Figure inspected directly.
"""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb

from locpriv import figures, frontier, io, plots, plots_rff
from locpriv.domain import Domain, Grid
from locpriv.figures import plt
from locpriv.radiomap import plots as radiomap_plots

ROOT = Path(__file__).resolve().parents[1]


def _good():
    fig, (ax, img) = plt.subplots(1, 2)
    ax.plot([0, 1], [0, 1])
    ax.set(xlabel="distance [m]", ylabel="recall (fraction)", title="a line")
    im = img.imshow(np.eye(3))
    img.set(xlabel="x [m]", ylabel="y [m]")
    fig.colorbar(im, ax=img).set_label("density [1/m²]")
    return fig, ax, img


def test_a_readable_figure_has_no_problems():
    fig, _ax, img = _good()
    # an axis of names (one row per mechanism) needs no unit; a map sharing a colour bar's norm needs none
    _, cats = plt.subplots()
    cats.barh(["geoind", "zero"], [1, 2])
    cats.set_xlabel("error [m]")
    shared = fig.add_subplot(3, 3, 9)
    shared.imshow(np.eye(3), norm=img.images[0].norm)
    shared.axis("off")
    assert figures.problems(fig) == [] and figures.problems(cats.figure) == []
    plt.close("all")


@pytest.mark.parametrize(
    "defect, expected",
    [
        (lambda fig, ax, img: ax.set_title("tiny", fontsize=6), r"text below 8 pt: 'tiny' \(6 pt\)"),
        (lambda fig, ax, img: ax.legend(["a line"], fontsize=7), r"text below 8 pt: 'a line' \(7 pt\)"),
        (lambda fig, ax, img: ax.set_xlabel("distance"), r"axis label 'distance' names no unit"),
        (lambda fig, ax, img: ax.set_ylabel(""), r"axis label '' names no unit"),
        (lambda fig, ax, img: ax.imshow(np.eye(2)), r"a map without a colour bar"),
        (lambda fig, ax, img: fig.add_subplot(3, 3, 9), r"empty axes"),
        (
            lambda fig, ax, img: ax.set_ylabel(
                "Spearman correlation with the true density, every word of it [rank corr.]"
            ),
            r"axis label 'Spearman .*' is longer than its axes",
        ),
    ],
)
def test_each_defect_is_found(defect, expected):
    """Power check of the figure rules: one planted defect, one problem naming it."""
    fig, ax, img = _good()
    defect(fig, ax, img)
    found = figures.problems(fig)
    plt.close(fig)
    assert len(found) == 1 and re.search(expected, found[0]), found


def test_strict_save_refuses_a_bad_figure_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(figures.STRICT_ENV, "1")
    fig, ax, _ = _good()
    ax.set_title("tiny", fontsize=5)
    with pytest.raises(ValueError, match=r"figure .*bad\.png: text below 8 pt"):
        figures.save(fig, tmp_path / "bad.png", 40)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(figures.STRICT_ENV, "0")  # a user's run: the figure, and one warning line per problem
    fig, ax, _ = _good()
    ax.set_title("tiny", fontsize=5)
    figures.save(fig, tmp_path / "bad.png", 40)
    assert (tmp_path / "bad.png").stat().st_size > 0
    assert "warning: figure" in capsys.readouterr().err


def _srgb_to_lab(rgb):
    rgb = np.asarray(rgb, float)
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = (
        lin
        @ np.array(
            [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
        ).T
        / np.array([0.95047, 1.0, 1.08883])
    )
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


def _ciede2000(lab1, lab2):
    """CIEDE2000 colour difference (Sharma, Wu & Dalal 2005), broadcasting over leading axes."""
    L1, a1, b1 = np.moveaxis(lab1, -1, 0)
    L2, a2, b2 = np.moveaxis(lab2, -1, 0)
    cbar = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(cbar**7 / (cbar**7 + 25**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p, h2p = np.degrees(np.arctan2(b1, a1p)) % 360, np.degrees(np.arctan2(b2, a2p)) % 360
    dh = h2p - h1p
    dh = np.where(c1p * c2p == 0, 0, np.where(dh > 180, dh - 360, np.where(dh < -180, dh + 360, dh)))
    dL, dC, dH = L2 - L1, c2p - c1p, 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dh / 2))
    lbar, cbarp, hsum = (L1 + L2) / 2, (c1p + c2p) / 2, h1p + h2p
    hbar = np.where(
        c1p * c2p == 0,
        hsum,
        np.where(np.abs(h1p - h2p) <= 180, hsum / 2, np.where(hsum < 360, (hsum + 360) / 2, (hsum - 360) / 2)),
    )
    t = (
        1
        - 0.17 * np.cos(np.radians(hbar - 30))
        + 0.24 * np.cos(np.radians(2 * hbar))
        + 0.32 * np.cos(np.radians(3 * hbar + 6))
        - 0.20 * np.cos(np.radians(4 * hbar - 63))
    )
    rt = -np.sin(np.radians(60 * np.exp(-(((hbar - 275) / 25) ** 2)))) * 2 * np.sqrt(cbarp**7 / (cbarp**7 + 25**7))
    sl = 1 + 0.015 * (lbar - 50) ** 2 / np.sqrt(20 + (lbar - 50) ** 2)
    sc, sh = 1 + 0.045 * cbarp, 1 + 0.015 * cbarp * t
    return np.sqrt((dL / sl) ** 2 + (dC / sc) ** 2 + (dH / sh) ** 2 + rt * (dC / sc) * (dH / sh))


def _closest_pair(colours) -> float:
    lab = _srgb_to_lab([to_rgb(c) for c in colours])
    d = _ciede2000(lab[:, None], lab[None, :])
    np.fill_diagonal(d, np.inf)
    return float(d.min())


def test_palette_keeps_a_dozen_mechanisms_apart():
    # a difference of about 10 is "clearly different at a glance"; tab20 pairs each hue with a lighter copy
    assert _ciede2000(_srgb_to_lab(np.array([[0.5, 0.5, 0.5]])), _srgb_to_lab(np.array([[0.5, 0.5, 0.5]]))) == 0
    assert _closest_pair(plt.get_cmap("tab20").colors) < 13  # the measure sees tab20's near pairs
    assert _closest_pair(figures.PALETTE[:12]) > 24
    assert _closest_pair(figures.PALETTE[:16]) > 21 and _closest_pair(figures.PALETTE) > 17


def test_a_mechanism_has_one_colour_in_every_figure_of_every_config():
    from locpriv.mechanisms import builtin_names

    alone = figures.mechanism_colours(["zero"])
    every = figures.mechanism_colours(builtin_names())
    assert alone["zero"] == every["zero"] and alone == every  # the config's mechanisms do not matter
    assert len(set(every.values())) == len(every)  # the built-in ones all apart
    with_plugins = figures.mechanism_colours(["zero", "my_plugin", "another"])
    free = figures.PALETTE[len(every) : len(every) + 2]
    assert (with_plugins["another"], with_plugins["my_plugin"]) == free  # the next free colours, sorted
    assert with_plugins["zero"] == every["zero"]


def test_labels_of_a_crowded_cluster_do_not_overlap():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0, 1, 14), rng.uniform(0, 0.15, 14)  # 14 points in a thin band
    fig, ax = plt.subplots(figsize=(5, 4), dpi=80)
    ax.scatter(x, y)
    ax.set(xlim=(-0.1, 1.1), ylim=(-0.5, 1))
    texts = figures.place_labels(ax, x, y, [f"ε={k}, naive" for k in range(14)])
    renderer = fig.canvas.get_renderer()
    boxes = [figures.text_box(t, renderer) for t in texts]
    assert len(texts) == 14
    assert all(figures._overlap(a, b) == 0 for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    frame = ax.get_window_extent(renderer)
    assert all(figures._overlap(b, frame) == pytest.approx(b.width * b.height) for b in boxes)  # inside the axes
    plt.close(fig)


MECHANISMS = {
    "fedkde": "none",
    "zero": "none",
    "rff": "none",
    "geoind": "local",
    "laplace_ldp": "local",
    "sldp": "local",
    "ldp_oue_grid": "local",
    "ldp_kdtree": "local",
    "privtree": "central",
    "dp_heatmap": "distributed",
    "heatmap_flat": "distributed",
    "heatmap_hierarchical": "distributed",
}


def _summary(path):
    """A tidy summary of every default mechanism on two datasets and two N, as the summary stage
    writes it (typed epsilon, the trust model, both adversaries' metrics)."""
    rng = np.random.default_rng(0)
    rows = []
    settings = {
        "rff": [{"B": b, "h": 0.55} for b in (1, 2, 8)],
        "geoind": [{"epsilon": e, "h": 0.55} for e in (1, 5)],
        "laplace_ldp": [{"epsilon": e, "estimator": s, "h": 0.55} for e in (4, 16) for s in ("naive", "deconv")],
        "fedkde": [{"h": 0.55}],
        "zero": [{}],
    }
    for dataset, side in (("gauss9", 6.0), ("octagon8", 12.0)):
        for n in (1000, 20000):
            for mech, trust in MECHANISMS.items():
                for setting, rep in ((s, r) for s in settings.get(mech, [{"epsilon": 2}]) for r in range(3)):
                    err = rng.uniform(0, 0.3 * side)
                    values = {
                        "spearman": rng.uniform(0, 1),
                        "ise": rng.uniform(0, 0.1),
                        "range_mre": rng.uniform(0, 1),
                        "hotspot_recall": rng.uniform(0, 1),
                        "spearman_pooled": rng.uniform(0, 1),
                        "privacy_Z": rng.uniform(0, side / 2),
                        "answered": 1.0,
                        "n_users": float(n),
                        "informed_expected_error": err,
                        "informed_guess_error": err,
                        "informed_hit_r": 0.1,
                        "informed_p10_error": err / 2,
                        "informed_exposed": rng.uniform(0, 1),
                        "prior_expected_error": 0.3 * side,
                        "prior_p10_error": 0.15 * side,
                        "bayes_expected_error": err * 1.2,
                        "bayes_guess_error": err,
                        "bayes_hit_r": 0.1,
                        "guarantee_epsilon": float(setting.get("epsilon", np.nan)),
                    }
                    for metric, value in values.items():
                        rows.append(
                            {
                                "dataset": dataset,
                                "mechanism": mech,
                                "rep": rep,
                                "n": n,
                                "trust_model": trust,
                                "epsilon": float(setting.get("epsilon", np.nan)),
                                "B": str(setting.get("B", "")),
                                "h": str(setting.get("h", "")),
                                "estimator": setting.get("estimator", ""),
                                "guarantee_relation": "r",
                                "metric": metric,
                                "value": value,
                            }
                        )
    io.write_parquet(pd.DataFrame(rows), path)
    return str(path)


@pytest.fixture
def saved(monkeypatch):
    """Every Figure handed to figures.save (and to the radio-map study's own save), not written."""
    figs = []
    monkeypatch.setattr(figures, "save", lambda fig, path, dpi: figs.append(fig))
    monkeypatch.setattr(radiomap_plots, "save_figure", lambda fig, path, dpi: figs.append(fig))
    yield figs
    plt.close("all")


UNITS = {"gauss9": "1", "octagon8": "1"}


@pytest.mark.parametrize("name", ["metrics_vs_n", "tradeoff", "gain_per_cost"])
def test_summary_figures_follow_the_rules(tmp_path, saved, name):
    getattr(plots, name)(
        summary_path=_summary(tmp_path / "s.parquet"), out_png="x.png", settings={"dpi": 50, "units": UNITS}
    )
    (fig,) = saved
    assert figures.problems(fig) == []
    if name == "tradeoff":  # each mechanism in its fixed colour, its curves told apart by line style
        fixed = figures.mechanism_colours([])
        lines = [line for line in fig.axes[0].lines if line.get_label().startswith(("rff", "laplace_ldp", "zero"))]
        assert {line.get_label().split()[0] for line in lines} == {"rff", "laplace_ldp", "zero"}
        assert all(line.get_color() == fixed[line.get_label().split()[0]] for line in lines)
    if name == "metrics_vs_n":
        # one row per mechanism setting on the y axis, not a line per setting against N
        ax = fig.axes[0]
        assert len(ax.get_yticklabels()) == 18 and "geoind (epsilon=1)" in [t.get_text() for t in ax.get_yticklabels()]
        assert "[domain units]" in fig.axes[1].get_xlabel()


def test_frontier_figure_follows_the_rules(tmp_path, saved):
    pts = frontier.points(frontier.releases(pd.read_parquet(_summary(tmp_path / "s.parquet"))))
    levels = frontier.levels_of(pts, frontier.settings({}), {})
    frontier.plot(pts, list(frontier.UTILITIES), levels, UNITS, "x.png", 50)
    (fig,) = saved
    assert figures.problems(fig) == [] and len(fig.axes) == 4 * 4  # four tasks x two datasets x two N
    # the numbers beside the points never overlap one another within a panel
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        boxes = [figures.text_box(t, renderer) for t in ax.texts if not t.get_text().startswith("L")]
        assert len(boxes) == len(pts) // 4
        assert all(figures._overlap(a, b) == 0 for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_surfaces_and_rff_illustrations_follow_the_rules(tmp_path, saved):
    grid = Grid.regular(Domain(-3, 3, -3, 3), 30, 30)
    gx, gy = np.meshgrid(grid.x, grid.y, indexing="ij")
    paths = []
    for name, values in (("truth", np.exp(-(gx**2) - gy**2)), ("a", np.exp(-(gx**2))), ("b", np.full_like(gx, np.nan))):
        paths.append(str(tmp_path / f"{name}.nc"))
        io.write_netcdf(grid.surface(values, "density", {"units": "1/1^2"}, "1"), paths[-1])
    plots.surfaces(
        truth_path=paths[0],
        estimate_paths=paths[1:],
        labels=["a: epsilon=2", "b: refused"],
        out_png="x.png",
        settings={"dpi": 50},
    )
    plots_rff.plot_fig3_convergence(path="x.png", rng=np.random.default_rng(0), dpi=50)
    plots_rff.plot_user_surfaces(path="x.png", rng=np.random.default_rng(0), dpi=50)
    assert [figures.problems(fig) for fig in saved] == [[], [], []]
    surfaces = saved[0]
    # three panels (one says "no estimate") and two colour bars: no empty cell
    assert len(surfaces.axes) == 3 + 2


def test_radio_map_figures_have_readable_text_and_fig5_a_colour_bar(saved):
    runs = [
        ("radio_uniform", 1.0, 0.0),
        ("radio_uniform", 10.0, 0.0),
        ("radio_geo", 1.0, 1.0),
        ("radio_geo", 10.0, 1.0),
    ]
    mae = pd.DataFrame(
        [{"scheme": s, "mu": mu, "rho": rho, "epoch": e, "mae_db": 5.0 / e} for s, mu, rho in runs for e in (1, 2, 3)]
    )
    attack = pd.DataFrame(
        [
            {"scheme": s, "mu": mu, "rho": rho, "epoch": 1, "nu": nu, "rmse_m": mu * float(nu)}
            for s, mu, rho in runs
            for nu in ("1.0", "2.0")
        ]
    )
    radiomap_plots.mae_curves(mae, "x.png", 50)
    radiomap_plots.error_vs(attack, "mu", ["radio_uniform", "radio_geo"], 1, ["1.0", "2.0"], "x.png", 50, "Fig. 4")
    maps = [(f"panel {k}", np.random.default_rng(k).normal(size=25) * (k + 1)) for k in range(3)]
    radiomap_plots.gradient_maps(maps, 5, "x.png", 50)
    problems = [figures.problems(fig) for fig in saved]
    fig5 = saved[2]
    assert problems[2] == [] and len(fig5.axes) == 3 + 1  # three maps, one shared colour bar, no empty panel
    # not done in this branch (radiomap/plots.py is another helper's, fonts and Fig. 5 only here): the
    # x axes "epoch" and "mu" name no unit; nothing else is wrong with Fig. 4 and the MAE curves
    assert [[re.sub(r"^.*: ", "", p) for p in found] for found in problems[:2]] == [
        ["axis label 'epoch' names no unit ([unit] or (unit))"],
        ["axis label 'mu' names no unit ([unit] or (unit))"],
    ]


def test_every_library_figure_is_saved_through_the_check():
    """A savefig anywhere else would bypass the rules (radiomap/plots.py keeps its own save, see above)."""
    calls = sorted(
        str(p.relative_to(ROOT / "lib")) for p in (ROOT / "lib").rglob("*.py") if "savefig(" in p.read_text()
    )
    assert calls == ["locpriv/figures.py", "locpriv/radiomap/plots.py"]
