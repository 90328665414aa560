"""The public Python API (``locpriv.api``): keyword-only validated objects over the DAG's plugins."""

import contextlib
import io
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import locpriv
from locpriv import api, mechanisms
from locpriv.domain import Domain, Grid
from locpriv.seeding import rng
from locpriv.stages.run import run_seed_keys

from conftest import ROOT

# The README's example (the fenced block marked ``python api-example``), kept here too so it
# is tested before the README carries it; the two must stay identical.
API_EXAMPLE = '''\
from locpriv import Domain, Grid, GeoInd, LaplaceLDP, RFF, SLDP
from locpriv.seeding import rng
grid = Grid.regular(Domain(0.0, 1.0, 0.0, 1.0), P=64, Q=64)
xy = rng(0, "users").uniform(0.3, 0.7, size=(5000, 2))  # one location per user
mechs = [GeoInd(epsilon=50.0, h=0.05), LaplaceLDP(epsilon=40.0, h=0.1), RFF(h=0.05, B=2),
         SLDP(epsilon=2.0, split_rule="all_children")]  # the proven split rule (Thm 4.1)
for mech in mechs:
    density = mech.fit_estimate(xy, rng=rng(0, type(mech).__name__), grid=grid)  # a pdf on the grid
    print(type(mech).__name__, mech.guarantee()["epsilon"], round(density.sum() * grid.cell_area, 2))
'''

GRID = Grid.regular(Domain(0.0, 1.0, 0.0, 1.0), 64, 64)
# the smallest valid configuration of every registered mechanism
CONFIGS = {"fedkde": dict(h=0.05), "geoind": dict(epsilon=50.0, h=0.05), "zero": {},
           "laplace_ldp": dict(epsilon=40.0, h=0.1), "rff": dict(h=0.05, B=2), "sldp": dict(epsilon=2.0),
           "privtree": dict(epsilon=2.0), "ldp_oue_grid": dict(epsilon=2.0, level=3),
           "ldp_kdtree": dict(epsilon=2.0, height=3), "dp_heatmap": dict(epsilon=2.0, depth=4), "heatmap_flat": dict(epsilon=2.0, depth=4),
           "heatmap_hierarchical": dict(epsilon=2.0, depth=4), "hdg": dict(epsilon=2.0)}
CLASSES = {cls._name: cls for cls in (getattr(api, name) for name in api.__all__)}


def _run_example(code: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "api-example", "exec"), {})
    return out.getvalue().splitlines()


def _check_example_output(lines: list[str]) -> None:
    """One line per mechanism: its name, the configured epsilon (None: no formal DP), the mass."""
    assert [line.split()[:2] for line in lines] == [["GeoInd", "50.0"], ["LaplaceLDP", "40.0"],
                                                    ["RFF", "None"], ["SLDP", "2.0"]]
    masses = [float(line.split()[2]) for line in lines]
    # loose sanity only: test_estimate_integrates_to_one holds the statistical bound
    assert all(0.8 <= m <= 1.2 for m in masses), masses


def test_api_example_runs():
    _check_example_output(_run_example(API_EXAMPLE))


def test_readme_api_example_runs():
    found = re.search(r"```python api-example\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    if found is None:
        pytest.skip("README example not yet merged")
    assert found.group(1) == API_EXAMPLE
    _check_example_output(_run_example(found.group(1)))


def test_one_api_class_per_registered_mechanism_exported_lazily():
    assert sorted(CLASSES) == mechanisms.names() == sorted(CONFIGS)
    assert {name for name, module in locpriv._LAZY.items() if module == "api"} == set(api.__all__)
    assert locpriv.GeoInd is api.GeoInd and locpriv.Grid is Grid
    # the workflow's jobs import locpriv without paying for the API (or xarray)
    probe = "import sys, locpriv; print(sorted({'locpriv.api', 'xarray'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"


def test_constructor_is_keyword_only():
    with pytest.raises(TypeError, match=r"keyword arguments only, e\.g\. GeoInd\(epsilon=1\.0\)"):
        api.GeoInd(1.0, 0.5)


@pytest.mark.parametrize("cls, given, message", [
    (api.GeoInd, dict(epsilon=-1.0, h=0.5), r"'GeoInd\.epsilon': -1\.0 is not allowed; allowed: float > 0\.0"),
    (api.GeoInd, dict(epsilon=1.0, h=0.5, eps=2), r"'GeoInd': unknown parameter\(s\) \['eps'\]; allowed:"),
    (api.GeoInd, dict(h=0.5), r"'GeoInd\.epsilon': required"),
    (api.GeoInd, dict(epsilon=1.0, h="knn"), r"'GeoInd\.h': 'knn' is computed from a whole dataset"),
    (api.LaplaceLDP, dict(epsilon=4, h=0.5, estimator="ols"), r"'LaplaceLDP\.estimator': 'ols' is not allowed"),
    (api.RFF, dict(h=0.55, B=2.5), r"'RFF\.B': 2\.5 is not allowed; allowed: int > 0"),
    (api.SLDP, dict(epsilon="2"), r"'SLDP\.epsilon': '2' is not allowed"),
])
def test_bad_parameter_is_one_line_value_error(cls, given, message):
    with pytest.raises(ValueError, match=message) as err:
        cls(**given)
    assert "\n" not in str(err.value)


def test_bad_inputs_to_randomize_and_estimate():
    mech = api.SLDP(epsilon=2.0)
    xy = np.full((10, 2), 0.5)
    with pytest.raises(ValueError, match=r"xy: expected an \(n, 2\) array"):
        mech.randomize(np.zeros((10, 3)), rng=rng(0, "t"), domain=GRID)
    with pytest.raises(ValueError, match="xy: locations must be finite"):
        mech.randomize(np.array([[0.5, np.nan]]), rng=rng(0, "t"), domain=GRID)
    with pytest.raises(TypeError, match="rng: expected a numpy Generator"):
        mech.randomize(xy, rng=0, domain=GRID)
    with pytest.raises(ValueError, match=r"SLDP\.randomize: domain= is required"):
        mech.randomize(xy, rng=rng(0, "t"))
    with pytest.raises(TypeError, match="view: expected the DataFrame randomize returned"):
        mech.estimate(xy, grid=GRID)
    with pytest.raises(TypeError, match="grid: expected a locpriv.Grid"):
        mech.estimate(mech.randomize(xy, rng=rng(0, "t"), domain=[0, 1, 0, 1]), grid=[0, 1, 0, 1])


def test_randomize_without_domain_where_the_mechanism_ignores_it():
    xy = rng(0, "users").uniform(0.3, 0.7, size=(50, 2))
    view = api.GeoInd(epsilon=50.0, h=0.05).randomize(xy, rng=rng(1, "t"))
    assert list(view.columns) == ["user", "x", "y"] and len(view) == 50


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_guarantee_record_states_epsilon_and_relation(name):
    """The configured epsilon is recorded under the main or another stated relation, or the record is
    void with its reason (no formal DP, or a non-private input such as the true map)."""
    record = CLASSES[name](**CONFIGS[name]).guarantee()
    assert {"model", "epsilon", "relation", "covers"} <= set(record) and record["relation"]
    if record["epsilon"] is None:
        assert record["model"].startswith("none") or record["non_private_inputs"]
    elif "epsilon" in CONFIGS[name]:
        assert CONFIGS[name]["epsilon"] in [record["epsilon"], *record["other_relations"].values()]
    else:
        assert name == "zero" and record["epsilon"] == 0.0


@pytest.mark.parametrize("name, config", [("geoind", CONFIGS["geoind"]), ("laplace_ldp", CONFIGS["laplace_ldp"]),
                                          ("rff", dict(h=0.05, B=8))])   # B = 2: se 0.027, too weak
def test_estimate_integrates_to_one(name, config):
    """The density's mass on the grid, from K = 20 equal chunks of n = 20000 users.

    The estimate is linear in the users, so the full-view mass is the mean of the chunks'
    masses, and their spread gives its standard error: |mass - 1| <= t_{19}(1 - α/2) se + 1e-3
    at α = 0.001, where 1e-3 bounds the deterministic part (kernel mass beyond the box for
    users in [0.4, 0.6]^2, at least 8 h from its edge, and the midpoint rule, exact to ~1e-20 for a
    Gaussian of h >= 1.6 cells).  Power: se < 0.02, so a lost normaliser (a factor 2π h^2, B or 1/n) fails.
    """
    grid = Grid.regular(GRID.domain, 32, 32)   # coarse: RFF's cost is per grid cell and feature
    mech = CLASSES[name](**config)
    xy = rng(0, "users").uniform(0.4, 0.6, size=(20000, 2))
    view = mech.randomize(xy, rng=rng(0, name), domain=grid)
    mass = np.array([mech.estimate(chunk, grid=grid).sum() * grid.cell_area
                     for chunk in (view.iloc[k * 1000:(k + 1) * 1000] for k in range(20))])
    np.testing.assert_allclose(mass.mean(), mech.estimate(view, grid=grid).sum() * grid.cell_area, rtol=1e-9)
    se = mass.std(ddof=1) / np.sqrt(len(mass))
    assert se < 0.02
    assert abs(mass.mean() - 1.0) <= stats.t.ppf(1 - 0.001 / 2, len(mass) - 1) * se + 1e-3


def test_sldp_estimate_is_a_pdf():
    density = api.SLDP(epsilon=2.0).fit_estimate(rng(0, "users").uniform(0.3, 0.7, size=(5000, 2)),
                                                  rng=rng(0, "sldp"), grid=GRID)
    assert (density >= 0).all()
    assert density.sum() * GRID.cell_area == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_api_equals_the_workflow_plugin_path_bit_for_bit(name):
    """Same users, same random stream (keyed as the workflow keys a one-shard run): same view, same density.

    The DAG's jobs call these plugin methods (``locpriv.stages.run``) with this stream for shard 0.
    """
    mech, plugin = CLASSES[name](**CONFIGS[name]), mechanisms.get(name)
    params = plugin.validate(CONFIGS[name], "test")
    run = {"dataset": "demo", "mechanism": name, "rep": 0}
    stream = lambda: rng(7, "randomize", *run_seed_keys(run, params), 0)  # noqa: E731
    xy = rng(0, "users").uniform(0.2, 0.8, size=(400, 2))
    points = pd.DataFrame({"user": np.arange(400), "x": xy[:, 0], "y": xy[:, 1]})

    view = mech.randomize(xy, rng=stream(), domain=GRID)
    expected = plugin.randomize(points, params, GRID, stream())
    pd.testing.assert_frame_equal(view, expected)
    assert view.attrs == expected.attrs
    # randomisation reads only the public box: a Domain gives the same view as the Grid
    from_box = mech.randomize(xy, rng=stream(), domain=GRID.domain)
    pd.testing.assert_frame_equal(from_box, expected)
    assert from_box.attrs == expected.attrs
    density = plugin.estimate(plugin.partial(expected, params, GRID), len(expected), params, GRID)
    assert np.array_equal(mech.estimate(view, grid=GRID), density, equal_nan=True)
