"""What the schema cannot judge alone: values that break a path or a double, data too small
for the config, and settings that run but give absurd results.

Errors are :class:`~locpriv.errors.ConfigError` lines naming the config key, the problem and
what is allowed; warnings are lines starting with ``warning:``.  The warning thresholds are
config keys (``sanity``), so a user who means it can raise them:

* ``max_bandwidth_fraction``: a kernel bandwidth above this fraction of the box's shorter side
  smooths every surface into one blob, and every mechanism then ranks cells alike (cycle hire
  data, 742 points with ``knn_k: 500``: a 6.8 km bandwidth, Spearman ≈ 1 for everything);
* ``min_bandwidth_cells``: a bandwidth below this many grid cells puts each kernel between the grid's
  points (``h: 0.001`` on data in metres with 100 m cells: every surface is noise, Spearman 0);
* ``max_knn_fraction``: ``knn_k`` above this fraction of the points makes that bandwidth;
* ``max_projection_distortion``: a lon/lat box whose equirectangular projection distorts
  distances by more than this is refused (the whole world: 100 %, and metres mean nothing).
"""

from __future__ import annotations

import re

from .errors import ConfigError

# Dataset names become folder names and a Snakemake wildcard: the wildcard's own pattern
DATASET_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
# e^eps must be a finite double (e^709.8 overflows); no guarantee means anything near it
MAX_EPSILON = 700.0
# The exact noise sampler draws at scale Delta / eps < 2^36 (locpriv.dp.sampling.MAX_SCALE), Delta the
# sensitivity in its integer steps: laplace_ldp's is the largest, up to 2 x 2048 steps (its grid_step), so
# it needs eps > 2^-24 = 6.0e-8 (privtree's ~1,200 steps: 1.7e-8; sldp's < 1,024).  1e-6 keeps a factor
# 16 for other settings and plugins; such an epsilon releases nothing but noise anyway.
MIN_EPSILON = 1e-6
DEFAULTS = {
    "max_bandwidth_fraction": 0.2,
    "min_bandwidth_cells": 0.5,
    "max_knn_fraction": 0.1,
    "max_projection_distortion": 0.1,
}
# metres per distance unit: real-data privacy levels (frontier.levels.real) are in metres
METRES = {"m": 1.0, "km": 1000.0}


def settings(config: dict) -> dict:
    """The ``sanity`` config section with its defaults."""
    return {**DEFAULTS, **config.get("sanity", {})}


def check_config(config: dict, runs) -> None:
    """Raise on dataset names, lon/lat boxes, epsilons (too large or too small) and synthetic ``n`` the
    workflow cannot use (``locpriv.config.check_startup``, so ``python -m locpriv.check_config`` refuses
    them too)."""
    limits = settings(config)
    for name, spec in config.get("datasets", {}).items():
        if not re.fullmatch(DATASET_NAME, name):
            raise ConfigError(
                f"config key 'datasets.{name}': the dataset name is used in file paths; allowed: "
                "ASCII letters, digits, '_', '.' and '-' (not first), e.g. "
                f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name).lstrip('_.-') or 'mydata'!r}"
            )
        if "lonlat_bbox" in spec:
            from .datasets.points import projection_error

            error = projection_error(spec["lonlat_bbox"])
            if error > limits["max_projection_distortion"]:
                raise ConfigError(
                    f"config key 'datasets.{name}.lonlat_bbox': the equirectangular projection of "
                    f"{spec['lonlat_bbox']} distorts distances by up to {error:.1%}, above "
                    f"sanity.max_projection_distortion {limits['max_projection_distortion']:g}; allowed: a box "
                    "spanning fewer degrees of latitude (split the data by region), or project the data "
                    "yourself and give x/y with bbox and units"
                )
        if spec["source"] == "synthetic":
            problem = too_few_users(
                requested_users(config, name), name, {"n_users": spec["n_users"], "source": "its n_users"}
            )
            if problem:
                raise ConfigError(problem)
    for run in runs:
        for key, value in run.params.items():
            if "epsilon" not in key or not isinstance(value, (int, float)):
                continue
            where = f"config key 'experiments.{run.experiment}.mechanisms.{run.mechanism}.{key}'"
            if value > MAX_EPSILON:
                raise ConfigError(
                    f"{where}: {value:g} is not allowed; allowed: at most {MAX_EPSILON:g} (e^epsilon "
                    "overflows a double near 709, and such an epsilon protects nothing)"
                )
            if 0 < value < MIN_EPSILON:
                raise ConfigError(
                    f"{where}: {value:g} is not allowed; allowed: at least {MIN_EPSILON:g} (the noise "
                    "sampler's scale, sensitivity / epsilon, must stay below 2^36, and such an epsilon "
                    "releases nothing but noise)"
                )


def config_warnings(config: dict, runs) -> list[str]:
    """Warnings on settings known before any job: numeric bandwidths too wide for their box, and
    real datasets whose unit is not a length (:func:`level_warnings`)."""
    limits, warnings, seen = settings(config), [], set()
    for run in runs:
        where = f"experiments.{run.experiment}.mechanisms.{run.mechanism}"
        h = run.params.get("h")
        if isinstance(h, (int, float)) and (run.dataset, h) not in seen:
            seen.add((run.dataset, h))
            spec = config["datasets"][run.dataset]
            for line in (
                wide_bandwidth(run.dataset, float(h), spec, limits, f"{where}.h"),
                narrow_bandwidth(run.dataset, float(h), spec, config["grid"], limits, f"{where}.h"),
            ):
                warnings += [line] if line else []
    used = {run.dataset for run in runs}
    return warnings + level_warnings({k: v for k, v in config.get("datasets", {}).items() if k in used})


def wide_bandwidth(dataset: str, h: float, spec: dict, limits: dict, key: str) -> str | None:
    """A warning when bandwidth ``h`` is above ``max_bandwidth_fraction`` of the box's shorter side."""
    from .datasets.ingest import domain_of

    domain, units = domain_of(spec)
    side = domain.inscribed_square
    if h <= limits["max_bandwidth_fraction"] * side:
        return None
    return (
        f"warning: dataset {dataset}: bandwidth {key} = {h:.4g} {units} is {h / side:.0%} of the box's "
        f"shorter side ({side:.4g} {units}; sanity.max_bandwidth_fraction {limits['max_bandwidth_fraction']:g}): "
        "every surface is one smooth blob and every mechanism scores alike; lower it"
    )


def narrow_bandwidth(dataset: str, h: float, spec: dict, grid: dict, limits: dict, key: str) -> str | None:
    """A warning when bandwidth ``h`` is below ``min_bandwidth_cells`` of a cell of the P x Q ``grid``."""
    from .datasets.ingest import domain_of

    domain, units = domain_of(spec)
    cell = min((domain.xmax - domain.xmin) / grid["P"], (domain.ymax - domain.ymin) / grid["Q"])
    if h >= limits["min_bandwidth_cells"] * cell:
        return None
    return (
        f"warning: dataset {dataset}: bandwidth {key} = {h:.4g} {units} is {h / cell:.2g} of a grid cell "
        f"({cell:.4g} {units}; sanity.min_bandwidth_cells {limits['min_bandwidth_cells']:g}): the kernels fall "
        f"between the grid's points and every surface is noise; set it to at least {cell:.3g} (one cell), "
        "or h: knn"
    )


def knn_warnings(dataset: str, spec: dict, h: float, k: int, n_points: int, limits: dict) -> list[str]:
    """Warnings on a kNN bandwidth: ``knn_k`` a large share of the points, or a bandwidth wider than the box allows."""
    lines = []
    if k > limits["max_knn_fraction"] * n_points:
        lines.append(
            f"warning: dataset {dataset}: knn_k {k} is {k / n_points:.0%} of its {n_points} points "
            f"(sanity.max_knn_fraction {limits['max_knn_fraction']:g}): the kNN bandwidth spans most of "
            f"the data; set datasets.{dataset}.knn_k to at most "
            f"{max(1, int(limits['max_knn_fraction'] * n_points))}"
        )
    line = wide_bandwidth(dataset, h, spec, limits, f"h: knn (knn_k {k})")
    return lines + ([line] if line else [])


def requested_users(config: dict, dataset: str) -> list[tuple[str, int]]:
    """(config key, n) of every numeric ``n`` the experiments ask of ``dataset``."""
    out = []
    for exp_name, exp in config.get("experiments", {}).items():
        if dataset not in exp.get("datasets", []):
            continue
        for mech, grid in exp.get("mechanisms", {}).items():
            values = (grid or {}).get("n", "all")
            for n in values if isinstance(values, list) else [values]:
                if isinstance(n, int) and not isinstance(n, bool):
                    out.append((f"experiments.{exp_name}.mechanisms.{mech}.n", n))
    return out


def too_few_users(requested: list[tuple[str, int]], dataset: str, meta: dict) -> str | None:
    """The error line when a run asks for more users than ``dataset`` has (``meta``: its ingest's), else None.

    ``requested``: :func:`requested_users`.  Checked when the number is known: at config time
    for synthetic data, by the ingest job and, once ingested, before the DAG for real data.
    """
    kept = int(meta["n_users"])
    asked = [(key, n) for key, n in requested if n > kept]
    if not asked:
        return None
    key, n = max(asked, key=lambda item: item[1])
    cap, over = meta.get("person_cap"), meta.get("rows_over_person_cap")
    origin = meta.get("source", "")
    if "rows_read" in meta:
        origin = f"{kept} of the {meta['rows_read']} rows of {origin} kept" + (
            f", {over} over max_points_per_person {cap}" if cap and over else ""
        )
    return (
        f"config key '{key}': n = {n} users asked of dataset '{dataset}', which has {kept} ({origin}); "
        f"allowed: n at most {kept}, or n: all" + (", or a larger max_points_per_person" if cap and over else "")
    )


def distance_unit(spec: dict) -> str | None:
    """The dataset's distance unit as a key of :data:`METRES`, or None when it is not a known length."""
    unit = "m" if "lonlat_bbox" in spec else str(spec.get("units", "1")).strip().lower()  # as ingest.domain_of
    return {
        "metre": "m",
        "meter": "m",
        "metres": "m",
        "meters": "m",
        "kilometre": "km",
        "kilometer": "km",
        "kilometres": "km",
        "kilometers": "km",
    }.get(unit, unit if unit in METRES else None)


def privacy_levels(spec: dict, domain, levels: dict) -> list[float]:
    """The frontier's privacy levels for one dataset, in the dataset's own distance unit.

    Synthetic data: ``levels.synthetic``, fractions of the box's shorter side.  Real data in a
    known length unit: ``levels.real`` (metres) converted to that unit (clmfires-like data in
    km: 250 m is 0.25).  Real data without one: the fractions, as for synthetic data
    (:func:`level_warnings` says so).
    """
    unit = distance_unit(spec)
    if spec["source"] == "synthetic" or unit is None:
        return [f * domain.inscribed_square for f in levels["synthetic"]]
    return [float(v) / METRES[unit] for v in levels["real"]]


def level_warnings(datasets: dict) -> list[str]:
    """Warnings for real datasets whose unit is not a length: their levels are box fractions."""
    return [
        f"warning: dataset {name}: its unit {spec.get('units', '1')!r} is not a length (m, km), so "
        "frontier.levels.real (metres) cannot apply; its privacy levels are frontier.levels.synthetic "
        f"fractions of the box; set datasets.{name}.units to m or km"
        for name, spec in datasets.items()
        if spec["source"] != "synthetic" and distance_unit(spec) is None
    ]
