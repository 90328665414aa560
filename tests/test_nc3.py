"""locpriv.nc3 writes the bytes xarray's scipy backend writes, and reads what xarray decodes."""

import numpy as np
import pytest
import xarray as xr

from locpriv import io, nc3
from locpriv.datasets.points import LocalProjection
from locpriv.domain import Domain, Grid

GRID = Grid.regular(Domain(-3.0, 3.0, -2.0, 2.0), 7, 5)
ATTRS = {
    "mechanism": "fedkde",
    "params": {"h": 0.55},
    "n_users": 20000,
    "scale": 0.25,
    "guarantee": {"epsilon": None, "relation": "none"},
    "note": "",
    "units": "1/m^2",
}


def _as_xarray(ds: nc3.Dataset) -> xr.Dataset:
    """The same content as an xarray Dataset, built the way the stages built it before nc3."""
    data = {name: (var.dims, var.values, var.attrs) for name, var in ds.variables.items() if name not in ("x", "y")}
    coords = {name: (var.dims, var.values, var.attrs) for name, var in ds.variables.items() if name in ("x", "y")}
    return xr.Dataset(data, coords=coords, attrs=ds.attrs)


@pytest.mark.parametrize(
    "values",
    [
        np.random.default_rng(1).random(GRID.shape),
        np.full(GRID.shape, np.nan),  # a refused query
        np.arange(np.prod(GRID.shape)).reshape(GRID.shape),  # int64, stored as int32
        np.random.default_rng(3).random(GRID.shape, dtype=np.float32),
    ],
)
def test_surface_bytes_equal_xarray_scipy_backend(tmp_path, values):
    surface = GRID.surface(values, "density", ATTRS, "m")
    io.write_netcdf(surface, tmp_path / "nc3.nc")
    io.write_netcdf(_as_xarray(surface), tmp_path / "xarray.nc")
    assert (tmp_path / "nc3.nc").read_bytes() == (tmp_path / "xarray.nc").read_bytes()


def test_grid_bytes_equal_xarray_and_round_trip(tmp_path):
    io.write_netcdf(GRID.to_dataset("m"), tmp_path / "nc3.nc")
    io.write_netcdf(_as_xarray(GRID.to_dataset("m")), tmp_path / "xarray.nc")
    assert (tmp_path / "nc3.nc").read_bytes() == (tmp_path / "xarray.nc").read_bytes()
    back = Grid.from_dataset(io.read_nc3(tmp_path / "nc3.nc"))
    assert np.array_equal(back.x, GRID.x) and np.array_equal(back.y, GRID.y) and back.domain == GRID.domain


def test_reader_returns_what_xarray_decodes(tmp_path):
    values = np.random.default_rng(2).random(GRID.shape)
    values[0, 0] = np.nan
    io.write_netcdf(GRID.surface(values, "sum", ATTRS, "m"), tmp_path / "s.nc")
    ours, theirs = io.read_nc3(tmp_path / "s.nc"), io.read_netcdf(tmp_path / "s.nc")
    assert set(ours.variables) == set(theirs.variables)
    for name, var in theirs.variables.items():
        assert np.array_equal(ours[name].values, var.values, equal_nan=True)
        assert ours[name].dims == var.dims
        assert {k: (type(v), str(v)) for k, v in ours[name].attrs.items()} == {
            k: (type(v), str(v)) for k, v in var.attrs.items()
        }
    assert ours.attrs == theirs.attrs


def test_reader_rejects_what_it_does_not_decode(tmp_path):
    (tmp_path / "bad.nc").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(64))
    with pytest.raises(ValueError, match="not a NetCDF-3 file"):
        nc3.read(tmp_path / "bad.nc")
    xr.Dataset({"v": ("x", np.array([1.0, 2.0]), {"_FillValue": -1.0})}).to_netcdf(
        tmp_path / "fill.nc", engine="scipy", format="NETCDF3_64BIT"
    )
    with pytest.raises(ValueError, match="only NaN is supported"):
        nc3.read(tmp_path / "fill.nc")


PROJECTED = GRID.to_dataset("m", LocalProjection(116.4, 39.9).grid_mapping())


def test_cf_files_of_projected_data_equal_xarray_scipy_backend(tmp_path):
    """The grid file with its scalar grid-mapping variable, and a map on (y, x) pointing at it."""
    values = np.random.default_rng(4).random(GRID.shape)
    for name, ds in (("grid", PROJECTED), ("surface", GRID.surface(values, "density", ATTRS, PROJECTED))):
        io.write_netcdf(ds, tmp_path / f"{name}-nc3.nc")
        io.write_netcdf(_as_xarray(ds), tmp_path / f"{name}-xarray.nc")
        assert (tmp_path / f"{name}-nc3.nc").read_bytes() == (tmp_path / f"{name}-xarray.nc").read_bytes(), name


def test_maps_are_stored_y_x_and_read_back_indexed_x_y(tmp_path):
    values = np.random.default_rng(5).random(GRID.shape)
    io.write_netcdf(GRID.surface(values, "density", ATTRS, PROJECTED), tmp_path / "s.nc")
    stored = nc3.read(tmp_path / "s.nc")["density"]
    assert stored.dims == ("y", "x") and np.array_equal(stored.values, values.T)
    for back in (io.read_nc3(tmp_path / "s.nc")["density"], io.read_netcdf(tmp_path / "s.nc")["density"]):
        assert back.dims == ("x", "y") and np.array_equal(back.values, values)
    with xr.open_dataset(tmp_path / "s.nc", engine="scipy") as ds:  # as a user opens it
        assert ds["density"].dims == ("y", "x")
        assert float(ds["density"].sel(x=GRID.x[6], y=GRID.y[0])) == values[6, 0]
        assert ds["density"].attrs["grid_mapping"] == "crs" and "crs_wkt" in ds["crs"].attrs
