"""Config validation and experiment expansion for the Snakefile.

Validation runs at parse time, before any job: the JSON schema first (shape,
types, ranges), then what a schema cannot know (mechanism names come from the
plugin registry, each mechanism's parameters are checked by the mechanism,
dataset files must exist).  Each failure is one message naming the config key
and what is allowed.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pandas as pd
import yaml
from snakemake.utils import Paramspace

from . import mechanisms
from .params import explicit_params


class ConfigError(ValueError):
    pass


class StudySection:
    """The one validation dialect of the ``studies.<name>`` sections.

    Every error is one line, ``config key 'studies.<study>.<key>': <problem>; allowed: <allowed>``,
    the same shape :func:`check_schema` gives for the main DAG.  ``reps`` means the same in every
    study: one positive integer, the number of repetitions of every setting (a list is an error, as
    it is for ``experiments.<name>.reps``).
    """

    def __init__(self, study: str):
        self.study = study

    def error(self, key: str, problem: str, allowed: str) -> ConfigError:
        return ConfigError(f"config key 'studies.{self.study}.{key}': {problem}; allowed: {allowed}")

    def merge(self, given: dict | None, defaults: dict, prefix: str = "", nested: tuple = ()) -> dict:
        """Defaults overridden by ``given``; an unknown key or a non-mapping is an error.

        Keys named in ``nested`` hold sub-sections that are merged the same way (recursively).
        """
        given = {} if given is None else given
        if not isinstance(given, dict):
            raise self.error(prefix.rstrip(".") or "<section>", f"got {given!r}",
                             f"a mapping with keys among {sorted(defaults)}")
        unknown = sorted(set(given) - set(defaults), key=str)
        if unknown:
            raise self.error(f"{prefix}{unknown[0]}", "unknown key", str(sorted(defaults)))
        out = {**defaults, **given}
        for key in nested:
            if isinstance(defaults.get(key), dict):
                out[key] = self.merge(given.get(key), defaults[key], f"{prefix}{key}.",
                                      tuple(k for k, v in defaults[key].items() if isinstance(v, dict)))
        return out

    def reps(self, value, key: str = "reps") -> int:
        """The number of repetitions: one positive integer (lists are refused everywhere)."""
        return self.number(value, key, integer=True, low=1)

    def number(self, value, key: str, integer: bool = False, low: float = -math.inf, high: float = math.inf,
               open_low: bool = False, open_high: bool = False):
        """A finite number (an int when ``integer``) in the interval given; booleans are refused."""
        kind = int if integer else (int, float)
        ok = (isinstance(value, kind) and not isinstance(value, bool) and math.isfinite(value)
              and (value > low if open_low else value >= low) and (value < high if open_high else value <= high))
        if not ok:
            what = "an integer" if integer else "a finite number"
            if low == -math.inf and high == math.inf:
                span = ""
            elif high == math.inf:
                span = f" {'>' if open_low else '>='} {low:g}"
            else:
                span = f" in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
            raise self.error(key, f"got {value!r}", what + span)
        return value

    def bounded(self, value, key: str, kind, low: float, high: float = math.inf, open_low: bool = True):
        """A number (``kind`` int or (int, float)) in (low, high] or [low, high]."""
        return self.number(value, key, integer=kind is int, low=low, high=high, open_low=open_low)

    def choice(self, value, key: str, options) -> str:
        if isinstance(value, (list, dict)) or value not in options:
            raise self.error(key, f"got {value!r}", str(list(options)))
        return value

    def positive_list(self, value, key: str, integer: bool = False) -> list:
        """A positive number (integer) or a non-empty list of them, as a list."""
        values = value if isinstance(value, list) else [value]
        kind = int if integer else (int, float)
        if not values or not all(isinstance(v, kind) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                                 for v in values):
            raise self.error(key, f"got {value!r}",
                             f"a positive {'integer' if integer else 'number'} or a non-empty list of them")
        return [int(v) if integer else float(v) for v in values]


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def check_schema(config: dict, schema_path: str | Path) -> None:
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.path), list(map(str, e.path))))
    if errors:
        raise _schema_error(errors[0])


def _schema_error(err) -> ConfigError:
    """The study sections' one-line style: ``config key '<key>': <problem>; allowed: <allowed>``."""
    schema = err.schema if isinstance(err.schema, dict) else {}
    path = list(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = sorted(schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(known), key=str)
        return ConfigError(f"config key '{_key(path + extra[:1])}': unknown key; allowed: {known}")
    message = err.message if len(err.message) <= 200 else err.message[:200] + "..."
    return ConfigError(f"config key '{_key(path)}': {message}; allowed: {_schema_allowed(schema)}")


def _schema_allowed(schema: dict) -> str:
    """What a schema node accepts, in words (its type, bounds, choices and description)."""
    parts = []
    if "enum" in schema:
        parts.append(str(schema["enum"]))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        parts.append(" or ".join(types))
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in schema:
            parts.append(f"{sign} {schema[key]}")
    if "maxItems" in schema:
        parts.append(f"of {schema.get('minItems', 0)} to {schema['maxItems']} items")
    elif "minItems" in schema:
        parts.append(f"of at least {schema['minItems']} items")
    if "required" in schema:
        parts.append(f"with keys {schema['required']}")
    if "propertyNames" in schema and "enum" in schema["propertyNames"]:
        parts.append(f"keys among {schema['propertyNames']['enum']}")
    text = " ".join(parts)
    hint = schema.get("description", "")
    return f"{text} ({hint})" if text and hint else (text or hint or "see workflow/schemas/config.schema.yaml")


# Defaults of optional keys (the schema documents them).
DEFAULT_KNN_K = 500
DEFAULT_MEMORY_LIMIT_MB = 4000
ATTACK_BATCH = 256  # attack.batch default (locpriv.attack.DEFAULT_BATCH)
# working copies per reconstructed surface in the attack (surface, neighbour comparisons, mask)
_ATTACK_ARRAYS = 3


def check_values(config: dict) -> None:
    """What the schema cannot check: box order, one box per dataset, memory estimate, results_dir."""
    check_results_dir(config.get("results_dir", "results"))
    for name, spec in config.get("datasets", {}).items():
        if spec["source"] == "points" and ("lonlat_bbox" in spec) == ("bbox" in spec):
            raise ConfigError(f"config key 'datasets.{name}': give exactly one of 'lonlat_bbox' (lon/lat "
                              "data) or 'bbox' (x/y data)")
        if "max_points_per_person" in spec and "user_column" not in spec:
            raise ConfigError(f"config key 'datasets.{name}.max_points_per_person': needs 'user_column' "
                              "(the column naming each row's person)")
        for key in ("bbox", "lonlat_bbox"):
            if key in spec:
                check_box(spec[key], f"datasets.{name}.{key}", lonlat=key == "lonlat_bbox")
    check_memory(config)


def check_results_dir(path: str) -> None:
    """A relative folder inside the working directory: Snakemake's paths and its cleanup stay in it."""
    parts = Path(path).parts
    if Path(path).is_absolute() or ".." in parts or not parts or parts == (".",):
        raise ConfigError(f"config key 'results_dir': {path!r} is not allowed; allowed: a relative folder "
                          "inside the working directory without '..' (e.g. results or results/paper)")


def check_box(box, key: str, lonlat: bool = False) -> None:
    x0, x1, y0, y1 = box
    names = ("lon", "lat") if lonlat else ("x", "y")
    for lo, hi, n in ((x0, x1, names[0]), (y0, y1, names[1])):
        if not lo < hi:
            raise ConfigError(f"config key '{key}': inverted or empty box {box}: {n}_min {lo} is not below "
                              f"{n}_max {hi}; allowed: [{names[0]}_min, {names[0]}_max, {names[1]}_min, "
                              f"{names[1]}_max] with min < max")
    if lonlat and not (-180 <= x0 and x1 <= 180 and -90 <= y0 and y1 <= 90):
        raise ConfigError(f"config key '{key}': {box} is not a lon/lat box; allowed: lon in [-180, 180], "
                          "lat in [-90, 90] (degrees), in the order [lon_min, lon_max, lat_min, lat_max]")


def memory_estimate_mb(config: dict) -> dict[str, float]:
    """Estimated peak memory (MB) of the largest arrays a job holds, by what dominates it.

    The attack rebuilds min(attack.batch, attack.users) user surfaces on the P x Q grid at once;
    an rff shard holds users_per_shard x max_features frequencies and phases.
    """
    cells = config["grid"]["P"] * config["grid"]["Q"]
    attack = config["attack"]
    surfaces = min(int(attack.get("batch", ATTACK_BATCH)), int(attack["users"]))
    estimate = {"attack batch x grid": surfaces * cells * 8 * _ATTACK_ARRAYS / 1e6}
    features = max([int(v) for exp in config.get("experiments", {}).values()
                    for mech, grid in exp["mechanisms"].items() if mech == "rff"
                    for key in ("B", "max_features") for v in _as_list((grid or {}).get(key, 0))
                    if isinstance(v, (int, float))] or [0])
    if features:
        estimate["users_per_shard x rff features"] = config["users_per_shard"] * features * 3 * 8 * 2 / 1e6
    return estimate


def check_memory(config: dict) -> None:
    limit = config.get("memory_limit_mb", DEFAULT_MEMORY_LIMIT_MB)
    for what, mb in memory_estimate_mb(config).items():
        if mb > limit:
            raise ConfigError(f"config key 'memory_limit_mb': a job would need about {mb:,.0f} MB for "
                              f"{what} (grid {config['grid']['P']}x{config['grid']['Q']}, attack.batch "
                              f"{config['attack'].get('batch', ATTACK_BATCH)}, users_per_shard "
                              f"{config['users_per_shard']}), above the limit {limit} MB; allowed: a smaller "
                              "grid, attack.batch or rff B/max_features, or raise memory_limit_mb if the "
                              "machine has the memory")


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def check_run_params(params: dict, where: str) -> None:
    """Numbers must be finite; rff's B cannot exceed the users' max_features (every user would refuse)."""
    for key, value in params.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"config key '{where}.{key}': {value!r} is not allowed; allowed: a finite number")
    if "B" in params and "max_features" in params and params["B"] > params["max_features"]:
        raise ConfigError(f"config key '{where}.B': {params['B']} exceeds max_features "
                          f"{params['max_features']}, so every user would refuse the query; allowed: "
                          f"B <= max_features (or raise max_features)")


@dataclass
class Run:
    experiment: str
    dataset: str
    mechanism: str
    params: dict
    pstr: str
    rep: int
    key: tuple = field(init=False)

    def __post_init__(self):
        self.key = (self.dataset, self.mechanism, self.pstr, self.rep)

    @property
    def path(self) -> str:
        """The run's folder relative to the results directory (config key results_dir)."""
        return f"runs/{self.dataset}/{self.mechanism}/{self.pstr}/rep~{self.rep}"


def _patterns(rows: list[dict]) -> list[str]:
    """Each row's ``{params}`` path component (Paramspace), rows with the same keys together:
    a row without an omitted default must not get a 'kde~nan' column from its neighbours."""
    out, groups = [""] * len(rows), {}
    for i, row in enumerate(rows):
        groups.setdefault(tuple(row), []).append(i)
    for idx in groups.values():
        space = Paramspace(pd.DataFrame([rows[i] for i in idx]), filename_params="*", single_wildcard="params")
        for i, pstr in zip(idx, space.instance_patterns):
            out[i] = pstr
    return out


def _grid(spec: dict) -> list[dict]:
    """Cartesian product of a {param: value-or-list} mapping, in key order."""
    keys = sorted(spec)
    values = [v if isinstance(v, list) else [v] for v in (spec[k] for k in keys)]
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def expand_runs(config: dict) -> list[Run]:
    runs = []
    for exp_name, exp in config.get("experiments", {}).items():
        for ds in exp["datasets"]:
            if ds not in config.get("datasets", {}):
                raise ConfigError(f"config key 'experiments.{exp_name}.datasets': unknown dataset {ds!r}; "
                                  f"allowed: {sorted(config.get('datasets', {}))}")
            for mech_name, grid in exp["mechanisms"].items():
                where = f"experiments.{exp_name}.mechanisms.{mech_name}"
                try:
                    mech = mechanisms.get(mech_name)
                except ValueError as exc:
                    raise ConfigError(f"config key '{where}': {exc}") from None
                grid = dict(grid or {})
                n_values = grid.pop("n", "all")
                rows = []
                for combo in _grid(grid):
                    try:
                        params = explicit_params(mech.params, mech.validate(combo, where))
                    except ValueError as exc:
                        raise ConfigError(f"config key {exc}") from None
                    for n in (n_values if isinstance(n_values, list) else [n_values]):
                        if not (n == "all" or (isinstance(n, int) and n > 0)):
                            raise ConfigError(f"config key '{where}.n': {n!r} is not allowed; "
                                              "allowed: a positive integer or 'all'")
                        rows.append({"n": n, **params})
                    check_run_params(params, where)
                for row, pstr in zip(rows, _patterns(rows)):
                    for rep in range(int(exp.get("reps", 1))):
                        runs.append(Run(exp_name, ds, mech_name, row, pstr, rep))
    seen = {}
    for run in runs:
        if run.key in seen and seen[run.key].params != run.params:
            raise ConfigError(f"runs {run.path} of experiments {seen[run.key].experiment!r} and "
                              f"{run.experiment!r} have the same path but different parameters")
        seen.setdefault(run.key, run)
    return list(seen.values())


def check_dataset_paths(config: dict, base: Path) -> None:
    for name, spec in config.get("datasets", {}).items():
        if spec["source"] == "points":
            path = base / spec["path"]
            problem = ("does not exist" if not path.exists() else "is a directory" if path.is_dir()
                       else None)
            if problem:
                raise ConfigError(f"config key 'datasets.{name}.path': {str(path)!r} {problem}; "
                                  "allowed: a path (absolute or relative to the working directory) to a "
                                  "CSV, CSV.gz or Parquet file of points")


def check_startup(config: dict, schema_path: str | Path, workdir: Path | None) -> list[Run]:
    """The main DAG's checks before any job, in order; the runs they admit.

    ``workdir``: where the data paths are resolved and checksummed; None checks the
    config's content only (``python -m locpriv.check_config``: the files are checked where
    the workflow runs).
    """
    check_schema(config, schema_path)
    check_values(config)
    if workdir is not None:
        from .datasets import registry

        unusable = registry.check_real_files(config, workdir)  # missing, or other bytes than the registry's
        if unusable:
            raise ConfigError("config key '{}': {}".format(*unusable[0]))
        check_dataset_paths(config, workdir)
    return expand_runs(config)
