"""Atomic, deterministic writers for the workflow's intermediates.

Every writer goes through a temporary file in the target directory and an
``os.replace``, so a failing job never leaves a partial output behind.  Parquet pages
carry CRC-32 checksums, so later damage is found (``locpriv.integrity``).
NetCDF is NetCDF3 64-bit offset (xarray's scipy backend, or ``locpriv.nc3`` for the
surfaces of the per-run jobs, which then import neither xarray nor scipy.io): it needs no
HDF5 library and, unlike HDF5, embeds no timestamps, so identical data gives
identical bytes.  The files follow the CF conventions (``locpriv.cf``): maps on dims
(y, x); the readers here give them back indexed [x, y], as the library holds them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import cf, nc3
from .errors import InputError

META_KEY = b"locpriv"


# what atomic_path and atomic_dir name their temporaries: ".<name>.<random>.tmp", beside the output
TEMPORARY_SUFFIX = ".tmp"


def is_temporary(name: str) -> bool:
    """A name :func:`atomic_path` or :func:`atomic_dir` gives a temporary (kill -9 leaves them behind)."""
    return name.startswith(".") and name.endswith(TEMPORARY_SUFFIX)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path next to ``path``; move it into place only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX)
    os.close(fd)
    # mkstemp makes 0600 files; outputs get the mode a plain open() would (0666 minus umask)
    os.chmod(tmp, 0o666 & ~_umask())
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temporary folder beside ``path``, renamed to ``path`` only when the body succeeds."""
    parent = os.path.dirname(path) or "."
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}.", suffix=TEMPORARY_SUFFIX)
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; a folder gets what mkdir would
    try:
        yield tmp
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; restore at once
    os.umask(mask)
    return mask


def write_parquet(df: pd.DataFrame, path, metadata: dict | None = None, row_group_size: int | None = None) -> None:
    table = pa.Table.from_pandas(df, preserve_index=False)
    if metadata is not None:
        meta = dict(table.schema.metadata or {})
        meta[META_KEY] = json.dumps(metadata, sort_keys=True, default=_jsonable).encode()
        table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, row_group_size=row_group_size, write_page_checksum=True)


def write_parquet_batches(frames, path, metadata_of, row_group_size: int) -> dict:
    """Stream DataFrames into one Parquet file, never holding more than one batch.

    ``metadata_of()`` is called after the last batch (so it can report counts
    accumulated while the batches were produced); its result is stored like
    ``write_parquet``'s metadata and returned.
    """
    writer = None
    with atomic_path(path) as tmp:
        try:
            for df in frames:
                table = pa.Table.from_pandas(df, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(tmp, table.schema, write_page_checksum=True)
                writer.write_table(table, row_group_size=row_group_size)
            if writer is None:
                raise ValueError(f"no rows to write to {path}")
            metadata = metadata_of()
            writer.add_key_value_metadata({META_KEY: json.dumps(metadata, sort_keys=True, default=_jsonable)})
        finally:
            if writer is not None:
                writer.close()
    return metadata


def read_rows(path, rows, columns: list[str]) -> pd.DataFrame:
    """The rows at positions ``rows`` (sorted, unique) of a Parquet file, in that order.

    Only the row groups holding them are read, one at a time, so memory follows the row
    group and the sample, not the file.  pre_buffer=False: pyarrow's pre-buffering keeps
    what it has read (RSS grew with the file size at 10^8 users).
    """
    file = pq.ParquetFile(path, pre_buffer=False)
    parts, start = [file.schema_arrow.empty_table().select(columns)], 0
    for group in range(file.num_row_groups):
        stop = start + file.metadata.row_group(group).num_rows
        lo, hi = rows.searchsorted([start, stop])
        if hi > lo:
            parts.append(file.read_row_group(group, columns=columns).take(rows[lo:hi] - start))
        start = stop
    return pa.concat_tables(parts).to_pandas()


class RangeReader:
    """Rows of a Parquet file whose integer ``column`` lies in [lo, hi), the footer read once.

    ``pd.read_parquet(path, filters=...)`` parses the whole footer and tests every row group at
    each call, so a job reading its shards that way pays O(N) per shard and all shards together
    O(N^2 / shard): measured per filtered read of one shard, 55 ms at 10^8 users (1,526 row
    groups), 327 ms at 10^9, 4.4 s at 10^10 (perf/bench_scale.py's notes in docs/benchmarks.md).
    Here the column's row-group min/max are read once; each range reads only its row groups
    (a group without statistics is always read) and keeps the rows in [lo, hi), in file order:
    the same frame as the filtered read.
    """

    def __init__(self, path, column: str):
        self.file = pq.ParquetFile(path, pre_buffer=False)
        self.column = column
        meta, leaf = self.file.metadata, self.file.schema_arrow.get_field_index(column)
        stats = [meta.row_group(g).column(leaf).statistics for g in range(meta.num_row_groups)]
        known = [s is not None and s.has_min_max for s in stats]
        big = np.iinfo(np.int64)
        self.lo = np.array([s.min if k else big.min for s, k in zip(stats, known, strict=True)], dtype=np.int64)
        self.hi = np.array([s.max if k else big.max for s, k in zip(stats, known, strict=True)], dtype=np.int64)

    def read(self, lo: int, hi: int) -> pd.DataFrame:
        groups = np.flatnonzero((self.hi >= lo) & (self.lo < hi)).tolist()
        table = self.file.read_row_groups(groups) if groups else self.file.schema_arrow.empty_table()
        values = table.column(self.column)
        keep = pc.and_(pc.greater_equal(values, lo), pc.less(values, hi))
        return table.filter(keep).to_pandas()


def remade(path) -> str:
    """The fix for a damaged or foreign file the workflow made: delete it, and the same command makes it again."""
    return f"delete {path} and run the same command again: it is made again"


def read_parquet_checked(path, required: list[str] = ()) -> pd.DataFrame:
    """A Parquet file the workflow wrote, refused with one line naming it and the fix (:func:`remade`)
    when it cannot be read (damaged after its run checked it) or a column it must have is missing (a
    file put in its place by hand: readable, but not this workflow's)."""
    try:
        table = pd.read_parquet(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise InputError(str(path), "<file>", f"cannot be read ({' '.join(str(exc).split())})", remade(path)) from exc
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise InputError(
            str(path),
            missing[0],
            f"column missing (found {list(map(str, table.columns))}): not the file this workflow wrote there",
            remade(path),
        )
    return table


def read_parquet_metadata(path) -> dict:
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta[META_KEY]) if META_KEY in meta else {}


def write_netcdf(obj, path) -> None:
    """Write a ``locpriv.nc3.Dataset`` (no xarray needed) or an ``xarray`` Dataset/DataArray."""
    if isinstance(obj, nc3.Dataset):
        variables = {
            name: nc3.Variable(var.dims, var.values, {k: _attr(v) for k, v in var.attrs.items()})
            for name, var in obj.variables.items()
        }
        raw = nc3.to_bytes(nc3.Dataset(variables, _global_attrs(obj.attrs)))
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            fh.write(raw)
        return
    import xarray as xr  # ~0.3 s with scipy.io: only the studies' labelled arrays come this way

    ds = obj.to_dataset() if isinstance(obj, xr.DataArray) else obj
    ds = ds.copy()
    # NetCDF3 attrs take only numbers and strings: nested metadata goes in as JSON.
    ds.attrs = _global_attrs(ds.attrs)
    for var in ds.variables.values():
        var.attrs = {k: _attr(v) for k, v in var.attrs.items()}
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="scipy", format="NETCDF3_64BIT")


def _global_attrs(attrs: dict) -> dict:
    # every file states its conventions first (locpriv.cf)
    return {"Conventions": cf.CONVENTIONS, **{k: _attr(v) for k, v in attrs.items() if k != "Conventions"}}


def read_netcdf(path):
    """The file as a loaded ``xarray.Dataset`` (labelled arrays, for plots and studies), maps indexed [x, y]."""
    import xarray as xr

    with xr.open_dataset(path, engine="scipy") as ds:
        return ds.load().transpose(..., "x", "y", missing_dims="ignore")


def read_nc3(path) -> nc3.Dataset:
    """The file's arrays and attrs (``ds[name].values``) without importing xarray: for the per-run jobs.

    A map stored on (y, x) comes back on (x, y), indexed [x, y] as the library holds it.
    """
    ds = nc3.read(path)
    for var in ds.variables.values():
        if {"x", "y"} <= set(var.dims):
            order = [*(d for d in var.dims if d not in ("x", "y")), "x", "y"]
            var.values = np.transpose(var.values, [var.dims.index(d) for d in order])
            var.dims = tuple(order)
    return ds


def write_json(obj, path) -> None:
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True, default=_jsonable)
        fh.write("\n")


def read_json(path):
    with open(path) as fh:
        return json.load(fh)


def _attr(value):
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return value
    return json.dumps(value, sort_keys=True, default=_jsonable)


def _jsonable(value):
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
