"""Config validation and experiment expansion for the Snakefile.

One declaration: the JSON schema (``workflow/schemas/config.source.yaml``, completed when a config
is validated with each registered mechanism's parameters and each registered study's section:
:func:`published_schema`) states every key's type, bounds, default and description; the main DAG
and every study are validated against it with one validator and one error style, and the
studies' defaults are filled from it.  Python checks only what a schema cannot know: keys
bounded by other keys, the mechanisms' own checks, memory, files.  Each failure is one message
naming the config key and what is allowed.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from . import mechanisms, plugins, sanity, study
from .errors import ConfigError  # raised by every check here (and by sanity, which imports errors, not config)
from .params import USERS, explicit_params

SOURCE_PATH = Path(__file__).resolve().parents[2] / "workflow/schemas/config.source.yaml"


def _finite_number(checker, instance) -> bool:
    return isinstance(instance, (int, float)) and not isinstance(instance, bool) and math.isfinite(instance)


def _strict_integer(checker, instance) -> bool:
    # JSON Schema's integer admits 2.0; a count written 2.0 is a typo worth a message (range(2.0)
    # would fail later, in a job)
    return isinstance(instance, int) and not isinstance(instance, bool)


@functools.cache
def validator_class():
    """The one validator of every config section: numbers are finite, integers are written as integers.

    Built on first use: every job's script imports this module (for the config's dataclasses) but only
    the workflow's start validates, and importing jsonschema costs each of the ~300 jobs ~0.2 s CPU.
    """
    import jsonschema

    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
            {"number": _finite_number, "integer": _strict_integer}
        ),
    )


@functools.cache
def source_schema() -> dict:
    """The hand-written schema (``config.source.yaml``): every key but the registries' parts."""
    return yaml.load(SOURCE_PATH.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def published_schema() -> dict:
    """The config schema the workflow validates against, built now from the source and the registries.

    ``$defs.mechanisms``: every registered mechanism's parameter grid (``Mechanism.grid_schema``);
    ``studies.properties``: every study's section (a built-in study's is ``$defs.<name>`` of the
    source, a plugin study's its own ``Study.schema``).  A plugin imported before this call
    (``locpriv.plugins``) is in it: adding a mechanism or a study regenerates nothing.
    """
    root = copy.deepcopy(source_schema())
    if "mechanisms" in root["$defs"] or root["properties"]["studies"].get("properties"):
        raise ValueError(
            f"{SOURCE_PATH}: $defs.mechanisms and studies.properties are built from the registries; "
            "remove them from the source"
        )
    root["$defs"]["mechanisms"] = {
        "type": "object",
        "minProperties": 1,
        "additionalProperties": False,
        "description": "mechanism name -> parameter grid: a value or a list per parameter, every "
        "combination is a setting; the parameters are declared by each mechanism's class",
        "properties": {name: mechanisms.get(name).grid_schema() for name in mechanisms.names()},
    }
    sections = {name: study.section_schema(name) for name in study.names()}
    undeclared = [name for name, node in sections.items() if "$ref" in node and name not in root["$defs"]]
    if undeclared:
        raise ConfigError(
            f"config key 'studies.{undeclared[0]}': the study declares no schema of its section; "
            "allowed: a Study(schema=...) (a JSON schema) in its plugin module"
        )
    root["properties"]["studies"]["properties"] = sections
    return root


def resolve(node: dict, root: dict) -> dict:
    """``node`` with its local ``$ref`` replaced by the target, the node's own keys winning."""
    while "$ref" in node:
        target = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


_MISSING = object()


def fill_defaults(given, node: dict, root: dict):
    """``given`` with the schema's defaults filled in below ``node``.

    An absent key takes its ``default``; a given value replaces a default whole (so a mapping with
    a default, e.g. a study's noise schemes, is the user's alone).  A section with fixed keys and no
    default of its own is filled key by key, and so is a null-able section (``default: null``)
    when it is given.  Keys without a default stay absent.
    """
    node = resolve(node, root)
    if given is _MISSING:
        if "default" in node:
            return copy.deepcopy(node["default"])
        given = {} if "properties" in node else _MISSING
    if not (isinstance(given, dict) and "properties" in node) or node.get("default") is not None:
        return given
    out = {}  # in the schema's key order, whatever the order given (same config, same bytes)
    for key, sub in node["properties"].items():
        value = fill_defaults(given.get(key, _MISSING), sub, root)
        if value is not _MISSING:
            out[key] = value
    return {**out, **{k: v for k, v in given.items() if k not in out}}


def schema_defaults(name: str) -> dict:
    """The defaults of the schema's section ``$defs/<name>`` (e.g. a study), as one mapping."""
    root = source_schema()
    return fill_defaults(_MISSING, root["$defs"][name], root)


def first_error(validator, instance, prefix: tuple = ()) -> ConfigError | None:
    """The one-line error of the shallowest schema violation in ``instance`` (None if valid)."""
    errors = sorted(validator.iter_errors(instance), key=lambda e: (len(e.path), list(map(str, e.path))))
    return _schema_error(errors[0], prefix) if errors else None


class StudySection:
    """A ``studies.<name>`` section: the schema's ``$defs/<name>`` validates it and gives its defaults.

    Every error is one line, ``config key 'studies.<study>.<key>': <problem>; allowed: <allowed>``,
    as the main DAG's.  ``reps`` means the same in every study: one positive integer.  What a
    schema cannot say (one key bounded by another, files) the study checks itself and reports
    through :meth:`error`.
    """

    def __init__(self, study: str):
        self.study = study

    def error(self, key: str, problem: str, allowed: str) -> ConfigError:
        return ConfigError(f"config key 'studies.{self.study}.{key}': {problem}; allowed: {allowed}")

    def validate(self, section: dict | None) -> dict:
        """The section checked against its schema, with every default filled in."""
        section = {} if section is None else copy.deepcopy(section)  # the caller's config stays as given
        root = source_schema()
        node = root["$defs"][self.study]
        error = first_error(validator_class()({**node, "$defs": root["$defs"]}), section, ("studies", self.study))
        if error:
            raise error
        return fill_defaults(section, node, root)

    def defaults(self) -> dict:
        return schema_defaults(self.study)


def listed(value, cast) -> list:
    """A value-or-list entry as a list of ``cast`` values (run paths print them: 5 and 5.0 differ)."""
    return [cast(v) for v in (value if isinstance(value, list) else [value])]


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def check_schema(config: dict) -> None:
    """``config`` against :func:`published_schema` (the plugins it names must be loaded first)."""
    error = first_error(validator_class()(published_schema()), config)
    if error:
        raise error


def _schema_error(err, prefix: tuple = ()) -> ConfigError:
    """The one-line style: ``config key '<key>': <problem>; allowed: <allowed>``."""
    schema = err.schema if isinstance(err.schema, dict) else {}
    path = [*prefix, *err.absolute_path]
    # a list item's error names the list's key and the item's position
    item = next((i for i, part in enumerate(path) if isinstance(part, int)), None)
    where = "" if item is None else f"item {path[item]}: "
    path = path if item is None else path[:item]
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = sorted(schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(known), key=str)
        # a mechanism's or a study's name is a key of ``mechanisms`` / ``studies``: say which registry refused it
        registry = {"mechanisms": "mechanism", "studies": "study"}.get(path[-1] if path else None)
        what = f"unknown {registry} {extra[0]!r}" if registry else "unknown key"
        return ConfigError(f"config key '{_key(path + extra[:1])}': {what}; allowed: {known}")
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = next(k for k in err.validator_value if k not in err.instance)
        message = f"missing required key {missing!r}"
    elif err.validator == "dependentRequired" and isinstance(err.instance, dict):
        needs, keys = next(
            (k, v)
            for k, v in err.validator_value.items()
            if k in err.instance and any(m not in err.instance for m in v)
        )
        missing = next(k for k in keys if k not in err.instance)
        return ConfigError(
            f"config key '{_key([*path, missing])}': missing, and required with '{needs}'; "
            f"allowed: {schema['properties'][missing].get('description', 'see docs/configuration.md')}"
        )
    elif err.validator == "anyOf":  # jsonschema's "not valid under any of the given schemas" says less
        message = f"{err.instance!r} is not allowed"
    else:
        message = err.message
    message = where + (message if len(message) <= 200 else message[:200] + "...")
    text, hint = allowed(schema), schema.get("description", "")
    return ConfigError(
        f"config key '{_key(path)}': {message}; allowed: "
        + (f"{text} ({hint})" if text and hint else (text or hint or "see docs/configuration.md"))
    )


def allowed(schema: dict) -> str:
    """What a schema node accepts, in words (type, bounds, choices); the errors and the docs say it."""
    parts = []
    if "const" in schema:
        parts.append(repr(schema["const"]))
    if "enum" in schema:
        parts.append(str(schema["enum"]))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        parts.append(" or ".join(types))
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in schema:
            parts.append(f"{sign} {schema[key]}")
    if "multipleOf" in schema:
        parts.append(f"a multiple of {schema['multipleOf']}")
    if "maxItems" in schema and schema["maxItems"] == schema.get("minItems"):
        parts.append(f"of {schema['maxItems']} items")
    elif "maxItems" in schema:
        parts.append(f"of {schema.get('minItems', 0)} to {schema['maxItems']} items")
    elif "minItems" in schema:
        parts.append(f"of at least {schema['minItems']} items")
    if isinstance(schema.get("items"), dict) and allowed(schema["items"]):
        parts.append(f"each {allowed(schema['items'])}")
    if "required" in schema:
        parts.append(f"with keys {schema['required']}")
    if "propertyNames" in schema and "enum" in schema["propertyNames"]:
        parts.append(f"keys among {schema['propertyNames']['enum']}")
    one, many = ([*schema.get("anyOf", []), None, None])[:2]
    if isinstance(many, dict) and many.get("type") == "array" and many.get("items") == one:
        parts.append(
            f"{allowed(one)}, or a non-empty list of them"
            if many.get("minItems")
            else f"{allowed(one)}, or a list of them"
        )
    elif "anyOf" in schema:
        alternatives = [allowed(alt) for alt in schema["anyOf"]]
        parts.append(" or ".join(f"({a})" if " " in a else a for a in alternatives if a))
    return " ".join(p for p in parts if p)


def main_default(*key: str):
    """The schema's default of a main-DAG key, e.g. ``main_default("attack", "batch")``."""
    root = node = source_schema()
    for part in key:
        node = resolve(node, root)["properties"][part]
    return fill_defaults(_MISSING, node, root)


def __getattr__(name):
    # DEFAULT_KNN_K (read by the ingest rules) from the schema on first use (PEP 562): importing
    # this module reads no file
    if name == "DEFAULT_KNN_K":
        return schema_defaults("points_dataset")["knn_k"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# working copies per reconstructed surface in the attack (surface, neighbour comparisons, mask)
_ATTACK_ARRAYS = 3
# Cells longer than this times their width are refused: every surface is a KDE with one bandwidth in
# both directions, so such a grid either undersamples the kernel along the cells' long side (a bandwidth
# below a cell: sanity.min_bandwidth_cells) or spends that factor more cells than needed along the short
# one (issue 40: 2 x 200,000 cells on a square box, 100,000 times longer than wide, ran past 5 minutes)
MAX_CELL_ASPECT = 10.0


def check_values(config: dict) -> None:
    """What the schema cannot check: box order, one box per dataset, memory estimate, results_dir.

    The main DAG's checks only where it runs (``experiments``): a studies-only config has no grid.
    """
    check_results_dir(config.get("results_dir", "results"))
    for name, spec in config.get("datasets", {}).items():
        if spec["source"] == "points" and ("lonlat_bbox" in spec) == ("bbox" in spec):
            raise ConfigError(
                f"config key 'datasets.{name}': give exactly one of 'lonlat_bbox' (lon/lat data) or 'bbox' (x/y data)"
            )
        for key in ("max_points_per_person", "person_budget"):
            if key in spec and "user_column" not in spec:
                raise ConfigError(
                    f"config key 'datasets.{name}.{key}': needs 'user_column' (the column naming each row's person)"
                )
        if spec.get("person_budget") == "split" and "max_points_per_person" in spec:
            raise ConfigError(
                f"config key 'datasets.{name}.max_points_per_person': person_budget 'split' keeps "
                "one row per person; drop the cap, or use person_budget 'group' to keep it"
            )
        if spec.get("person_budget") == "split_epsilon" and "max_points_per_person" not in spec:
            raise ConfigError(
                f"config key 'datasets.{name}.person_budget': split_epsilon divides epsilon by the cap on a "
                "person's rows; set max_points_per_person, or use person_budget 'split' (one row per person)"
            )
        for key in ("bbox", "lonlat_bbox"):
            if key in spec:
                check_box(spec[key], f"datasets.{name}.{key}", lonlat=key == "lonlat_bbox")
    if "experiments" in config:
        check_grid_shape(config)
        check_memory(config)


def check_grid_shape(config: dict) -> None:
    """Refuse a grid whose cells, on a dataset's box, are more than :data:`MAX_CELL_ASPECT` times longer
    than wide; the fix keeps the number of cells and makes them square on that box."""
    from .datasets.ingest import domain_of

    P, Q = config["grid"]["P"], config["grid"]["Q"]
    used = {d for exp in config["experiments"].values() for d in exp.get("datasets", [])}
    for name in sorted(used & set(config.get("datasets", {}))):
        domain, units = domain_of(config["datasets"][name])
        width, height = domain.xmax - domain.xmin, domain.ymax - domain.ymin
        cell_x, cell_y = width / P, height / Q
        aspect, unit = max(cell_x, cell_y) / min(cell_x, cell_y), "" if units == "1" else f" {units}"
        if aspect > MAX_CELL_ASPECT:
            p = max(2, round(math.sqrt(P * Q * width / height)))
            q = max(2, round(P * Q / p))
            raise ConfigError(
                f"config key 'grid': {P} x {Q} cells on dataset {name!r}'s box ({width:.4g} x {height:.4g}{unit}) "
                f"are {cell_x:.3g} x {cell_y:.3g}{unit}, {aspect:,.0f} times longer than wide; "
                f"allowed: at most {MAX_CELL_ASPECT:g} (the kernels are round), e.g. grid: {{P: {p}, Q: {q}}} "
                "(as many cells, square)"
            )


def check_results_dir(path: str) -> None:
    """A relative folder inside the working directory: Snakemake's paths and its cleanup stay in it."""
    parts = Path(path).parts
    if Path(path).is_absolute() or ".." in parts or not parts or parts == (".",):
        raise ConfigError(
            f"config key 'results_dir': {path!r} is not allowed; allowed: a relative folder "
            "inside the working directory without '..' (e.g. results or results/paper)"
        )


def check_box(box, key: str, lonlat: bool = False) -> None:
    x0, x1, y0, y1 = box
    names = ("lon", "lat") if lonlat else ("x", "y")
    for lo, hi, n in ((x0, x1, names[0]), (y0, y1, names[1])):
        if not lo < hi:
            raise ConfigError(
                f"config key '{key}': inverted or empty box {box}: {n}_min {lo} is not below "
                f"{n}_max {hi}; allowed: [{names[0]}_min, {names[0]}_max, {names[1]}_min, "
                f"{names[1]}_max] with min < max"
            )
    if lonlat and not (-180 <= x0 and x1 <= 180 and -90 <= y0 and y1 <= 90):
        raise ConfigError(
            f"config key '{key}': {box} is not a lon/lat box; allowed: lon in [-180, 180], "
            "lat in [-90, 90] (degrees), in the order [lon_min, lon_max, lat_min, lat_max]"
        )


def memory_estimate_mb(config: dict) -> dict[str, float]:
    """Estimated peak memory (MB) of the largest arrays a job holds, by what dominates it.

    The attack rebuilds min(attack.batch, attack.users) user surfaces on the P x Q grid at once;
    an rff shard holds users_per_shard x max_features frequencies and phases.
    """
    cells = config["grid"]["P"] * config["grid"]["Q"]
    attack = config["attack"]
    surfaces = min(int(attack.get("batch", main_default("attack", "batch"))), int(attack["users"]))
    estimate = {"attack batch x grid": surfaces * cells * 8 * _ATTACK_ARRAYS / 1e6}
    features = max(
        [
            int(v)
            for exp in config.get("experiments", {}).values()
            for mech, grid in exp["mechanisms"].items()
            if mech == "rff"
            for key in ("B", "max_features")
            for v in _as_list((grid or {}).get(key, 0))
            if isinstance(v, (int, float))
        ]
        or [0]
    )
    if features:
        estimate["users_per_shard x rff features"] = config["users_per_shard"] * features * 3 * 8 * 2 / 1e6
    return estimate


# CPU seconds of the attack per attacked user and grid cell: an attack job's wall time at 40,000 cells
# less that at 480 cells, 8 jobs of 30 users (tests' TINY config) on the 2-core machine shared with other
# work, 5.3 s per 1.2e6 user-cells: an upper estimate (the default run, 76 runs x 200 users x 10^4 cells,
# takes 4 min on 2 idle cores in all, docs/benchmarks.md)
ATTACK_SECONDS_PER_USER_CELL = 4.4e-6
# grids above this many cells (10 x the default run's 100 x 100) start with a warning giving the estimate
WARN_CELLS = 100_000


def size_warnings(config: dict, runs) -> list[str]:
    """A warning with the grid's cells, the largest job's memory and the attacks' CPU time when the grid has
    more than :data:`WARN_CELLS` cells (each run's attack rebuilds attack.users posteriors over every cell:
    the part of a run that grows with the grid; issue 40: 2 x 200,000 cells ran past 5 minutes without a
    word).  Memory above memory_limit_mb is refused before this (:func:`check_memory`)."""
    runs = list(runs)
    if not runs:  # a studies-only config has no grid
        return []
    cells = config["grid"]["P"] * config["grid"]["Q"]
    if cells <= WARN_CELLS:
        return []
    seconds = len(runs) * int(config["attack"]["users"]) * cells * ATTACK_SECONDS_PER_USER_CELL
    memory = max(memory_estimate_mb(config).values())
    limit = config.get("memory_limit_mb", main_default("memory_limit_mb"))
    return [
        f"warning: grid {config['grid']['P']} x {config['grid']['Q']} = {cells:,} cells (more than {WARN_CELLS:,}): "
        f"the largest job needs about {memory:,.0f} MB (memory_limit_mb {limit}) and the attacks up to about "
        f"{seconds / 60:,.0f} CPU-minutes ({len(runs)} runs x attack.users {config['attack']['users']} x "
        f"{cells:,} cells); lower grid.P and grid.Q if that is not meant"
    ]


def check_memory(config: dict) -> None:
    limit = config.get("memory_limit_mb", main_default("memory_limit_mb"))
    for what, mb in memory_estimate_mb(config).items():
        if mb > limit:
            raise ConfigError(
                f"config key 'memory_limit_mb': a job would need about {mb:,.0f} MB for "
                f"{what} (grid {config['grid']['P']}x{config['grid']['Q']}, attack.batch "
                f"{config['attack'].get('batch', main_default('attack', 'batch'))}, users_per_shard "
                f"{config['users_per_shard']}), above the limit {limit} MB; allowed: a smaller "
                "grid, attack.batch or rff B/max_features, or raise memory_limit_mb if the "
                "machine has the memory"
            )


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def check_run_params(cls, params: dict, where: str) -> None:
    """rff's B cannot exceed the users' max_features (every user would refuse); a setting that states an
    epsilon needs an audit case (``Mechanism.audit_case``, or a likelihood for the generic one): refused
    here, not deep in a job."""
    if not cls.has_audit_case() and not cls.leaks(params) and cls(**params).guarantee().epsilon is not None:
        raise ConfigError(
            f"config key '{where}': mechanism {cls.name!r} states an epsilon but has no audit case; "
            f"allowed: a mechanism class that implements audit_case(grid), or log_likelihood(view, grid) of a "
            f"per-user report for the generic whole-report audit ({cls.__module__})"
        )
    if "B" in params and "max_features" in params and params["B"] > params["max_features"]:
        raise ConfigError(
            f"config key '{where}.B': {params['B']} exceeds max_features "
            f"{params['max_features']}, so every user would refuse the query; allowed: "
            f"B <= max_features (or raise max_features)"
        )


def person_split(spec: dict, cls, where: str, dataset: str, grid: dict) -> dict:
    """``{"person_reports": cap}`` for a run on a dataset with ``person_budget: split_epsilon`` (each of a
    person's up to cap rows randomised at epsilon / cap, so the recorded epsilon is the person's), else {}.

    Only a mechanism declaring ``person_reports`` (per-user local reports, which compose) can split;
    a value set in the experiment must be the dataset's cap, the one the ingest applied."""
    if spec.get("person_budget") != "split_epsilon":
        return {}
    cap = int(spec["max_points_per_person"])
    if "person_reports" not in cls.params:
        splitting = [n for n in mechanisms.names() if "person_reports" in mechanisms.get(n).params]
        raise ConfigError(
            f"config key '{where}': dataset {dataset!r} has person_budget split_epsilon, which mechanism "
            f"{cls.name!r} cannot apply (its reports do not split per person); allowed: {splitting}, or "
            "person_budget 'split' or 'group' on the dataset"
        )
    if grid.get("person_reports", cap) != cap:
        raise ConfigError(
            f"config key '{where}.person_reports': {grid['person_reports']!r} differs from dataset "
            f"{dataset!r}'s max_points_per_person {cap} (person_budget split_epsilon); allowed: leave it out"
        )
    return {"person_reports": cap}


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
    from snakemake.utils import Paramspace  # only the workflow expands runs: the library needs no snakemake

    out, groups = [""] * len(rows), {}
    for i, row in enumerate(rows):
        groups.setdefault(tuple(row), []).append(i)
    for idx in groups.values():
        space = Paramspace(pd.DataFrame([rows[i] for i in idx]), filename_params="*", single_wildcard="params")
        for i, pstr in zip(idx, space.instance_patterns, strict=True):
            out[i] = pstr
    return out


def _grid(spec: dict) -> list[dict]:
    """Cartesian product of a {param: value-or-list} mapping, in key order."""
    keys = sorted(spec)
    values = [v if isinstance(v, list) else [v] for v in (spec[k] for k in keys)]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def expand_runs(config: dict) -> list[Run]:
    runs = []
    for exp_name, exp in config.get("experiments", {}).items():
        for ds in exp["datasets"]:
            if ds not in config.get("datasets", {}):
                raise ConfigError(
                    f"config key 'experiments.{exp_name}.datasets': unknown dataset {ds!r}; "
                    f"allowed: {sorted(config.get('datasets', {}))}"
                )
            for mech_name, grid in exp["mechanisms"].items():
                where = f"experiments.{exp_name}.mechanisms.{mech_name}"
                try:
                    cls = mechanisms.get(mech_name)
                except ValueError as exc:
                    raise ConfigError(f"config key '{where}': {exc}") from None
                grid = {**(grid or {}), **person_split(config["datasets"][ds], cls, where, ds, grid or {})}
                n_values = grid.pop("n", "all")
                rows = []
                for combo in _grid(grid):
                    try:
                        params = explicit_params(cls.params, cls.validate(combo, where))
                    except ValueError as exc:
                        raise ConfigError(f"config key {exc}") from None
                    for n in n_values if isinstance(n_values, list) else [n_values]:
                        try:
                            USERS.validate(n, where)
                        except ValueError as exc:
                            raise ConfigError(f"config key {exc}") from None
                        # a rule sizing the mechanism from the run's N (level: auto) resolves here
                        size = n if n != "all" else config["datasets"][ds].get("n_users")
                        try:
                            rows.append({"n": n, **cls.for_users(params, size)})
                        except ValueError as exc:
                            raise ConfigError(f"config key '{where}' (dataset {ds!r}, n: {n}): {exc}") from None
                    check_run_params(cls, params, where)
                for row, pstr in zip(rows, _patterns(rows), strict=True):
                    for rep in range(int(exp.get("reps", 1))):
                        runs.append(Run(exp_name, ds, mech_name, row, pstr, rep))
    seen = {}
    for run in runs:
        if run.key in seen and seen[run.key].params != run.params:
            raise ConfigError(
                f"runs {run.path} of experiments {seen[run.key].experiment!r} and "
                f"{run.experiment!r} have the same path but different parameters"
            )
        seen.setdefault(run.key, run)
    return list(seen.values())


def check_dataset_paths(config: dict, base: Path) -> None:
    for name, spec in config.get("datasets", {}).items():
        if spec["source"] == "points":
            path = base / spec["path"]
            problem = "does not exist" if not path.exists() else "is a directory" if path.is_dir() else None
            if problem:
                raise ConfigError(
                    f"config key 'datasets.{name}.path': {str(path)!r} {problem}; "
                    "allowed: a path (absolute or relative to the working directory) to a "
                    "CSV, CSV.gz or Parquet file of points"
                )


def check_startup(config: dict, workdir: Path | None) -> list[Run]:
    """The main DAG's checks before any job, in order; the runs they admit.

    First the config's ``plugins`` are activated (imported here and passed on to every job,
    ``locpriv.plugins``; a module in the working directory is importable), so the schema knows
    their mechanisms and studies.  ``workdir``: where the data paths are resolved and
    checksummed; None checks the config's content only (``python -m locpriv.check_config``: the
    files are checked where the workflow runs; plugins are then looked for in the current folder).
    """
    try:
        plugins.activate(config.get("plugins", []), workdir or Path.cwd())
    except plugins.PluginError as exc:
        raise ConfigError(str(exc)) from None
    check_schema(config)
    check_values(config)
    from .datasets import windows

    windows.expand(config)  # releases: {window: ...}: one dataset per window, before the runs are expanded
    if workdir is not None:
        from .datasets import registry

        unusable = registry.check_real_files(config, workdir)  # missing, or other bytes than the registry's
        if unusable:
            raise ConfigError("config key '{}': {}".format(*unusable[0]))
        check_dataset_paths(config, workdir)
    runs = expand_runs(config)
    from .stages import continual

    continual.split(config, runs)  # a run on a continual release's windows needs a continual mode
    sanity.check_config(config, runs)  # names that become paths, epsilons that overflow, boxes, n
    return runs
