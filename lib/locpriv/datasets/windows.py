"""Windowed releases: a dataset with ``releases: {window: 1d}`` is published once per time window.

Each window is a dataset of its own to the DAG, named ``<dataset>.w<k>`` (k = 000, 001, ...), holding
the rows whose time falls in [start + k window, start + (k + 1) window); every run configured on the
dataset runs on every window, so a setting gives T releases of the same persons.  The windows share
the dataset's persons (a synthetic trajectory is generated once, from the dataset's own stream, and
cut), and they share its ledger (``locpriv.ledger``: each window a release, composed over the T).

T is fixed by the config alone: for a synthetic trajectory, its days cut into windows; for a file,
``releases.start`` and ``releases.count`` (rows outside the T windows are not released).

``releases.mode: continual`` keeps the T window datasets (each ingested as before) but releases every
``heatmap_flat`` setting on them once, as the binary tree over the T windows (``locpriv.stages.continual``).
"""

from __future__ import annotations

import math
import re

import pandas as pd

from ..errors import ConfigError

_LENGTH = re.compile(r"(\d+)([hdw])")
_UNIT = {"h": "hours", "d": "days", "w": "weeks"}
CONTINUAL = "continual"


def length(text: str, where: str) -> pd.Timedelta:
    """'1d', '12h', '1w' as a Timedelta; ConfigError naming ``where`` otherwise."""
    match = _LENGTH.fullmatch(str(text))
    if not match or int(match.group(1)) < 1:
        raise ConfigError(f"config key '{where}': {text!r} is not a window length; allowed: e.g. 12h, 1d, 7d, 1w")
    return pd.Timedelta(**{_UNIT[match.group(2)]: int(match.group(1))})


def _span(name: str, spec: dict) -> tuple[pd.Timestamp, int]:
    releases, where = spec["releases"], f"datasets.{name}.releases"
    window = length(releases["window"], f"{where}.window")
    if "trajectory" in spec:
        start = pd.Timestamp(releases.get("start", spec["trajectory"].get("start", "2026-01-05")), tz="UTC")
        end = pd.Timestamp(spec["trajectory"].get("start", "2026-01-05"), tz="UTC") + pd.Timedelta(
            days=int(spec["trajectory"]["days"])
        )
        count = releases.get("count", math.ceil((end - start) / window))
    elif "start" in releases and "count" in releases and "time_column" in spec:
        start, count = pd.Timestamp(releases["start"], tz="UTC"), releases["count"]
    else:
        raise ConfigError(
            f"config key '{where}': windows of a file need its 'time_column' and releases 'start' (the first "
            "window's first day, UTC) and 'count' (T windows); allowed: e.g. {window: 1w, start: 2008-10-20, count: 52}"
        )
    return start, int(count)


def expand(config: dict) -> None:
    """Replace every dataset with ``releases`` by its T window datasets, in the datasets and experiments."""
    datasets = config.get("datasets", {})
    cut = {}
    for name, spec in list(datasets.items()):
        if "releases" not in spec:
            continue
        start, count = _span(name, spec)
        window = length(spec["releases"]["window"], "")
        base = {k: v for k, v in spec.items() if k != "releases"}
        names = []
        for k in range(count):
            lo = start + k * window
            datasets[f"{name}.w{k:03d}"] = {
                **base,
                "window": {
                    "of": name,
                    "index": k,
                    "count": count,
                    "length": spec["releases"]["window"],
                    "start": lo.isoformat(),
                    "end": (lo + window).isoformat(),
                    # continual: the windows' heatmap runs are one tree release (heatmaps.continual); the key
                    # is absent window by window, so those windows' specs (and release keys) are as before
                    **({"mode": CONTINUAL} if spec["releases"].get("mode") == CONTINUAL else {}),
                },
            }
            names.append(f"{name}.w{k:03d}")
        del datasets[name]
        cut[name] = names
    for exp in config.get("experiments", {}).values():
        exp["datasets"] = [w for ds in exp["datasets"] for w in cut.get(ds, [ds])]


def is_continual(spec: dict) -> bool:
    """Whether the dataset is a window of a continual release (``releases.mode: continual``)."""
    return spec.get("window", {}).get("mode") == CONTINUAL


def base_name(name: str, spec: dict) -> str:
    """The dataset a window was cut from (its ledger and its stream); the name itself otherwise."""
    return spec["window"]["of"] if "window" in spec else name


def inside(times: pd.Series, spec: dict):
    """Mask of the rows in the spec's window (all rows without one)."""
    if "window" not in spec:
        return pd.Series(True, index=times.index).to_numpy()
    lo, hi = (pd.Timestamp(spec["window"][k]) for k in ("start", "end"))
    return ((times >= lo) & (times < hi)).to_numpy()


def windowed_settings(runs, datasets: dict) -> dict:
    """{(dataset, mechanism, params folder, rep): its runs in window order} over the datasets cut into
    windows: the T releases of one setting that the adversaries across releases attack together."""
    out = {}
    for run in runs:
        spec = datasets[run.dataset]
        if "window" in spec:
            out.setdefault((spec["window"]["of"], run.mechanism, run.pstr, run.rep), []).append(run)
    return {
        key: sorted(found, key=lambda run: datasets[run.dataset]["window"]["index"])
        for key, found in sorted(out.items())
    }
