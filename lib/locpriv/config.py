"""Config validation and experiment expansion for the Snakefile.

Validation runs at parse time, before any job: the JSON schema first (shape,
types, ranges), then what a schema cannot know (mechanism names come from the
plugin registry, each mechanism's parameters are checked by the mechanism,
dataset files must exist).  Each failure is one message naming the config key
and what is allowed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pandas as pd
import yaml
from snakemake.utils import Paramspace

from . import mechanisms


class ConfigError(ValueError):
    pass


class StudySection:
    """Checks shared by the ``studies.<name>`` sections; every error names the full key."""

    def __init__(self, study: str):
        self.study = study

    def error(self, key: str, problem: str, allowed: str) -> ConfigError:
        return ConfigError(f"config key 'studies.{self.study}.{key}': {problem}; allowed: {allowed}")

    def merge(self, given: dict | None, defaults: dict, prefix: str = "") -> dict:
        """Defaults overridden by ``given``; an unknown key is an error."""
        given = given or {}
        unknown = sorted(set(given) - set(defaults))
        if unknown:
            raise self.error(f"{prefix}{unknown[0]}", "unknown key", str(sorted(defaults)))
        return {**defaults, **given}

    def positive_list(self, value, key: str, integer: bool = False) -> list:
        """A positive number (integer) or a non-empty list of them, as a list."""
        values = value if isinstance(value, list) else [value]
        kind = int if integer else (int, float)
        if not values or not all(isinstance(v, kind) and not isinstance(v, bool) and v > 0 for v in values):
            raise self.error(key, f"{value!r} is not allowed",
                             f"a positive {'integer' if integer else 'number'} or a non-empty list of them")
        return [int(v) if integer else float(v) for v in values]

    def bounded(self, value, key: str, kind, low: float, high: float = float("inf"), open_low: bool = True):
        """A number (``kind`` int or (int, float)) in (low, high] or [low, high]."""
        ok = (isinstance(value, kind) and not isinstance(value, bool)
              and (value > low if open_low else value >= low) and value <= high)
        if not ok:
            raise self.error(key, f"{value!r}", f"{'an integer' if kind is int else 'a number'} in "
                             f"{'(' if open_low else '['}{low}, {high}]")
        return value


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def check_schema(config: dict, schema_path: str | Path) -> None:
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.path), list(map(str, e.path))))
    if errors:
        err = errors[0]
        hint = err.schema.get("description", "") if isinstance(err.schema, dict) else ""
        raise ConfigError(f"config key '{_key(err.absolute_path)}': {err.message}"
                          + (f" ({hint})" if hint else ""))


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
        return f"results/runs/{self.dataset}/{self.mechanism}/{self.pstr}/rep~{self.rep}"


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
                        params = mech.validate(combo, where)
                    except ValueError as exc:
                        raise ConfigError(f"config key {exc}") from None
                    for n in (n_values if isinstance(n_values, list) else [n_values]):
                        if not (n == "all" or (isinstance(n, int) and n > 0)):
                            raise ConfigError(f"config key '{where}.n': {n!r} is not allowed; "
                                              "allowed: a positive integer or 'all'")
                        rows.append({"n": n, **params})
                space = Paramspace(pd.DataFrame(rows), filename_params="*",
                                   single_wildcard="params")
                for row, pstr in zip(rows, space.instance_patterns):
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
            if not path.exists():
                raise ConfigError(f"config key 'datasets.{name}.path': file {str(path)!r} does not exist; "
                                  "allowed: a path (absolute or relative to the working directory) to a "
                                  "CSV, CSV.gz or Parquet file of points")


def module_fingerprint(*modules: str) -> str:
    """Hash of the source of the named ``locpriv`` modules.

    Snakemake does not see edits inside imported code; passing this as a
    rule param makes such an edit re-run exactly the rules that use it.
    """
    digest = hashlib.sha256()
    for name in sorted(set(modules)):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ConfigError(f"code fingerprint: module {name!r} not found")
        digest.update(name.encode())
        digest.update(Path(spec.origin).read_bytes())
    return digest.hexdigest()[:16]
