"""Time stamps of real rows: parsed to UTC, validated, summarised per person.

A dataset with a ``time_column`` is a set of trajectories: each person's rows in time order.  The
column is parsed by ``time_format`` (``iso8601``, the default: ISO 8601 text with or without a UTC
offset; ``unix``: seconds since 1970-01-01 UTC; else a ``strftime`` pattern such as
``%d/%m/%Y %H:%M``); a time without an offset is local time in ``time_zone`` (an IANA name, default
UTC), and every time is stored in UTC.  A missing time, text the format does not read, or a local
time that does not exist or is ambiguous at a daylight-saving change drops its row, counted by
reason as a bad coordinate is (``missing_time``, ``bad_time``); a column of which no row parses
stops the ingest with one line naming the column and the fix.
"""

from __future__ import annotations

import zoneinfo

import numpy as np
import pandas as pd

from ..errors import InputError

ISO8601 = "iso8601"
UNIX = "unix"
FORMATS_HELP = "'iso8601' (e.g. 2008-10-23T02:53:04Z), 'unix' (seconds since 1970) or a strftime pattern"


def parse(raw: pd.Series, *, path: str, column: str, fmt: str = ISO8601, zone: str = "UTC"):
    """(UTC times as a tz-aware Series, mask of missing values, mask of unreadable ones) of ``raw``."""
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise InputError(
            path, column, f"time_zone {zone!r} is not an IANA time zone", "set 'time_zone' to e.g. UTC or Asia/Shanghai"
        ) from None
    missing = raw.isna().to_numpy()
    if pd.api.types.is_datetime64_any_dtype(raw):  # a Parquet timestamp column
        times = raw
    elif fmt == UNIX:
        seconds = pd.to_numeric(raw, errors="coerce")
        seconds = seconds.where(np.isfinite(seconds.to_numpy(float)) & (seconds.abs() < 1e11))  # year < 5138
        times = pd.to_datetime(seconds, unit="s", utc=True)
    else:
        try:
            times = pd.to_datetime(raw, format="ISO8601" if fmt == ISO8601 else fmt, errors="coerce")
        except (ValueError, TypeError) as exc:  # e.g. offsets and no offsets mixed in one column
            raise InputError(
                path,
                column,
                f"times cannot be read with time_format {fmt!r} ({' '.join(str(exc).split())[:160]})",
                f"write every time in one form; time_format takes {FORMATS_HELP}",
            ) from None
    if getattr(times.dt, "tz", None) is None:
        times = times.dt.tz_localize(zone, ambiguous="NaT", nonexistent="NaT")
    times = times.dt.tz_convert("UTC").astype("datetime64[ns, UTC]")  # one resolution: the same bytes
    bad = times.isna().to_numpy() & ~missing
    return times, missing, bad


def no_time_read(path: str, column: str, fmt: str, raw: pd.Series) -> InputError:
    """The error of a time column of which no row could be read."""
    example = next((str(v) for v in raw if isinstance(v, str) and v.strip()), None)
    return InputError(
        path,
        column,
        f"no row's time can be read with time_format {fmt!r}"
        + (f" (first value {example!r})" if example else " (the column is empty)"),
        f"set the dataset's 'time_format' to {FORMATS_HELP} matching the file, or 'time_column' to the "
        "column holding the times",
    )


def summary(times: pd.Series, persons: pd.Series | None) -> dict:
    """The time span, and the rows and days per person, for meta.json."""
    out = {
        "time_first": times.min().isoformat(),
        "time_last": times.max().isoformat(),
        "time_span_days": float((times.max() - times.min()) / pd.Timedelta(days=1)),
    }
    if persons is not None:
        counts = persons.value_counts().to_numpy()
        days = times.dt.floor("D").groupby(persons.to_numpy()).nunique().to_numpy()
        for name, values in (("rows_per_person", counts), ("days_per_person", days)):
            q = np.quantile(values, [0.0, 0.5, 0.9, 1.0])
            out[name] = dict(zip(("min", "median", "p90", "max"), map(float, q), strict=True))
    return out


def person_order(persons: pd.Series | None, times: pd.Series) -> np.ndarray:
    """Row order by person, then time (stable: rows of equal time keep the file's order)."""
    keys = times.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy().astype("datetime64[ns]").astype(np.int64)
    if persons is None:
        return np.argsort(keys, kind="stable")
    return np.lexsort((keys, pd.factorize(persons, sort=True)[0]))


def too_many_dropped(path: str, spec: dict, dropped: dict, rows: int, limit: float) -> InputError | None:
    """The error of a file whose rows without a readable time alone exceed the drop limit, else None."""
    missing, bad = dropped.get("missing_time", 0), dropped.get("bad_time", 0)
    if missing + bad <= limit * rows:
        return None
    return InputError(
        path,
        spec["time_column"],
        f"{missing + bad} of {rows} rows ({(missing + bad) / rows:.1%}) have no readable time ({missing} "
        f"missing, {bad} not readable with time_format {spec.get('time_format', ISO8601)!r} in time_zone "
        f"{spec.get('time_zone', 'UTC')!r}), above max_dropped_fraction {limit}",
        f"set 'time_format' ({FORMATS_HELP}) and 'time_zone' to match the file, or fix those rows",
    )
