"""NetCDF-3 (64-bit offset) surfaces as numpy arrays, read and written without xarray.

The per-run jobs (randomize, aggregate/estimate, attack, metrics: most of a run's jobs)
only move a few gridded arrays and their attrs.  Importing xarray and scipy.io for that
cost each job ~0.3 s of CPU, more than its work.  :func:`write` gives the bytes xarray's
scipy backend writes for the same variables (``locpriv.io.write_netcdf`` of the
equivalent ``xarray.Dataset``: float data with a NaN ``_FillValue``, integer attrs as
int32, strings as UTF-8 chars; tests/test_nc3.py checks this), so a file does not
depend on which writer made it; :func:`read` returns what ``xarray.open_dataset`` decodes
from such a file.  Record (unlimited) dimensions are not supported: nothing here writes them.

Format: https://docs.unidata.ucar.edu/netcdf-c/current/file_format_specifications.html
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

_DIMENSION, _VARIABLE, _ATTRIBUTE = 10, 11, 12
_ABSENT = b"\x00" * 8  # an empty list: tag 0, count 0
# nc_type -> numpy dtype of the (big-endian) file representation; 2 is NC_CHAR
_TYPES = {
    1: np.dtype("i1"),
    2: np.dtype("S1"),
    3: np.dtype(">i2"),
    4: np.dtype(">i4"),
    5: np.dtype(">f4"),
    6: np.dtype(">f8"),
}
_CODES = {dtype.newbyteorder("="): code for code, dtype in _TYPES.items() if code != 2}
INT32 = np.iinfo(np.int32)


@dataclass
class Variable:
    dims: tuple[str, ...]
    values: np.ndarray
    attrs: dict = field(default_factory=dict)


@dataclass
class Dataset:
    """Named variables on named dimensions plus global attrs; ``ds[name].values`` as in xarray."""

    variables: dict[str, Variable]
    attrs: dict = field(default_factory=dict)

    def __getitem__(self, name: str) -> Variable:
        return self.variables[name]


# --- writing ----------------------------------------------------------------------------------


def _int(value: int) -> bytes:
    return struct.pack(">i", value)


def _name(text: str) -> bytes:
    raw = text.encode("latin1")  # what scipy.io.netcdf_file writes names with
    return _int(len(raw)) + raw + b"\x00" * (-len(raw) % 4)


def _attr_array(value) -> np.ndarray:
    """An attr value as xarray encodes it for NetCDF-3: str -> UTF-8 chars, int -> int32, float -> f8."""
    if isinstance(value, str):
        return np.asarray(value.encode("utf-8"), dtype="S")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"NetCDF-3 attrs here are str, int or float, got {type(value).__name__}")
    array = np.atleast_1d(value)
    if array.dtype.kind == "i":
        if not INT32.min <= int(value) <= INT32.max:
            raise ValueError(f"integer attr {value} does not fit NetCDF-3's int32")
        array = array.astype(np.int32)
    return array


def _attrs(attrs: dict) -> bytes:
    if not attrs:
        return _ABSENT
    out = [_int(_ATTRIBUTE), _int(len(attrs))]
    for key, value in attrs.items():
        array = _attr_array(value)
        if array.dtype.kind == "S":
            raw, code, count = array.tobytes(), 2, array.itemsize
        else:
            code = _CODES[array.dtype.newbyteorder("=")]
            raw, count = array.astype(_TYPES[code]).tobytes(), array.size
        out += [_name(key), _int(code), _int(count), raw, b"\x00" * (-len(raw) % 4)]
    return b"".join(out)


def _data(values: np.ndarray) -> np.ndarray:
    """Variable data in its file representation (int64 -> int32 as xarray coerces)."""
    values = np.asarray(values)
    if values.dtype.kind == "i" and values.dtype.itemsize == 8:
        cast = values.astype(np.int32)
        if not (cast == values).all():
            raise ValueError("int64 data does not fit NetCDF-3's int32")
        values = cast
    if values.dtype.newbyteorder("=") not in (np.dtype("f8"), np.dtype("f4"), np.dtype("i4")):
        # narrower types would need scipy's fill-value padding, bool and text xarray's coders
        raise TypeError(f"only float64, float32 and int32 variables are written here, got {values.dtype}")
    return values.astype(values.dtype.newbyteorder(">"))


def to_bytes(ds: Dataset) -> bytes:
    """The file: the header, then each variable's data (xarray and scipy's layout and order)."""
    dims: dict[str, int] = {}
    for var in ds.variables.values():
        for dim, size in zip(var.dims, np.shape(var.values), strict=True):
            if dims.setdefault(dim, size) != size:
                raise ValueError(f"dimension {dim!r} has sizes {dims[dim]} and {size}")
    data = {name: _data(var.values) for name, var in ds.variables.items()}
    # scipy writes variables by shape, largest first (stable among equal shapes)
    order = sorted(ds.variables, key=lambda name: data[name].shape, reverse=True)
    head = [b"CDF\x02", _int(0)]  # version 2 (64-bit offsets), no records
    if dims:
        head += [_int(_DIMENSION), _int(len(dims)), *(_name(d) + _int(n) for d, n in dims.items())]
    else:
        head.append(_ABSENT)
    head.append(_attrs(ds.attrs))
    metas = []
    for name in order:
        var, array = ds.variables[name], data[name]
        attrs = dict(var.attrs)
        if array.dtype.kind == "f":
            attrs["_FillValue"] = array.dtype.type(np.nan)  # xarray's default for float variables
        metas.append(
            b"".join(
                [
                    _name(name),
                    _int(len(var.dims)),
                    *(_int(list(dims).index(d)) for d in var.dims),
                    _attrs(attrs),
                    _int(_CODES[array.dtype.newbyteorder("=")]),
                    _int(array.nbytes),
                ]
            )
        )
    head += [_int(_VARIABLE), _int(len(order))] if order else [_ABSENT]
    # each variable's begin offset (int64) follows its metadata: known once the header's size is
    begin = sum(map(len, head)) + sum(len(m) + 8 for m in metas)
    for meta, name in zip(metas, order, strict=True):
        head += [meta, struct.pack(">q", begin)]
        begin += data[name].nbytes
    return b"".join(head + [data[name].tobytes() for name in order])


# --- reading ----------------------------------------------------------------------------------


class _Reader:
    def __init__(self, raw: bytes, path):
        self.raw, self.pos, self.path = raw, 0, path

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.raw):
            raise ValueError(f"{self.path}: NetCDF-3 header truncated")
        out = self.raw[self.pos : self.pos + n]
        self.pos += n
        return out

    def int(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def name(self) -> str:
        n = self.int()
        text = self.take(n)
        self.take(-n % 4)
        return text.decode("latin1")

    def header_list(self, tag: int) -> int:
        found, count = self.int(), self.int()
        if found not in (0, tag) or (found == 0 and count):
            raise ValueError(f"{self.path}: not a NetCDF-3 header (tag {found})")
        return count

    def attrs(self) -> dict:
        out = {}
        for _ in range(self.header_list(_ATTRIBUTE)):
            key, code, count = self.name(), self.int(), self.int()
            dtype = _TYPES[code]
            raw = self.take(count * dtype.itemsize)
            self.take(-len(raw) % 4)
            if code == 2:
                out[key] = raw.rstrip(b"\x00").decode("utf-8")
            else:
                array = np.frombuffer(raw, dtype).astype(dtype.newbyteorder("="))
                out[key] = array[0] if array.shape == (1,) else array
        return out


def file_size(raw: bytes, path) -> int:
    """The size in bytes a NetCDF-3 file with this header must have (record variables included).

    Every variable's header entry states its offset and size, so a cut or padded file is found
    without reading its data (``locpriv.integrity``).
    """
    if raw[:3] != b"CDF" or raw[3:4] not in (b"\x01", b"\x02"):
        raise ValueError("no NetCDF-3 signature")
    r = _Reader(raw, path)
    r.take(4)
    numrecs = r.int()
    dims = [(r.name(), r.int()) for _ in range(r.header_list(_DIMENSION))]
    r.attrs()
    end, record_begin, record_size = r.pos, None, 0
    for _ in range(r.header_list(_VARIABLE)):
        r.name()
        var_dims = [dims[r.int()] for _ in range(r.int())]
        r.attrs()
        r.int()  # nc_type
        vsize = r.int()
        begin = struct.unpack(">q" if raw[3] == 2 else ">i", r.take(8 if raw[3] == 2 else 4))[0]
        if var_dims and var_dims[0][1] == 0:  # a record variable: vsize is its size per record
            record_begin = begin if record_begin is None else min(record_begin, begin)
            record_size += vsize
        else:
            end = max(end, begin + vsize)
    if record_begin is not None:
        end = max(end, record_begin + numrecs * record_size)
    return max(end, r.pos)


def read(path) -> Dataset:
    """A NetCDF-3 file written by :func:`to_bytes` or xarray's scipy backend (no record variables).

    As xarray decodes it: str attrs, one-element numeric attrs as numpy scalars, a NaN
    ``_FillValue`` dropped from the attrs (NaN cells stay NaN).
    """
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:3] != b"CDF" or raw[3:4] not in (b"\x01", b"\x02"):
        raise ValueError(f"{path}: not a NetCDF-3 file")
    r = _Reader(raw, path)
    r.take(4)
    r.int()  # numrecs: unused, no record variables
    dims = [(r.name(), r.int()) for _ in range(r.header_list(_DIMENSION))]
    attrs = r.attrs()
    variables = {}
    for _ in range(r.header_list(_VARIABLE)):
        name = r.name()
        var_dims = tuple(dims[r.int()] for _ in range(r.int()))
        var_attrs, dtype = r.attrs(), _TYPES[r.int()]
        r.int()  # vsize
        begin = struct.unpack(">q" if raw[3] == 2 else ">i", r.take(8 if raw[3] == 2 else 4))[0]
        if any(size == 0 for _, size in var_dims):
            raise ValueError(f"{path}: record variable {name!r} (unlimited dimension) is not supported here")
        shape = tuple(size for _, size in var_dims)
        count = int(np.prod(shape))
        values = np.frombuffer(raw, dtype, count, begin).reshape(shape).astype(dtype.newbyteorder("="))
        fill = var_attrs.pop("_FillValue", None)
        if fill is not None and not np.isnan(fill):
            raise ValueError(f"{path}: variable {name!r} has _FillValue {fill}; only NaN is supported here")
        variables[name] = Variable(tuple(d for d, _ in var_dims), values, var_attrs)
    return Dataset(variables, attrs)
