"""The public Python API: the registered mechanism classes, keyword-only, validated, used by the workflow too."""

import contextlib
import inspect
import io
import json
import math
import pydoc
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import locpriv
from conftest import ROOT
from locpriv import api, mechanisms
from locpriv import io as lpio
from locpriv.datasets.persons import person_level_epsilon
from locpriv.domain import Domain, Grid
from locpriv.dp import ADD_REMOVE
from locpriv.mechanisms.base import Mechanism
from locpriv.seeding import rng
from locpriv.stages import prepare
from locpriv.stages import run as st_run

# The documentation's example (docs/python-api.md, the ```python block after this HTML comment: a word
# after the fence's language is not Markdown the site renders, issue 40), kept here too so the API's own
# tests hold it; the two must stay identical.
API_EXAMPLE_MARK = "<!-- api-example: tests/test_api.py runs this block -->"
API_EXAMPLE = """\
from locpriv import Domain, Grid, GeoInd, LaplaceLDP, RFF, SLDP
from locpriv.seeding import rng

grid = Grid.regular(Domain(0.0, 1.0, 0.0, 1.0), P=64, Q=64)
xy = rng(0, "users").uniform(0.3, 0.7, size=(5000, 2))  # one location per user
mechs = [
    GeoInd(epsilon=50.0, h=0.05),
    LaplaceLDP(epsilon=40.0, h=0.1),
    RFF(h=0.05, B=2),
    SLDP(epsilon=2.0, split_rule="all_children"),
]  # the proven split rule (Thm 4.1)
for mech in mechs:  # rng: an int seeds a simulation; None (the default) draws OS entropy
    density = mech.fit_estimate(xy, rng=1, grid=grid)  # a pdf on the grid
    g = mech.guarantee()  # the privacy record: model, epsilon, relation, trust model, ...
    print(type(mech).__name__, g.epsilon, g.trust_model, round(density.sum() * grid.cell_area, 2))
"""

GRID = Grid.regular(Domain(0.0, 1.0, 0.0, 1.0), 64, 64)
# the smallest valid configuration of every registered mechanism
CONFIGS = {
    "fedkde": dict(h=0.05),
    "geoind": dict(epsilon=50.0, h=0.05),
    "zero": {},
    "laplace_ldp": dict(epsilon=40.0, h=0.1),
    "rff": dict(h=0.05, B=2),
    "sldp": dict(epsilon=2.0),
    "privtree": dict(epsilon=2.0),
    "ldp_oue_grid": dict(epsilon=2.0, level=3),
    "ldp_kdtree": dict(epsilon=2.0, height=3),
    "dp_heatmap": dict(epsilon=2.0, depth=4),
    "heatmap_flat": dict(epsilon=2.0, depth=4),
    "heatmap_hierarchical": dict(epsilon=2.0, depth=4),
    "hdg": dict(epsilon=2.0),
}
CLASSES = {cls.name: cls for cls in api.CLASSES.values()}


def _run_example(code: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "api-example", "exec"), {})
    return out.getvalue().splitlines()


def _check_example_output(lines: list[str]) -> None:
    """One line per mechanism: its name, the configured epsilon (None: no formal DP), trust model, mass."""
    assert [line.split()[:3] for line in lines] == [
        ["GeoInd", "50.0", "local"],
        ["LaplaceLDP", "40.0", "local"],
        ["RFF", "None", "none"],
        ["SLDP", "2.0", "local"],
    ]
    masses = [float(line.split()[3]) for line in lines]
    # loose sanity only: test_estimate_integrates_to_one holds the statistical bound
    assert all(0.8 <= m <= 1.2 for m in masses), masses


def test_api_example_runs():
    _check_example_output(_run_example(API_EXAMPLE))


def test_docs_api_example_runs():
    found = re.search(
        rf"{re.escape(API_EXAMPLE_MARK)}\n```python\n(.*?)```", (ROOT / "docs/python-api.md").read_text(), flags=re.S
    )
    assert found is not None, f"docs/python-api.md lost its ```python block after {API_EXAMPLE_MARK}"
    assert found.group(1) == API_EXAMPLE
    _check_example_output(_run_example(found.group(1)))


def test_the_api_classes_are_the_registered_mechanisms_exported_lazily():
    assert sorted(CLASSES) == mechanisms.names() == sorted(CONFIGS)
    assert all(CLASSES[name] is mechanisms.get(name) for name in CLASSES)  # no wrappers
    assert set(api.__all__) == {*api.CLASSES, "BudgetAccountant", "BudgetError", "Domain", "Grid", "Mechanism"}
    assert locpriv.GeoInd is api.GeoInd is mechanisms.get("geoind") and locpriv.Grid is Grid
    assert set(dir(locpriv)) >= set(api.__all__)
    with pytest.raises(AttributeError):
        locpriv.NoSuchMechanism  # noqa: B018
    # the workflow's jobs import locpriv and its submodules without paying for the API (or xarray)
    probe = (
        "import sys, locpriv; from locpriv import io, seeding; "
        "print(sorted({'locpriv.api', 'xarray'} & set(sys.modules)))"
    )
    assert (
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "[]"
    )


def test_constructor_is_keyword_only_and_abstract_bases_do_not_construct():
    with pytest.raises(TypeError, match=r"keyword arguments only, e\.g\. GeoInd\(epsilon=1\.0\)"):
        api.GeoInd(1.0, 0.5)
    with pytest.raises(TypeError, match="abstract mechanism"):
        Mechanism()


@pytest.mark.parametrize(
    "cls, given, message",
    [
        (api.GeoInd, dict(epsilon=-1.0, h=0.5), r"'GeoInd\.epsilon': -1\.0 is not allowed; allowed: float > 0\.0"),
        (api.GeoInd, dict(epsilon=1.0, h=0.5, eps=2), r"'GeoInd': unknown parameter\(s\) \['eps'\]; allowed:"),
        (api.GeoInd, dict(h=0.5), r"'GeoInd\.epsilon': required"),
        (
            api.GeoInd,
            dict(epsilon=1.0, h="knn"),
            r"'GeoInd\.h': 'knn' is resolved by the workflow from private data "
            r"\(h: knn bandwidth computed from every user's raw location\); "
            r"give a value: float > 0\.0",
        ),
        (api.GeoInd, dict(epsilon=math.inf, h=1.0), r"'GeoInd\.epsilon': inf is not allowed; allowed: a finite number"),
        (api.GeoInd, dict(epsilon=1.0, h=math.nan), r"'GeoInd\.h': nan is not allowed; allowed: a finite number"),
        (api.RFF, dict(h=0.55, B=math.inf), r"'RFF\.B': inf is not allowed; allowed: a finite number"),
        (api.LaplaceLDP, dict(epsilon=4, h=0.5, estimator="ols"), r"'LaplaceLDP\.estimator': 'ols' is not allowed"),
        (api.RFF, dict(h=0.55, B=2.5), r"'RFF\.B': 2\.5 is not allowed; allowed: int > 0"),
        (api.SLDP, dict(epsilon="2"), r"'SLDP\.epsilon': '2' is not allowed"),
        (api.SLDP, dict(epsilon=True), r"'SLDP\.epsilon': True is not allowed"),
    ],
)
def test_bad_parameter_is_one_line_value_error_at_construction(cls, given, message):
    with pytest.raises(ValueError, match=message) as err:
        cls(**given)
    assert "\n" not in str(err.value)


def test_defaults_are_filled_and_numbers_cast_on_construction():
    mech = api.RFF(h=1, B=2)
    assert dict(mech.settings) == {"h": 1.0, "B": 2, "h0": "h", "max_features": 50, "risk": 0.5, "min_bands": 2}
    assert type(mech.settings["h"]) is float and type(mech.settings["B"]) is int
    with pytest.raises(TypeError):
        mech.settings["B"] = 3  # read-only


NUMPY_TYPES = {"float": (np.float16, np.float32, np.float64, np.int32, np.int64), "int": (np.int32, np.int64, np.uint8)}


def _holds(kind, value) -> bool:
    try:
        return kind(value).item() == value
    except OverflowError:
        return False


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_numpy_scalars_are_numbers_everywhere(name):
    """Issue 40: every numeric parameter of every mechanism takes numpy's integer and floating scalars as it
    takes Python's (``for eps in np.array([1, 2, 4])``), cast to the same Python value and object; NaN and
    inf stay refused and numpy's bool is no number."""
    cls, given = CLASSES[name], CONFIGS[name]
    python = cls(**given)
    numeric = [
        p for p in cls.params.values() if p.kind in NUMPY_TYPES and isinstance(python.settings[p.name], int | float)
    ]
    for p in numeric:
        value = python.settings[p.name]
        for kind in NUMPY_TYPES[p.kind]:
            if not _holds(kind, value):
                continue  # np.uint8 of 10000, np.float16 of 0.05: not the same number
            mech = cls(**{**given, p.name: kind(value)})
            assert mech == python and type(mech.settings[p.name]) is type(value), (p.name, kind)
        if p.kind == "float":
            for bad in (np.float64("nan"), np.float32("inf")):
                with pytest.raises(ValueError, match=f"'{cls.__name__}.{p.name}': .* a finite number"):
                    cls(**{**given, p.name: bad})
        with pytest.raises(ValueError, match=f"'{cls.__name__}.{p.name}': .* is not allowed"):
            cls(**{**given, p.name: np.bool_(True)})
    assert name == "zero" or numeric  # power: the loop checked something


def test_numpy_epsilon_sweep_runs():
    """The diffprivlib habit the issue quotes: epsilons from a numpy array."""
    eps = [api.GeoInd(epsilon=e, h=1.0).guarantee().epsilon for e in np.array([1, 2, 4])]
    assert eps == [1.0, 2.0, 4.0] and all(type(e) is float for e in eps)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_signature_is_the_declared_parameters_keyword_only(name):
    """Issue 40: inspect.signature and help() show each class's parameters (they showed ``(*args, **params)``):
    keyword-only, in declaration order, the declared defaults, required where there is none; and the
    signature's own binding of the smallest configuration builds the same object."""
    cls = CLASSES[name]
    sig = inspect.signature(cls)
    assert list(sig.parameters) == list(cls.params)
    for p in sig.parameters.values():
        declared = cls.params[p.name]
        assert p.kind is p.KEYWORD_ONLY
        assert p.default == (p.empty if declared.default is None else declared.default)
    bound = sig.bind(**CONFIGS[name])
    assert cls(**bound.arguments) == cls(**CONFIGS[name])
    with pytest.raises(TypeError):
        sig.bind(1.0)
    assert str(sig).startswith("(*" if cls.params else "()") and str(sig) in pydoc.render_doc(cls)


def test_repr_equality_and_hash_are_by_class_and_parameters():
    a, b = api.GeoInd(epsilon=1, h=0.5), api.GeoInd(h=0.5, epsilon=1.0)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert repr(a) == "GeoInd(h=0.5, epsilon=1.0, kde='exact', timing='batch', person_reports=1)"
    assert eval(repr(a), {"GeoInd": api.GeoInd}) == a
    assert a != api.GeoInd(epsilon=2.0, h=0.5)
    assert api.FedKDE(h=0.5) != api.FedKDE(h=0.5, kde="binned")
    assert api.Zero() != api.FedKDE(h=0.5) and api.FedKDE(h=0.5) != "FedKDE(h=0.5, kde='exact')"
    with pytest.raises(AttributeError, match="immutable"):
        a.epsilon = 3.0


def test_rng_contract_none_int_or_generator():
    """None: OS entropy (two calls differ); an int: a seeded Generator (reproducible); a Generator: used as is."""
    mech, xy = api.GeoInd(epsilon=1.0, h=0.5), np.full((200, 2), 0.5)
    fresh = [mech.randomize(xy)[["x", "y"]].to_numpy() for _ in range(2)]
    assert not np.array_equal(*fresh)  # P(equal) = 0 for 400 planar Laplace coordinates on a 2^-11 grid
    seeded = mech.randomize(xy, rng=7)
    pd.testing.assert_frame_equal(seeded, mech.randomize(xy, rng=np.random.default_rng(7)))
    pd.testing.assert_frame_equal(seeded, mech.randomize(xy, rng=np.int64(7)))
    gen = np.random.default_rng(7)
    first = mech.randomize(xy, rng=gen)
    assert not first.equals(mech.randomize(xy, rng=gen))  # the caller's Generator advanced: a new draw
    for bad in ("7", 7.0, True, np.random.RandomState(7)):
        with pytest.raises(TypeError, match="rng: expected None"):
            mech.randomize(xy, rng=bad)


def test_bad_inputs_to_randomize_and_estimate():
    mech = api.SLDP(epsilon=2.0)
    xy = np.full((10, 2), 0.5)
    with pytest.raises(ValueError, match=r"xy: expected an \(n, 2\) array"):
        mech.randomize(np.zeros((10, 3)), rng=0, domain=GRID)
    with pytest.raises(ValueError, match="xy: locations must be finite"):
        mech.randomize(np.array([[0.5, np.nan]]), rng=0, domain=GRID)
    with pytest.raises(ValueError, match="xy: DataFrame lacks column"):
        mech.randomize(pd.DataFrame({"x": [0.5]}), rng=0, domain=GRID)
    with pytest.raises(ValueError, match=r"SLDP\.randomize: domain= is required"):
        mech.randomize(xy, rng=0)
    with pytest.raises(TypeError, match="view: expected the DataFrame randomize returned"):
        mech.estimate(xy, grid=GRID)
    with pytest.raises(TypeError, match=r"grid: expected a locpriv\.Grid"):
        mech.estimate(mech.randomize(xy, rng=0, domain=[0, 1, 0, 1]), grid=[0, 1, 0, 1])


def test_randomize_without_domain_where_the_mechanism_ignores_it():
    xy = rng(0, "users").uniform(0.3, 0.7, size=(50, 2))
    view = api.GeoInd(epsilon=50.0, h=0.05).randomize(xy, rng=1)
    assert list(view.columns) == ["user", "x", "y"] and len(view) == 50


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_guarantee_record_states_epsilon_relation_and_trust_model(name):
    """The configured epsilon is recorded under the main or another stated relation, or the record is
    void with its reason (no formal DP, or a non-private input such as the true map)."""
    cls = CLASSES[name]
    record = cls(**CONFIGS[name]).guarantee()
    assert record.relation and record.model and record.covers
    assert record.trust_model == cls.trust_model == record.as_dict()["trust_model"]
    if record.epsilon is None:
        assert record.model.startswith("none") or record.non_private_inputs
    elif "epsilon" in CONFIGS[name]:
        assert CONFIGS[name]["epsilon"] in [record.epsilon, *record.other_relations.values()]
    else:
        assert name == "zero" and record.epsilon == 0.0


def test_trust_models_are_declared_per_class():
    assert {name: cls.trust_model for name, cls in CLASSES.items()} == {
        "fedkde": "none",
        "rff": "none",
        "zero": "local",
        "geoind": "local",
        "laplace_ldp": "local",
        "ldp_oue_grid": "local",
        "ldp_kdtree": "local",
        "hdg": "local",
        "sldp": "local",
        "privtree": "central",
        "dp_heatmap": "distributed",
        "heatmap_flat": "distributed",
        "heatmap_hierarchical": "distributed",
    }
    with pytest.raises(TypeError, match="trust_model must be one of"):
        type("Bad", (Mechanism,), {"name": "bad_trust", "trust_model": "cloud"})


def test_privacy_map_metric_pure_and_approximate():
    """OpenDP's map(d_in): metric DP scales with distance; group privacy for pure and (eps, delta) DP."""
    geo = api.GeoInd(epsilon=2.0, h=0.5).guarantee()
    assert geo.metric and geo.map(0.25) == (0.5, 0.0) and geo.map(0) == (0.0, 0.0)
    ldp = api.LaplaceLDP(epsilon=3.0, h=0.5).guarantee()
    assert ldp.map(1) == (3.0, 0.0) and ldp.map(4) == (12.0, 0.0)
    # a person's k rows: the person-level epsilon the workflow records is the map at k
    assert ldp.map(8)[0] == person_level_epsilon(3.0, 8)
    eps, delta = 1.0, 0.001
    sldp = api.SLDP(epsilon=eps, delta=delta, split_rule="all_children").guarantee()
    assert sldp.map(1) == (eps, delta)
    for k in (2, 3, 5):
        e, d = sldp.map(k)
        exact = delta * sum(math.exp(i * eps) for i in range(k))  # the induction's delta_k
        assert e == k * eps and d == pytest.approx(k * math.exp((k - 1) * eps) * delta) and exact <= d
    assert sldp.map(1000) == (1000 * eps, 1.0)  # capped: a delta above 1 bounds nothing
    tree = api.PrivTree(epsilon=2.0).guarantee()
    assert tree.map(1) == (4.0, 0.0) and tree.map(1, relation=ADD_REMOVE) == (2.0, 0.0)
    assert api.RFF(h=0.5, B=2).guarantee().map(1) is None
    for bad in (-1, 1.5, math.inf, "1"):
        with pytest.raises(ValueError, match="d_in must be"):
            ldp.map(bad)
    with pytest.raises(ValueError, match="is not stated"):
        ldp.map(1, relation=ADD_REMOVE)


@pytest.mark.parametrize(
    "name, config", [("geoind", CONFIGS["geoind"]), ("laplace_ldp", CONFIGS["laplace_ldp"]), ("rff", dict(h=0.05, B=8))]
)  # B = 2: se 0.027, too weak
def test_estimate_integrates_to_one(name, config):
    """The density's mass on the grid, from K = 20 equal chunks of n = 20000 users.

    The estimate is linear in the users, so the full-view mass is the mean of the chunks'
    masses, and their spread gives its standard error: |mass - 1| <= t_{19}(1 - α/2) se + 1e-3
    at α = 0.001, where 1e-3 bounds the deterministic part (kernel mass beyond the box for
    users in [0.4, 0.6]^2, at least 8 h from its edge, and the midpoint rule, exact to ~1e-20 for a
    Gaussian of h >= 1.6 cells).  Power: se < 0.02, so a lost normaliser (a factor 2π h^2, B or 1/n) fails.
    """
    grid = Grid.regular(GRID.domain, 32, 32)  # coarse: RFF's cost is per grid cell and feature
    mech = CLASSES[name](**config)
    xy = rng(0, "users").uniform(0.4, 0.6, size=(20000, 2))
    view = mech.randomize(xy, rng=rng(0, name), domain=grid)
    mass = np.array(
        [
            mech.estimate(chunk, grid=grid).sum() * grid.cell_area
            for chunk in (view.iloc[k * 1000 : (k + 1) * 1000] for k in range(20))
        ]
    )
    np.testing.assert_allclose(mass.mean(), mech.estimate(view, grid=grid).sum() * grid.cell_area, rtol=1e-9)
    se = mass.std(ddof=1) / np.sqrt(len(mass))
    assert se < 0.02
    assert abs(mass.mean() - 1.0) <= stats.t.ppf(1 - 0.001 / 2, len(mass) - 1) * se + 1e-3


def test_sldp_estimate_is_a_pdf():
    density = api.SLDP(epsilon=2.0).fit_estimate(
        rng(0, "users").uniform(0.3, 0.7, size=(5000, 2)), rng=rng(0, "sldp"), grid=GRID
    )
    assert (density >= 0).all()
    assert density.sum() * GRID.cell_area == pytest.approx(1.0, rel=1e-12)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """400 users on the unit box as the workflow's ingest and encode stages write them."""
    d = tmp_path_factory.mktemp("api-vs-stages")
    xy = rng(0, "users").uniform(0.2, 0.8, size=(400, 2))
    pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1]}).to_csv(d / "points.csv", index=False)
    spec = {
        "source": "points",
        "bbox": [0.0, 1.0, 0.0, 1.0],
        "path": str(d / "points.csv"),
        "max_dropped_fraction": 0.0,
    }
    prepare.ingest(name="demo", spec=spec, seed=7, out_points=str(d / "points.parquet"), out_meta=str(d / "meta.json"))
    prepare.encode_grid(spec=spec, grid_spec={"P": 64, "Q": 64}, out_grid=str(d / "grid.nc"))
    return d, pd.read_parquet(d / "points.parquet")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_api_equals_the_workflow_stages_bit_for_bit(name, dataset, tmp_path):
    """The stages (``locpriv.stages.run``) build the same object and call the same methods: with the
    stream the workflow keys shard 0 by, the API's array call gives the stage's view and density."""
    d, points = dataset
    run = {"dataset": "demo", "mechanism": name, "params": {"n": "all", **CONFIGS[name]}, "rep": 0}
    common = {"run": run, "grid_path": str(d / "grid.nc"), "bandwidth_json": None}
    st_run.randomize(
        seed=7,
        shards=[0],
        users_per_shard=10_000,
        points_path=str(d / "points.parquet"),
        meta_json=str(d / "meta.json"),
        out_dir=str(tmp_path / "view"),
        **common,
    )
    view_path = st_run.shard_file(str(tmp_path / "view"), 0)
    st_run.aggregate_estimate(
        view_paths=[view_path], out_agg=str(tmp_path / "agg.nc"), out_est=str(tmp_path / "est.nc"), **common
    )

    mech = CLASSES[name](**CONFIGS[name])
    stream = rng(7, "randomize", *st_run.run_seed_keys(run, mech), 0)
    view = mech.randomize(points[["x", "y"]].to_numpy(), rng=stream, domain=GRID)
    written = pd.read_parquet(view_path)
    pd.testing.assert_frame_equal(view, written, check_dtype=True)
    assert {k: v for k, v in written.attrs.items() if k in view.attrs} == view.attrs
    # randomisation reads only the public box: a Domain gives the same view as the Grid
    stream = rng(7, "randomize", *st_run.run_seed_keys(run, mech), 0)
    pd.testing.assert_frame_equal(mech.randomize(points[["x", "y"]].to_numpy(), rng=stream, domain=GRID.domain), view)
    estimate = lpio.read_nc3(str(tmp_path / "est.nc"))["density"]
    assert np.array_equal(estimate.values, mech.estimate(view, grid=GRID), equal_nan=True)
    assert json.loads(estimate.attrs["guarantee"]) == mech.guarantee().as_dict()


def test_the_smallest_epsilon_the_config_admits_runs_every_mechanism():
    """Issue 40: eps = 1e-300 passed the config check and failed in the sampler (scale Delta / eps must be
    below 2^36).  The config's lower bound (locpriv.sanity.MIN_EPSILON) runs every registered mechanism
    with an epsilon; power: 128 times lower, laplace_ldp fails there (its Delta, up to 4096 sampler steps
    on any box, is about 2,000 on this one, so it needs eps > 3e-8)."""
    from locpriv.sanity import MIN_EPSILON

    xy = rng(0, "users").uniform(0.2, 0.8, size=(200, 2))
    with_epsilon = [name for name in sorted(CONFIGS) if "epsilon" in CLASSES[name].params]
    assert len(with_epsilon) >= 10
    for name in with_epsilon:
        density = CLASSES[name](**{**CONFIGS[name], "epsilon": MIN_EPSILON}).fit_estimate(xy, rng=1, grid=GRID)
        assert density.shape == GRID.shape, name
    with pytest.raises(ValueError, match=r"discrete Laplace scale must be in \(0, 2\^36\)"):
        CLASSES["laplace_ldp"](**{**CONFIGS["laplace_ldp"], "epsilon": MIN_EPSILON / 128}).fit_estimate(
            xy, rng=1, grid=GRID
        )
