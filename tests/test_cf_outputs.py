"""Every NetCDF file the workflow writes follows the CF conventions (locpriv.cf), opened as a user would.

A small run of every kind of .nc the default config writes (grid, truth, pooled KDE, a run's aggregate
and estimate, the heatmaps study's population and released maps, the radio map's heights), each opened
with xarray: ``Conventions``, maps on (y, x) with coordinate variables, ``long_name`` and UDUNITS
``units`` on every variable, the guarantee as readable attributes, and the equirectangular grid
mapping of projected real data checked against the projection itself.
"""

import copy
import re

import numpy as np
import pytest
import xarray as xr
import yaml

from conftest import ROOT, TINY, run_snakemake
from locpriv import cf
from locpriv import config as lpconfig
from locpriv.datasets.points import LocalProjection
from locpriv.domain import Domain, Grid
from locpriv.heatmaps import study as heatmaps

pytestmark = pytest.mark.workflow

# the file names the rule files give .nc outputs (checked below against the rule files themselves)
KINDS = {
    "grid.nc",
    "truth.nc",
    "pooled-kde",
    "aggregate.nc",
    "estimate.nc",
    "population.nc",
    "heatmap.nc",
    "heights.nc",
}
# a length, a density per unit area, or dimensionless: UDUNITS spellings
UNITS = re.compile(r"^(m|domain_unit|pixel)(-2)?$|^1$")
SECTION_HEATMAPS = {
    "population": {"source": "synthetic", "depth": 5, "users": 40_000},
    "base": {"users_per_round": 10_000, "shard_size": 2000},
    "sweep": {},
    "reps": 1,
}
SECTION_RADIOMAP = {
    "environment": {"size": 60.0, "cell": 6.0, "n_buildings": 5},
    "n_users": 6,
    "n_stations": 20,
    "n_measurements": 15,
    "training": {"epochs": 2},
    "evaluation": {"stride": 2, "n_stations": 2},
    "attack": {"nu": [1], "epochs": [1]},
    "runs": {"radio_fedavg": {}},
}


def kind(path) -> str:
    return "pooled-kde" if path.parent.name == "pooled-kde" else path.name


def test_the_rule_files_write_no_other_kind_of_netcdf():
    """KINDS is every .nc output of the rule files, so the run below covers them all."""
    text = "\n".join(p.read_text() for p in (ROOT / "workflow/rules").rglob("*.smk"))
    names = {m.rsplit("/", 1)[-1] for m in re.findall(r'"([^"\s]+\.nc)"', text)}
    found = {("pooled-kde" if "pooled-kde" in n or n.startswith("n~") else n) for n in names}
    assert found <= KINDS, found - KINDS


@pytest.fixture(scope="module")
def netcdf_files(tmp_path_factory):
    cfg = copy.deepcopy(TINY)
    # a DP mechanism with a guarantee and a partition mechanism (aggregate per unit area) beside TINY's
    cfg["experiments"]["density"]["mechanisms"].update(
        geoind={"n": [600], "h": 0.55, "epsilon": [2]}, privtree={"n": [600], "epsilon": [2]}
    )
    cfg["studies"] = {"heatmaps": SECTION_HEATMAPS, "radiomap": SECTION_RADIOMAP}
    wd = tmp_path_factory.mktemp("cf")
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    # the files themselves as targets (the attacks, audits and metrics after them are not needed here)
    runs = lpconfig.check_startup(copy.deepcopy(cfg), None)
    base = {**heatmaps.validate_config(SECTION_HEATMAPS)["base"], "method": "dp_heatmap", "rep": 0}
    grid_dir = f"grid~{cfg['grid']['P']}x{cfg['grid']['Q']}"  # the truth and pooled KDE are keyed by grid
    targets = [
        *(f"results/{run.path}/estimate.nc" for run in runs),
        f"results/ingest/gauss9/{grid_dir}/truth.nc",
        f"results/ingest/gauss9/{grid_dir}/pooled-kde/n~600_h~0.55.nc",
        f"results/studies/heatmaps/runs/{heatmaps.run_dir(base)}/heatmap.nc",
        "results/studies/radiomap/ingest/heights.nc",
    ]
    run_snakemake(wd, "--cores", "2", *targets)
    files = sorted((wd / "results").rglob("*.nc"))
    assert {kind(p) for p in files} == KINDS
    return files


def test_every_file_states_cf_and_names_and_units_every_variable(netcdf_files):
    for path in netcdf_files:
        with xr.open_dataset(path, engine="scipy") as ds:
            assert ds.attrs["Conventions"] == "CF-1.10", path
            assert ds.attrs["projection"], path
            for name, var in ds.variables.items():
                if name == "crs":  # a grid-mapping variable: its attributes are the projection's
                    assert "crs_wkt" in var.attrs, path
                    continue
                assert var.attrs.get("long_name"), (path, name)
                assert UNITS.match(var.attrs.get("units", "")), (path, name, var.attrs.get("units"))
            for name, var in ds.data_vars.items():
                if var.ndim == 2:
                    assert var.dims == ("y", "x"), (path, name, var.dims)
            for axis in ("x", "y"):
                if axis in ds.coords:
                    assert ds[axis].attrs["axis"] == axis.upper()
                    assert ds[axis].attrs["units"] in ("m", "domain_unit", "pixel"), path


def test_densities_are_per_area_of_their_coordinates_unit(netcdf_files):
    checked = 0
    for path in netcdf_files:
        if kind(path) in ("truth.nc", "pooled-kde", "estimate.nc"):
            with xr.open_dataset(path, engine="scipy") as ds:
                # the synthetic gauss9 box has no physical unit: named, never '1' or '1/1^2'
                assert ds["x"].attrs["units"] == "domain_unit"
                assert ds["density"].attrs["units"] == "domain_unit-2"
                checked += 1
    assert checked >= 3


def test_the_map_plots_the_right_way_up_with_its_units(netcdf_files):
    """``xr.open_dataset(".../estimate.nc").density.plot()``: x across, y up, labelled with the units."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = next(p for p in netcdf_files if p.name == "estimate.nc")
    with xr.open_dataset(path, engine="scipy") as ds:
        mesh = ds.density.plot()
        ax = mesh.axes
        assert ax.get_xlabel().startswith("x coordinate") and "[domain_unit]" in ax.get_xlabel()
        assert ax.get_ylabel().startswith("y coordinate") and "[domain_unit]" in ax.get_ylabel()
        assert "[domain_unit-2]" in mesh.colorbar.ax.get_ylabel()
        # the array drawn is density[y, x]: row i at y[i] (north up)
        assert np.array_equal(mesh.get_array().reshape(ds.density.shape), ds.density.values)
        assert ax.get_ylim()[0] < ax.get_ylim()[1]
    plt.close("all")


def test_the_guarantee_is_readable_attributes(netcdf_files):
    import json

    estimates = [p for p in netcdf_files if p.name == "estimate.nc" and "/geoind/" in str(p)]
    assert estimates
    with xr.open_dataset(estimates[0], engine="scipy") as ds:
        attrs = ds["density"].attrs
        record = json.loads(attrs["guarantee"])
        assert attrs["guarantee_epsilon"] == record["epsilon"] == 2.0
        assert attrs["guarantee_model"] == record["model"] and attrs["guarantee_relation"] == record["relation"]
        assert attrs["param_epsilon"] == 2.0 and attrs["mechanism"] == "geoind"


def test_the_aggregate_states_its_mechanism_s_units(netcdf_files):
    units = {}
    for path in netcdf_files:
        if path.name == "aggregate.nc":
            with xr.open_dataset(path, engine="scipy") as ds:
                units[path.parts[path.parts.index("runs") + 2]] = ds["sum"].attrs["units"]
    # kernel sums and counts are dimensionless; PrivTree's partition counts are per unit area
    assert units == {"fedkde": "1", "zero": "1", "geoind": "1", "privtree": "domain_unit-2"}


def test_projected_real_data_carry_their_grid_mapping(tmp_path):
    """Real lon/lat data: x/y in metres, and a ``crs`` variable whose WKT is the projection the data went
    through (checked with pyproj where installed: the `test` extra has it)."""
    from locpriv import io

    proj = LocalProjection(116.4, 39.9)
    grid = Grid.regular(Domain(-1000.0, 1000.0, -800.0, 800.0), 8, 6)
    io.write_netcdf(grid.to_dataset("m", proj.grid_mapping()), tmp_path / "grid.nc")
    geometry = io.read_nc3(tmp_path / "grid.nc")
    io.write_netcdf(
        grid.surface(np.ones(grid.shape), "density", {"long_name": "d", "units": "m-2"}, geometry),
        tmp_path / "estimate.nc",
    )
    with xr.open_dataset(tmp_path / "estimate.nc", engine="scipy") as ds:
        assert ds["density"].attrs["grid_mapping"] == cf.GRID_MAPPING
        assert ds["x"].attrs["standard_name"] == "projection_x_coordinate" and ds["x"].attrs["units"] == "m"
        wkt = ds["crs"].attrs["crs_wkt"]
        assert "lon0=116.4, lat0=39.9" in ds.attrs["projection"]
    pyproj = pytest.importorskip("pyproj")
    sphere = pyproj.CRS.from_proj4(f"+proj=longlat +R={ds['crs'].attrs['earth_radius']} +no_defs")
    to_map = pyproj.Transformer.from_crs(sphere, pyproj.CRS.from_wkt(wkt), always_xy=True)
    lon, lat = np.array([116.2, 116.4, 116.7]), np.array([39.7, 39.9, 40.1])
    np.testing.assert_allclose(to_map.transform(lon, lat), proj.forward(lon, lat), rtol=0, atol=1e-6)
