"""The config schema is the one declaration of every key, and the docs generated from it are in sync.

``workflow/schemas/config.source.yaml`` (hand-written) + the registered mechanism classes' ``Param``
declarations and studies' sections, joined when a config is validated (``locpriv.config.published_schema``)
-> ``docs/configuration.md`` (``python -m locpriv.schema --write``).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import yaml

from locpriv import check_config, mechanisms, schema
from locpriv import config as lpconfig
from locpriv import study as lpstudy
from locpriv.dp import Guarantee
from locpriv.mechanisms.base import REGISTRY, Mechanism
from locpriv.params import USERS, Param

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = lpconfig.published_schema()


def test_published_schema_and_docs_are_what_the_generator_writes():
    for path, text in schema.generated().items():
        assert path.exists() and path.read_text() == text, (
            f"{path.relative_to(ROOT)} is out of date: run `python -m locpriv.schema --write`"
        )


def test_the_sync_check_fails_on_a_stale_file(tmp_path, monkeypatch, capsys):
    """Power check for the test above: a changed file is reported, with the command to run."""
    assert schema.main([]) == 0
    stale = tmp_path / "configuration.md"
    stale.write_text(schema.generated()[schema.DOCS] + "edited by hand\n")
    monkeypatch.setattr(schema, "DOCS", stale)
    assert schema.main([]) == 1
    assert "python -m locpriv.schema --write" in capsys.readouterr().err


def test_published_schema_is_a_valid_draft_2020_12_schema():
    lpconfig.validator_class().check_schema(PUBLISHED)


def _properties(node: dict, key: str):
    """(dotted key, resolved node, required?) of every declared key below ``node``."""
    node = lpconfig.resolve(node, PUBLISHED)
    branches = [lpconfig.resolve(b["then"], PUBLISHED) for b in node.get("allOf", []) if "then" in b]
    for owner in (node, *branches):
        for name, sub in owner.get("properties", {}).items():
            sub = lpconfig.resolve(sub, PUBLISHED)
            conditional = any(name in keys for keys in owner.get("dependentRequired", {}).values())
            yield f"{key}.{name}", sub, name in owner.get("required", []) or conditional
            yield from _properties(sub, f"{key}.{name}")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _properties(node["additionalProperties"], f"{key}.<name>")


ALL_KEYS = list(_properties(PUBLISHED, "config"))
# optional keys whose absence means something no default value can say (each one's description says what)
NO_DEFAULT = {
    "config.adversary.users",
    "config.datasets.<name>.lonlat_bbox",
    "config.datasets.<name>.bbox",
    "config.datasets.<name>.user_column",
    "config.datasets.<name>.max_points_per_person",
    "config.datasets.<name>.time_column",
    "config.datasets.<name>.releases.start",
    "config.datasets.<name>.releases.count",
    "config.studies.radiomap.runs.radio_fedavg",
}  # left out of a given `runs`: not run


def test_every_key_has_a_description_and_every_optional_value_a_default():
    assert len(ALL_KEYS) > 250  # the walk reaches the studies and the mechanisms
    undocumented = [key for key, node, _ in ALL_KEYS if not node.get("description")]
    assert undocumented == []
    no_default = [
        key
        for key, node, required in ALL_KEYS
        if not required
        and "default" not in node
        and "properties" not in node
        and not isinstance(node.get("additionalProperties"), dict)
        and key not in NO_DEFAULT
        and node.get("const") is None
    ]
    assert no_default == []


def test_every_mechanism_parameter_is_generated_from_its_class():
    generated = PUBLISHED["$defs"]["mechanisms"]["properties"]
    assert sorted(generated) == mechanisms.names()
    for name in mechanisms.names():
        params = {"n": USERS, **mechanisms.get(name).params}
        assert generated[name]["properties"] == {k: p.to_schema() for k, p in params.items()}, name


@pytest.fixture
def define():
    """A mechanism class defined by the test (its epsilon the parameter, if it declares one), unregistered after."""
    names = []

    def make(name: str, doc: str, param: Param):
        names.append(name)

        def claim(self):
            epsilon = self.settings.get("epsilon")
            return Guarantee(
                model="epsilon-LDP" if epsilon else "none",
                epsilon=epsilon,
                delta=epsilon and 0.0,
                relation="any two inputs (local)",
                covers="the location",
            )

        return type(
            name.title(),
            (Mechanism,),
            {"__doc__": doc, "name": name, "trust_model": "local", "params": {param.name: param}, "claim": claim},
        )

    yield make
    for name in names:
        REGISTRY.pop(name, None)


def test_a_new_mechanism_class_is_in_the_schema_with_nothing_regenerated(define):
    """Defining the class is all: the next validation knows its name and its parameters."""
    probe = define("_probe", "A probe mechanism (this test's).", Param("k", "int", "a probe parameter", low=0))
    assert mechanisms.get("_probe") is probe
    node = lpconfig.published_schema()["$defs"]["mechanisms"]["properties"]["_probe"]
    assert node["description"] == "_probe: A probe mechanism (this test's)." and node["required"] == ["k"]
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["experiments"]["density"]["mechanisms"] = {"_probe": {"n": 100, "k": 3}}
    lpconfig.check_schema(config)
    config["experiments"]["density"]["mechanisms"]["_probe"]["k"] = 0
    with pytest.raises(lpconfig.ConfigError, match=r"mechanisms\._probe\.k"):
        lpconfig.check_schema(config)


def test_a_mechanism_stating_epsilon_without_an_audit_case_is_refused_at_config_time(define):
    no_audit = define("_noaudit", "Claims an epsilon, audits nothing.", Param("epsilon", "float", "budget", low=0.0))
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["experiments"]["density"]["mechanisms"] = {"_noaudit": {"n": 100, "epsilon": 1.0}}
    with pytest.raises(
        lpconfig.ConfigError,
        match=r"^config key 'experiments\.density\.mechanisms\._noaudit': "
        r"mechanism '_noaudit' states an epsilon but has no audit case",
    ):
        lpconfig.expand_runs(config)
    with pytest.raises(NotImplementedError, match="audit_case"):
        no_audit(epsilon=1.0).audit_pairs(None)


def _candidates(param) -> list:
    values = ["nope", True, [], [1, "nope"], *param.choices, *param.special]
    for bound in (param.low, param.high):
        if bound is not None:
            values += [bound, bound - 1, bound + 1, bound + 0.5, math.inf]
    return [*values, 0, 1, 2.5, -3]


@pytest.mark.parametrize("name", mechanisms.names())
def test_schema_and_plugin_accept_the_same_parameter_values(name):
    """Param.to_schema says what Param.validate does, value by value (lists: every element)."""
    for key, param in {"n": USERS, **mechanisms.get(name).params}.items():
        node = PUBLISHED["$defs"]["mechanisms"]["properties"][name]["properties"][key]
        for value in _candidates(param):
            by_schema = lpconfig.validator_class()(node).is_valid(value)
            items = value if isinstance(value, list) else [value]
            by_plugin = bool(items)
            for item in items:
                try:
                    param.validate(item, name)
                except ValueError:
                    by_plugin = False
            if param.kind == "int" and any(isinstance(v, float) for v in items):
                by_plugin = False  # the schema wants an integer written as one
            assert by_schema == by_plugin, (name, key, value)


def _enum(*path: str) -> list:
    node = PUBLISHED
    for part in path:
        node = lpconfig.resolve(node, PUBLISHED)[part]
    node = lpconfig.resolve(node, PUBLISHED)
    return node["enum"] if "enum" in node else node["items"]["enum"]


def test_schema_choices_are_the_codes_registries():
    from locpriv.deconv import data
    from locpriv.deconv.kernels import KERNELS
    from locpriv.heatmaps.adaptive import OPTIONS
    from locpriv.heatmaps.aggregation import AGGREGATIONS
    from locpriv.heatmaps.study import METHODS
    from locpriv.radiomap import noise as radiomap_noise
    from locpriv.radiomap.noise import SCHEMES, THETA_MODES
    from locpriv.secagg.graph import GRAPHS
    from locpriv.sldp import classify
    from locpriv.sldp.protocol import CALIBRATIONS, LEAVES, SPLIT_RULES

    d = "$defs"
    pairs = [
        (_enum(d, "deconv", "properties", "kernel"), KERNELS),
        (_enum(d, "deconv_density", "properties", "kernel"), KERNELS),
        (_enum(d, "deconv_synthetic", "properties", "x"), data.SYNTHETIC_X),
        (_enum(d, "deconv_synthetic", "properties", "curve"), data.CURVES),
        (_enum(d, "sldp", "properties", "calibration"), CALIBRATIONS),
        (_enum(d, "sldp", "properties", "leaves"), LEAVES),
        (_enum(d, "sldp", "properties", "split_rule"), SPLIT_RULES),
        (_enum(d, "sldp", "properties", "classify", "properties", "mechanisms"), classify.MECHANISMS),
        (_enum(d, "heatmaps", "properties", "methods"), METHODS),
        (_enum(d, "heatmaps", "properties", "aggregation"), AGGREGATIONS),
        (_enum(d, "heatmaps", "properties", "secagg", "properties", "graph"), GRAPHS),
        *[
            (_enum(d, "heatmaps", "properties", "adaptive", "properties", k), v)
            for k, v in OPTIONS.items()
            if k in PUBLISHED[d]["heatmaps"]["properties"]["adaptive"]["properties"]
        ],
        (_enum(d, "radiomap", "properties", "training", "properties", "theta"), THETA_MODES),
        (_enum(d, "radiomap", "properties", "training", "properties", "calibration"), radiomap_noise.CALIBRATIONS),
        (sorted(PUBLISHED[d]["radiomap"]["properties"]["runs"]["properties"]), sorted(SCHEMES)),
    ]
    assert [(sorted(a), sorted(b)) for a, b in pairs if sorted(a) != sorted(b)] == []


def test_schema_defaults_are_the_ones_the_code_uses_elsewhere():
    """Defaults that code outside the validators also reads (the main DAG's stages, the mechanisms) agree."""
    from locpriv import frontier
    from locpriv.adversary import bayes, local_maxima
    from locpriv.audit import stage as audit
    from locpriv.datasets import ingest
    from locpriv.heatmaps.adaptive import AdaptiveParams
    from locpriv.sldp import ldp_kdtree
    from locpriv.sldp.protocol import DEFAULT_THRESHOLD, MEAN_THRESHOLD
    from locpriv.stages import utility

    main = lpconfig.fill_defaults({}, PUBLISHED, PUBLISHED)
    sldp, heat = lpconfig.schema_defaults("sldp"), lpconfig.schema_defaults("heatmaps")
    adaptive = AdaptiveParams()
    assert {k: v for k, v in main["adversary"].items() if k in bayes.DEFAULTS} == bayes.DEFAULTS
    assert main["utility"] == utility.DEFAULTS
    assert main["frontier"] == frontier.DEFAULTS
    assert main["audit"]["draws"] == audit.DEFAULT_DRAWS
    assert main["attack"]["batch"] == local_maxima.DEFAULT_BATCH == lpconfig.main_default("attack", "batch")
    assert lpconfig.schema_defaults("points_dataset")["max_dropped_fraction"] == ingest.DEFAULT_MAX_DROPPED_FRACTION
    assert lpconfig.DEFAULT_KNN_K == lpconfig.schema_defaults("synthetic_dataset")["knn_k"]
    assert (sldp["mean"]["threshold"], sldp["range"]["threshold"], sldp["classify"]) == (
        MEAN_THRESHOLD,
        DEFAULT_THRESHOLD,
        None,
    )
    assert sldp["range"]["kdtree_height"] == ldp_kdtree.DEFAULT_HEIGHT
    assert heat["adaptive"] == {k: getattr(adaptive, k) for k in heat["adaptive"]}
    assert (heat["base"]["calibration"], heat["secagg"]) == (
        adaptive.calibration,
        {k: getattr(adaptive.secagg.protocol, k) for k in heat["secagg"]},
    )
    assert dataclasses.is_dataclass(adaptive)


def test_fill_defaults_replaces_free_mappings_and_fills_given_optional_sections():
    from locpriv.heatmaps import study as heatmaps
    from locpriv.radiomap import config as radiomap

    runs = radiomap.validate_config({"runs": {"radio_uniform": {"mu": 2}}})["runs"]
    assert runs == {"radio_uniform": {"mu": [2.0]}}  # given whole: not merged with the default schemes
    assert heatmaps.validate_config({})["multi_location"] is None
    multi = heatmaps.validate_config({"multi_location": {"path": "p.csv", "lonlat_bbox": [0, 1, 0, 1]}})
    assert multi["multi_location"]["depth"] == 6  # a given null-able section is filled key by key
    given = {"environment": {"size": 60}}
    radiomap.validate_config({**given, "environment": {"size": 60.0, "cell": 3.0}})
    assert given == {"environment": {"size": 60}}  # the caller's mapping is not changed


def test_docs_have_a_row_for_every_key_and_mechanism_parameter():
    docs = (ROOT / "docs/configuration.md").read_text()
    keys = {line.split("`")[1] for line in docs.splitlines() if line.startswith("| `")}
    assert {
        "studies.radiomap.attack.epochs",
        "studies.deconv.datasets.<name>.bounds",
        "grid.P",
        "experiments.<name>.mechanisms.rff.max_features",
        "experiments.<name>.mechanisms.zero.n",
    } <= keys
    expected = {key.removeprefix("config.") for key, _, _ in ALL_KEYS}
    sections = {"studies", *(f"studies.{name}" for name in PUBLISHED["properties"]["studies"]["properties"])}
    assert expected - keys == sections  # a study section is a heading, not a row
    assert sorted(PUBLISHED["properties"]["studies"]["properties"]) == lpstudy.names() == lpstudy.builtin_names()


def test_check_config_runs_the_studies_cross_field_checks(tmp_path):
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    cfg["studies"]["radiomap"]["attack"]["epochs"] = [1, 999]  # after the last training epoch
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(lpconfig.ConfigError, match=r"^config key 'studies\.radiomap\.attack\.epochs': 999 "):
        check_config.check_files([str(path)])
    check_config.check_files([str(ROOT / "config.yaml")])
