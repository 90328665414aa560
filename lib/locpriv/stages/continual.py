"""The continual-release branch of the DAG: a ``heatmap_flat`` setting on a dataset with
``releases: {window: ..., mode: continual}`` is one release over its T windows (``heatmaps.continual``).

The T window datasets are ingested as in windowed release (``datasets.windows``); one job per setting
and repetition (``workflow/rules/continual.smk``) reads their points, draws the tree's noisy nodes from
the run's own stream, and writes under ``continual/<dataset>/<mechanism>/<params>/rep~<r>/``:

* ``nodes.parquet``: what is published, every node (level, node, code, count) of the tree;
* ``maps.parquet``: post-processing of the nodes, each window's map (its leaf) and each running total;
* ``metrics.csv``: per window, the root-mean-square error per pixel (counts) of its map and of its
  running total against the exact counts, with the run's record: ``guarantee_epsilon`` (one row
  replaced, anywhere in the T windows) and ``guarantee_epsilon_person`` (one person's rows in every
  window replaced: the ledger's charge, made once for the T windows).

The ledger charges the setting once (``locpriv.ledger``), at the person-level epsilon of the whole tree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import io, mechanisms
from ..datasets import windows
from ..datasets.ingest import domain_of
from ..domain import Grid
from ..dp import composition
from ..errors import ConfigError
from ..heatmaps import continual
from ..mechanisms import heatmap
from ..seeding import rng as make_rng

MECHANISMS = ("heatmap_flat",)  # a fixed query per window (the adaptive dp_heatmap's tree differs by window)


@dataclass(frozen=True)
class Setting:
    """One continual release: a setting and repetition over the windows of ``dataset``."""

    dataset: str  # the dataset the windows were cut from (its ledger, its name in paths)
    mechanism: str
    params: dict
    pstr: str
    rep: int
    windows: tuple[str, ...]  # the window datasets, in time order

    @property
    def path(self) -> str:
        return f"continual/{self.dataset}/{self.mechanism}/{self.pstr}/rep~{self.rep}"


def _check(run, base: str) -> None:
    where = f"datasets.{base}.releases.mode"
    problem = None
    if run.mechanism not in MECHANISMS:
        problem = f"continual release is a mode of {list(MECHANISMS)} only, not of {run.mechanism!r}"
        fix = f"run {run.mechanism!r} on a dataset without mode: continual (or set mode: windowed)"
    elif run.params.get("n", "all") != "all":
        problem = f"continual release publishes every row of every window, but n is {run.params['n']}"
        fix = "set n: all for this mechanism"
    elif run.params.get("timing") == "fixed_work":
        problem = "timing fixed_work's delta is stated for one window's sub-query, not for the tree's"
        fix = "use timing: batch with mode: continual"
    if problem:
        raise ConfigError(f"config key '{where}': {problem} (experiment {run.experiment!r}); allowed: {fix}")


def split(config: dict, runs) -> tuple[list, list[Setting]]:
    """The runs released window by window, and the continual settings the others make (ConfigError for a
    run that has no continual mode)."""
    plain, grouped = [], {}
    for run in runs:
        spec = config["datasets"][run.dataset]
        if not windows.is_continual(spec):
            plain.append(run)
            continue
        base = windows.base_name(run.dataset, spec)
        _check(run, base)
        grouped.setdefault((base, run.mechanism, run.pstr, run.rep), []).append(run)
    settings = [
        Setting(base, mech, group[0].params, pstr, rep, tuple(sorted(r.dataset for r in group)))
        for (base, mech, pstr, rep), group in sorted(grouped.items())
    ]
    return plain, settings


def record(setting: Setting, rows: int | None) -> tuple[composition.Guarantee, float | None]:
    """The run's row-level record (``heatmaps.continual.guarantee``) and its person-level epsilon (person
    replaced, group privacy over ``rows``; None without a bound)."""
    mech = mechanisms.get(setting.mechanism)(**{k: v for k, v in setting.params.items() if k != "n"})
    row = continual.guarantee(mech.run_guarantee(setting.params), len(setting.windows))
    if row.epsilon is None or rows is None:
        return row, None
    return row, composition.person_level(row, rows).epsilon


def release(
    *,
    setting: dict,
    spec: dict,
    points: list[str],
    person_rows: int | None,
    seed: int,
    out_nodes: str,
    out_maps: str,
    out_metrics: str,
) -> None:
    """The job of one continual setting (module docstring); ``spec``: a window's dataset config (the box)."""
    run = Setting(**{**setting, "windows": tuple(setting["windows"])})
    mech = mechanisms.get(run.mechanism)(**{k: v for k, v in run.params.items() if k != "n"})
    depth = mech.settings["depth"]
    grid = Grid.regular(domain_of(spec)[0], 2, 2)  # the box only: pixels of its quadtree
    pixels = []
    for path in points:
        x, y, _ = heatmap.pixels(pd.read_parquet(path, columns=["user", "x", "y"]), grid, depth)
        pixels.append(x * (1 << depth) + y)
    rng = make_rng(seed, "continual", run.dataset, run.mechanism, mech.explicit_settings(), run.rep)
    nodes = continual.release(
        pixels, depth, mech.settings["epsilon"], rng, heatmap.secagg(mech.settings), continual.CONTINUAL
    )
    exact = continual.truth(pixels, depth)
    g, person = record(run, person_rows)
    facts = {"guarantee": g.as_dict(), "guarantee_epsilon_person": person, "windows": list(run.windows)}
    io.write_parquet(
        pd.concat([_long(array, level=level) for level, array in enumerate(nodes)], ignore_index=True),
        out_nodes,
        metadata=facts,
    )
    maps = {"window": continual.window_maps(nodes), "running_total": continual.running_totals(nodes)}
    io.write_parquet(
        pd.concat([_long(array, kind=kind) for kind, array in maps.items()], ignore_index=True),
        out_maps,
        metadata=facts,
    )
    table = pd.DataFrame(
        {
            "dataset": run.dataset,
            "mechanism": run.mechanism,
            "params": run.pstr,
            "rep": run.rep,
            "window": np.arange(len(exact)),
            "rows": exact.sum(axis=1),
            "window_rmse": np.sqrt(((maps["window"] - exact) ** 2.0).mean(axis=1)),
            "running_total_rmse": np.sqrt(((maps["running_total"] - np.cumsum(exact, axis=0)) ** 2.0).mean(axis=1)),
            "guarantee_epsilon": np.nan if g.epsilon is None else g.epsilon,
            "guarantee_epsilon_person": np.nan if person is None else person,
            "guarantee_relation": g.relation,
            "guarantee_model": g.model,
        }
    )
    with io.atomic_path(out_metrics) as tmp:
        table.to_csv(tmp, index=False, float_format="%.9g")


def _long(array: np.ndarray, **key) -> pd.DataFrame:
    """(rows, codes) counts as a long table: the key columns, then ``index`` (a node or window), code, count."""
    rows, codes = array.shape
    return pd.DataFrame(
        {
            **key,
            "index": np.repeat(np.arange(rows), codes),
            "code": np.tile(np.arange(codes), rows),
            "count": array.ravel(),
        }
    )


def as_params(setting: Setting) -> dict:
    """The setting as a rule's params (plain types; ``release`` takes it back)."""
    return {**setting.__dict__, "windows": list(setting.windows)}


def summarise(*, paths: list[str], out: str) -> None:
    """Every continual run's per-window metrics in one table (``summary/continual.csv``)."""
    table = pd.concat([pd.read_csv(p) for p in sorted(paths)], ignore_index=True)
    with io.atomic_path(out) as tmp:
        table.to_csv(tmp, index=False, float_format="%.9g")
