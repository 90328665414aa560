"""Loader for real point data (CSV, CSV.gz or Parquet).

Accepts lon/lat (projected to local metres) or already-projected x/y (column
names configurable), an optional user column, and clips to a configured
bounding box.  Every dropped row is counted by reason and returned, so the
workflow can print and record it: nothing is filtered silently.  A file that
cannot be used at all raises :class:`InputError` naming the file, the field and
the fix.
"""

from __future__ import annotations

import csv
import gzip
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import cf
from ..errors import InputError
from . import times as timing

EARTH_RADIUS_M = 6_371_008.8  # mean Earth radius (IUGG), metres
# a lon/lat box whose projection distorts distances more is refused (config: sanity.max_projection_distortion)
MAX_PROJECTION_DISTORTION = 0.1
# the shares of the rows the boxes suggested for data outside the configured box keep
SUGGESTED_SHARES = (0.99, 0.999)


@dataclass(frozen=True)
class LocalProjection:
    """Equirectangular projection about a reference point, in metres.

    Over a city-sized box (tens of km) its distance error is below 0.3 %,
    far under GPS noise; it is invertible and needs no projection library.
    East-west distances at latitude phi are scaled by cos(phi) / cos(lat0)
    relative to the truth, so the error grows with the box's latitude span
    (:func:`projection_error`).
    """

    lon0: float
    lat0: float

    def forward(self, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.pi / 180 * EARTH_RADIUS_M
        return (lon - self.lon0) * k * np.cos(np.radians(self.lat0)), (lat - self.lat0) * k

    def describe(self) -> str:
        return f"equirectangular about lon0={self.lon0}, lat0={self.lat0}, R={EARTH_RADIUS_M} m"

    def grid_mapping(self) -> dict:
        """The CF grid-mapping attrs of this projection (``locpriv.cf.equirectangular``)."""
        return cf.equirectangular(self.lon0, self.lat0, EARTH_RADIUS_M)


@dataclass
class LoadReport:
    rows_read: int
    dropped: dict = field(default_factory=dict)
    # when rows are outside the box: where the rows with valid coordinates lie (:func:`data_box`)
    data_box: DataBox | None = None

    @property
    def rows_kept(self) -> int:
        return self.rows_read - sum(self.dropped.values())

    def advice(self, limit: float, dataset: str | None = None) -> str:
        """Where the rows lie and the boxes to paste (:meth:`DataBox.advice`), as a fix's words."""
        other = sum(self.dropped.values()) - self.dropped.get("outside_bbox", 0)
        return self.data_box.advice(self.rows_read, other, limit, dataset) if self.data_box else ""


@dataclass(frozen=True)
class DataBox:
    """The extent of a file's rows with valid coordinates and the boxes holding :data:`SUGGESTED_SHARES` of them."""

    key: str  # the config key of the box: lonlat_bbox or bbox
    columns: tuple[str, str]
    valid: int  # rows with valid coordinates
    extent: list[float]
    boxes: list[tuple[float, list[float], float]]  # (share asked, box, share held)

    def advice(self, rows_read: int, other: int, limit: float, dataset: str | None = None) -> str:
        """One clause per box, ready to paste into the dataset's config; ``other`` rows are dropped
        whatever the box (missing or invalid coordinates): a box that would then drop more than
        ``limit`` of the file names the max_dropped_fraction it needs.  ``dataset``: its name in the config."""
        (c0, c1), e = self.columns, self.extent
        text = f"the rows span {c0} [{e[0]:g}, {e[1]:g}], {c1} [{e[2]:g}, {e[3]:g}]"
        offers, wide = [], []
        for share, edges, held in self.boxes:
            if self.key == "lonlat_bbox" and projection_error(edges) > MAX_PROJECTION_DISTORTION:
                wide.append(f"{share:.1%}".replace(".0%", "%"))
                continue
            drop = (other + self.valid - round(held * self.valid)) / rows_read
            need = f" with max_dropped_fraction: {fraction_above(drop)}" if drop > limit else ""
            offers.append(f"{self.key}: [{', '.join(f'{v:g}' for v in edges)}] keeps {held:.2%} of them{need}")
        where = f"datasets.{dataset}.{self.key}" if dataset else f"the dataset's {self.key}"
        if wide:
            offers.append(
                f"a box keeping {' or '.join(wide)} of them spans too many degrees of latitude for one "
                f"projection (above {MAX_PROJECTION_DISTORTION:.0%} distance error): set {where} to the region "
                "you want"
            )
        offers = list(dict.fromkeys(offers))  # few rows: both shares may give the same box
        if not wide:
            offers[-1] += f": set {where} to {'one of these' if len(offers) > 1 else 'it'}"
        return text + "; " + "; ".join(offers)


def fraction_above(f: float) -> float:
    """``f`` rounded up to two significant digits (a limit to paste that admits ``f``)."""
    step = 10.0 ** (np.floor(np.log10(f)) - 1)
    return float(round(np.ceil(f / step - 1e-9) * step, 12))


def projected_box(lonlat_bbox) -> tuple[list[float], LocalProjection]:
    """Domain in metres for a lon/lat box [lon_min, lon_max, lat_min, lat_max]."""
    lon_min, lon_max, lat_min, lat_max = map(float, lonlat_bbox)
    proj = LocalProjection((lon_min + lon_max) / 2, (lat_min + lat_max) / 2)
    # x extent is widest at the box edge nearest the equator; use the centre
    # latitude's scale so the box maps to an exact rectangle.
    x0, y0 = proj.forward(np.array(lon_min), np.array(lat_min))
    x1, y1 = proj.forward(np.array(lon_max), np.array(lat_max))
    return [float(x0), float(x1), float(y0), float(y1)], proj


# an explicit user column must exist; AUTO keeps a column named 'user' when there is one
AUTO = "auto"


def projection_error(lonlat_bbox) -> float:
    """Largest relative east-west distance error of :class:`LocalProjection` over the box.

    The projection uses cos(lat0) at the centre latitude for every point; at the box's
    edge latitude phi the true scale is cos(phi), so the error is |cos(phi)/cos(lat0) - 1|,
    largest at the edge farther from the equator (north-south distances are exact).
    """
    _, _, lat_min, lat_max = map(float, lonlat_bbox)
    lat0 = np.radians((lat_min + lat_max) / 2)
    return float(max(abs(np.cos(np.radians(lat)) / np.cos(lat0) - 1) for lat in (lat_min, lat_max)))


def read_table(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    fix_parse = "provide a UTF-8 CSV (optionally .csv.gz) with a header row, or a Parquet file"
    if not path.exists():
        raise InputError(
            str(path),
            "path",
            "file does not exist",
            "set the dataset's 'path' in the config to an existing CSV or Parquet file",
        )
    if path.is_dir():
        raise InputError(
            str(path),
            "path",
            "is a directory, not a file",
            "set the dataset's 'path' to the CSV/Parquet file inside it",
        )
    if path.stat().st_size == 0:
        raise InputError(str(path), "<file>", "the file is empty (0 bytes)", fix_parse)
    try:
        if path.suffix == ".parquet":
            table = pd.read_parquet(path)
            _no_duplicate_columns(path, list(map(str, table.columns)))
            return table
        _text_file(path)
        table = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
        _no_duplicate_columns(path, _csv_header(path))
        return table
    except InputError:
        raise
    except PermissionError as exc:
        raise InputError(
            str(path),
            "<file>",
            "cannot be read: permission denied",
            f"make it readable (chmod a+r {path}) or point the dataset's 'path' at a copy",
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            str(path),
            "<encoding>",
            f"not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})",
            "convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8",
        ) from exc
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(
            str(path), "<file>", f"compressed data is truncated or corrupt ({exc})", "copy or download the file again"
        ) from exc
    except pd.errors.EmptyDataError as exc:
        raise InputError(str(path), "<file>", "no header row and no data", fix_parse) from exc
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise InputError(str(path), "<file>", f"cannot be parsed ({' '.join(str(exc).split())})", fix_parse) from exc


# what a file that is not text starts with, to name it in the error
_BINARY = {
    b"PK\x03\x04": "a ZIP archive (an Excel .xlsx file?)",
    b"PAR1": "a Parquet file (name it .parquet)",
    b"\x89HDF": "an HDF5/NetCDF-4 file",
    b"CDF": "a NetCDF-3 file",
    b"\xd0\xcf\x11\xe0": "an old Excel .xls file",
    b"%PDF": "a PDF document",
    b"\x1f\x8b": "gzip data (name it .csv.gz)",
}


def _open_text(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _text_file(path: Path) -> None:
    """Refuse a file that is not text before pandas reports its bytes as a CSV or encoding problem."""
    with _open_text(path) as fh:
        head = fh.read(4096)
    kind = next((what for magic, what in _BINARY.items() if head.startswith(magic)), None)
    if kind or b"\x00" in head:
        raise InputError(
            str(path),
            "<file>",
            f"not a text CSV file: it is {kind or 'binary data (NUL bytes)'}",
            "export the data as a CSV (UTF-8, header row) or a Parquet file and point the dataset's 'path' at it",
        )


def _csv_header(path: Path) -> list[str]:
    with _open_text(path) as fh:
        return next(csv.reader([fh.readline().decode("utf-8", "replace")]), [])


def _no_duplicate_columns(path: Path, names: list[str]) -> None:
    """Two columns of one name: which one is the coordinate would be a guess (pandas renames the second)."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(
            str(path),
            twice[0],
            f"column name appears {names.count(twice[0])} times "
            f"(columns {[i + 1 for i, n in enumerate(names) if n == twice[0]]})",
            "rename or remove the duplicate columns so each name is used once",
        )


def _coordinates(raw: pd.DataFrame, col: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values as floats, with masks of missing and of non-numeric text entries."""
    text = raw[col]
    missing = text.isna().to_numpy()
    values = pd.to_numeric(text, errors="coerce").to_numpy(float)
    return values, missing, np.isnan(values) & ~missing


def _count_drop(report: LoadReport, reason: str, mask: np.ndarray) -> None:
    if mask.any():
        report.dropped[reason] = int(mask.sum())


def load_points(
    path: str | Path,
    *,
    lonlat_bbox=None,
    bbox=None,
    user_column: str | None = AUTO,
    columns: tuple[str, str] | None = None,
    time_column: str | None = None,
    time_format: str = timing.ISO8601,
    time_zone: str = "UTC",
) -> tuple[pd.DataFrame, LoadReport, dict]:
    """Read, project and clip points.

    Exactly one of ``lonlat_bbox`` (data has lon/lat columns) or ``bbox``
    (data has x/y columns in the units of the box) is given; ``columns`` names
    the two coordinate columns (default ``lon``, ``lat`` or ``x``, ``y``).
    ``user_column``: a column that must exist (kept as ``source_user``), None
    for none, or ``AUTO`` (a column named ``user`` if present).  Returns the
    points (columns ``x``, ``y``, ``source_user`` if a user column is used,
    ``lon``/``lat`` if projected), the drop report (reason -> rows, nonzero
    reasons only), and metadata.  ``time_column`` (with ``time_format``, ``time_zone``:
    :mod:`locpriv.datasets.times`): each row's time, kept as ``time`` (UTC), the rows sorted by
    person and time, the span and per-person counts in the metadata.
    """
    if (lonlat_bbox is None) == (bbox is None):
        raise ValueError("give exactly one of lonlat_bbox or bbox")
    raw = read_table(path)
    report = LoadReport(rows_read=len(raw))
    if report.rows_read == 0:
        raise InputError(
            str(path), "<rows>", "the file has a header but no data rows", "point the config at a file with data rows"
        )
    lonlat = lonlat_bbox is not None
    cols = tuple(columns) if columns else (("lon", "lat") if lonlat else ("x", "y"))
    keys = ("lon_column", "lat_column") if lonlat else ("x_column", "y_column")
    for c, key in zip(cols, keys, strict=True):
        if c not in raw.columns:
            raise InputError(
                str(path),
                c,
                f"column missing (found {list(map(str, raw.columns))})",
                f"set the dataset's '{key}' to the file's column, or configure "
                f"{'bbox (x/y data)' if lonlat else 'lonlat_bbox (lon/lat data)'}",
            )
    if user_column not in (None, AUTO) and user_column not in raw.columns:
        raise InputError(
            str(path),
            str(user_column),
            f"user column missing (found {list(map(str, raw.columns))})",
            "set 'user_column' to one of the file's columns, or leave it out",
        )
    if time_column is not None and time_column not in raw.columns:
        raise InputError(
            str(path),
            str(time_column),
            f"time column missing (found {list(map(str, raw.columns))})",
            "set 'time_column' to the file's column of times, or leave it out",
        )
    user = "user" if user_column == AUTO and "user" in raw.columns else (None if user_column == AUTO else user_column)
    a, miss_a, text_a = _coordinates(raw, cols[0])
    b, miss_b, text_b = _coordinates(raw, cols[1])
    missing = miss_a | miss_b
    text = (text_a | text_b) & ~missing
    infinite = (np.isinf(a) | np.isinf(b)) & ~missing & ~text
    finite = np.isfinite(a) & np.isfinite(b)
    _count_drop(report, "missing_coordinate", missing)
    _count_drop(report, "non_numeric_coordinate", text)
    _count_drop(report, "infinite_coordinate", infinite)
    if lonlat:
        valid = finite & (np.abs(a) <= 180) & (np.abs(b) <= 90)
        _count_drop(report, "invalid_lonlat", finite & ~valid)
        lo_x, hi_x, lo_y, hi_y = map(float, lonlat_bbox)
        box, proj = projected_box(lonlat_bbox)
        meta = {
            "units": "m",
            "projection": proj.describe(),
            "lonlat_bbox": list(map(float, lonlat_bbox)),
            "projection_max_distance_error": projection_error(lonlat_bbox),
        }
    else:
        valid = finite
        lo_x, hi_x, lo_y, hi_y = map(float, bbox)
        box, proj = list(map(float, bbox)), None
        meta = {"units": "native", "projection": "none"}
    inside = valid & (a >= lo_x) & (a <= hi_x) & (b >= lo_y) & (b <= hi_y)
    _count_drop(report, "outside_bbox", valid & ~inside)
    if "outside_bbox" in report.dropped:
        report.data_box = data_box(a[valid], b[valid], "lonlat_bbox" if lonlat else "bbox", cols)
    if user is not None:  # a row of no person cannot be attacked or capped as one: dropped, counted
        no_user = inside & (raw[user].isna().to_numpy() | (raw[user].astype(str).str.strip() == "").to_numpy())
        _count_drop(report, "missing_user_id", no_user)
        inside &= ~no_user
    if time_column is not None:  # a row of no readable time cannot be placed in a window: dropped, counted
        stamps, no_time, bad_time = timing.parse(
            raw[time_column], path=str(path), column=time_column, fmt=time_format, zone=time_zone
        )
        if inside.any() and not (inside & ~no_time & ~bad_time).any():
            raise timing.no_time_read(str(path), time_column, time_format, raw[time_column][inside])
        _count_drop(report, "missing_time", inside & no_time)
        _count_drop(report, "bad_time", inside & bad_time)
        inside &= ~(no_time | bad_time)
    if not inside.any():
        _no_point_inside(path, cols, a, b, valid, (lo_x, hi_x, lo_y, hi_y), report)
    out = pd.DataFrame(index=np.arange(int(inside.sum())))
    if proj is not None:
        x, y = proj.forward(a[inside], b[inside])
        out["x"], out["y"] = x, y
        out["lon"], out["lat"] = a[inside], b[inside]
    else:
        out["x"], out["y"] = a[inside], b[inside]
    if user is not None:
        out["source_user"] = raw[user].astype(str).to_numpy()[inside]
    if time_column is not None:
        out["time"] = stamps[inside].reset_index(drop=True)
        out = out.iloc[timing.person_order(out.get("source_user"), out["time"])].reset_index(drop=True)
        meta.update(
            time_column=time_column,
            time_format=time_format,
            time_zone=time_zone,
            **timing.summary(out["time"], out.get("source_user")),
        )
    meta.update(
        bbox=box,
        rows_read=report.rows_read,
        rows_kept=report.rows_kept,
        rows_dropped=dict(report.dropped),
        columns=list(cols),
        user_column=user,
    )
    return out, report, meta


def _no_point_inside(path, cols, a, b, valid, box, report: LoadReport) -> None:
    """Raise the error for a file with no usable point: swapped columns, wrong box, or no numbers."""
    lo_x, hi_x, lo_y, hi_y = box
    rows_read = report.rows_read
    names = f"{cols[0]}/{cols[1]}"
    finite = np.isfinite(a) & np.isfinite(b)
    swapped = finite & (b >= lo_x) & (b <= hi_x) & (a >= lo_y) & (a <= hi_y)
    if swapped.any() and swapped.sum() >= 0.5 * finite.sum():
        raise InputError(
            str(path),
            names,
            f"no row is inside the box but {int(swapped.sum())} of {rows_read} "
            "are with the two columns exchanged: the columns look swapped",
            f"exchange the column names ({cols[0]}_column/{cols[1]}_column keys) or fix the file",
        )
    if not valid.any():
        raise InputError(
            str(path),
            names,
            f"none of the {rows_read} rows has two valid numeric coordinates",
            f"check that '{cols[0]}' and '{cols[1]}' hold numbers (and lon/lat in degrees)",
        )
    raise InputError(
        str(path),
        names,
        f"all {rows_read} rows are outside the box {[lo_x, hi_x, lo_y, hi_y]}",
        "check the column units and the box" + (f": {report.advice(1.0)}" if report.data_box else ""),
    )


def _outward(a: tuple[float, float], b: tuple[float, float], span: float, lonlat: bool) -> list[float]:
    """The box [a0, a1, b0, b1] widened to multiples of 1/1000 of ``span`` rounded to a power of ten (so it
    holds at least the points it was cut at; lon/lat within [-180, 180] x [-90, 90]), printed without float noise."""
    step = 10.0 ** (np.floor(np.log10(span)) - 3)
    digits = max(0, -int(np.floor(np.log10(step))))
    edges = []
    for (lo, hi), bound in zip((a, b), (180.0, 90.0) if lonlat else (np.inf, np.inf), strict=True):
        down, up = np.floor(lo / step) * step, np.ceil(hi / step) * step
        if up <= down:  # all points on one line: a box needs a width
            down, up = down - step, up + step
        edges += [max(round(float(down), digits), -bound), min(round(float(up), digits), bound)]
    return edges


def covering_box(a: np.ndarray, b: np.ndarray, share: float, lonlat: bool) -> tuple[list[float], float]:
    """A box [a_min, a_max, b_min, b_max] holding at least ``share`` of the points, and the share it holds.

    Each side is cut at the same quantile t, the largest t (bisection; the share held falls as t
    grows) whose box still holds ``share`` (t = (1 - share) / 4 always does: a union bound over the
    four sides).  The edges are then rounded outward to 1/1000 of the data's larger span (for
    lon/lat inside [-180, 180] x [-90, 90]), which only adds points.
    """
    sa, sb = np.sort(a), np.sort(b)
    n = len(sa)

    def box(t: float) -> tuple[float, float, float, float]:
        lo, hi = int(np.floor(t * (n - 1))), int(np.ceil((1 - t) * (n - 1)))
        return sa[lo], sa[hi], sb[lo], sb[hi]

    def held(edges) -> float:
        return float(np.mean((a >= edges[0]) & (a <= edges[1]) & (b >= edges[2]) & (b <= edges[3])))

    low, high = (1 - share) / 4, (1 - share) / 2  # held(box(low)) >= share; (1 - share) / 2 per side is too much
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (mid, high) if held(box(mid)) >= share else (low, mid)
    a0, a1, b0, b1 = box(low)
    edges = _outward((a0, a1), (b0, b1), float(max(sa[-1] - sa[0], sb[-1] - sb[0])) or 1.0, lonlat)
    return edges, held(edges)


def data_box(a: np.ndarray, b: np.ndarray, key: str, cols: tuple[str, str]) -> DataBox:
    """The extent of the points (a, b) and the boxes holding :data:`SUGGESTED_SHARES` of them."""
    span = max(float(np.ptp(a)), float(np.ptp(b))) or 1.0
    extent = _outward((a.min(), a.max()), (b.min(), b.max()), span, key == "lonlat_bbox")
    boxes = [(share, *covering_box(a, b, share, key == "lonlat_bbox")) for share in SUGGESTED_SHARES]
    return DataBox(key, tuple(cols), len(a), extent, boxes)
