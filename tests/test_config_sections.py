"""One config dialect: every section answers the same three bad inputs with the same one-line style.

The main DAG's sections (``experiments.*``, ``datasets.*``) and the studies' sections are all checked
by the config schema (the studies' validators run their own section's part of it, then what a schema
cannot say); every message reads ``config key '<full key>': <problem>; allowed: <allowed>`` on one
line.  The studies' defaults are the schema's.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from locpriv import config as lpconfig
from locpriv import study as lpstudy
from locpriv.deconv import study as deconv

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())
EXPERIMENT = next(iter(BASE["experiments"]))
DATASET = next(iter(BASE["datasets"]))
# each study's validator, from the registry (what check_config and the study's rules call)
VALIDATORS = {name: lpstudy.get(name).validate for name in lpstudy.names()}

# section -> (where in the config, a wrong-typed (key, value))
SECTIONS = {
    "experiments": (("experiments", EXPERIMENT), ("datasets", 3)),
    "datasets": (("datasets", DATASET), ("n_users", "many")),
    "deconv": (("studies", "deconv"), ("epsilon", "high")),
    "sldp": (("studies", "sldp"), ("delta", "small")),
    "heatmaps": (("studies", "heatmaps"), ("methods", "flat")),
    "radiomap": (("studies", "radiomap"), ("n_users", "many")),
}
BAD = {"reps list": ("reps", [3, 1]), "unknown key": ("bogus_key", 1), "wrong type": None}


def validate(config: dict) -> None:
    """What the Snakefile does at parse time: the schema, then each configured study's validator."""
    lpconfig.check_schema(config)
    for name, section in config.get("studies", {}).items():
        VALIDATORS[name](section)


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("section", SECTIONS)
def test_every_section_gives_the_same_one_line_error(section, bad):
    (top, name), wrong = SECTIONS[section]
    key, value = BAD[bad] or wrong
    config = copy.deepcopy(BASE)
    config[top][name][key] = value
    with pytest.raises(lpconfig.ConfigError) as err:
        validate(config)
    message = str(err.value)
    assert "\n" not in message
    assert re.fullmatch(
        rf"config key '{re.escape(top)}\.{re.escape(name)}\.{re.escape(key)}': .+; allowed: .+", message
    ), message


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("study", VALIDATORS)
def test_study_validators_alone_give_the_same_error(study, bad):
    """Without the schema in front (a notebook calling the study), the study says the same thing."""
    key, value = BAD[bad] or SECTIONS[study][1]
    section = copy.deepcopy(BASE["studies"][study])
    section[key] = value
    with pytest.raises(
        lpconfig.ConfigError, match=rf"^config key 'studies\.{study}\.{re.escape(key)}': [^\n]+; allowed: [^\n]+$"
    ):
        VALIDATORS[study](section)


def _has_reps(study: str) -> bool:
    return "reps" in lpconfig.schema_defaults(study)


@pytest.mark.parametrize("study", [s for s in VALIDATORS if _has_reps(s)])
def test_reps_is_one_positive_integer_in_every_study(study):
    section = copy.deepcopy(BASE["studies"][study])
    for bad in ([3, 1], [3], 0, 2.0, True):
        section["reps"] = bad
        with pytest.raises(
            lpconfig.ConfigError,
            match=rf"^config key 'studies\.{study}\.reps': .+; allowed: "
            r"integer >= 1 \(repetitions of every setting",
        ):
            VALIDATORS[study](section)
    section["reps"] = 3
    assert VALIDATORS[study](section)["reps"] == 3


def test_a_study_without_repetitions_names_reps_an_unknown_key():
    """radiomap has one scenario per setting (no reps key): `reps` gets the same one-line style."""
    studies = [s for s in VALIDATORS if not _has_reps(s)]
    assert studies == ["radiomap"]
    section = copy.deepcopy(BASE["studies"]["radiomap"])
    section["reps"] = [3, 1]
    with pytest.raises(lpconfig.ConfigError, match=r"^config key 'studies\.radiomap\.reps': unknown key; allowed: "):
        VALIDATORS["radiomap"](section)


def _leaves(value, path=()):
    """(path, value) of every non-mapping value below ``value``."""
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            yield from _leaves(sub, (*path, key))
    else:
        yield path, value


@pytest.mark.parametrize("study", ["sldp", "heatmaps", "radiomap"])
def test_an_empty_section_is_the_schemas_defaults(study):
    """The studies keep no defaults of their own: an empty section validates to the schema's defaults
    (up to int/float: the study casts numbers as its runs read them)."""
    defaults = dict(_leaves(lpconfig.schema_defaults(study)))
    validated = dict(_leaves(VALIDATORS[study]({})))
    assert sorted(validated) == sorted(defaults)
    assert [path for path, default in defaults.items() if validated[path] != default] == []


def test_deconv_dataset_defaults_are_the_schemas():
    cfg = deconv.validate_config({"datasets": {"a": {"source": "synthetic"}, "b": {"source": "adult", "path": "x"}}})
    synthetic, adult = lpconfig.schema_defaults("deconv_synthetic"), lpconfig.schema_defaults("deconv_adult")
    assert {k: cfg["datasets"]["a"][k] for k in ("x", "curve", "n", "test_size")} == {
        k: synthetic[k] for k in ("x", "curve", "n", "test_size")
    }
    assert cfg["datasets"]["b"]["bounds"] == adult["bounds"] and cfg["datasets"]["b"]["n"] == ["all"]
    with pytest.raises(lpconfig.ConfigError, match=r"^config key 'studies\.deconv\.datasets\.b\.path': missing; "):
        deconv.validate_config({"datasets": {"b": {"source": "adult"}}})


def test_schema_lists_exactly_the_studies():
    schema = lpconfig.published_schema()
    studies = sorted(SECTIONS.keys() - {"experiments", "datasets"})
    assert sorted(schema["properties"]["studies"]["properties"]) == sorted(VALIDATORS) == studies


def test_a_studies_only_config_needs_no_main_dag_keys():
    """seed and a study suffice; experiments bring their own required keys, named in one line."""
    lpconfig.check_schema({"seed": 1, "studies": {"deconv": BASE["studies"]["deconv"]}})
    assert lpconfig.check_startup({"seed": 1, "studies": {"deconv": BASE["studies"]["deconv"]}}, None) == []
    config = copy.deepcopy(BASE)
    del config["grid"]
    with pytest.raises(
        lpconfig.ConfigError,
        match=r"^config key 'grid': missing, and required with 'experiments'; "
        r"allowed: the evaluation grid",
    ):
        lpconfig.check_schema(config)
    with pytest.raises(lpconfig.ConfigError, match=r"^config key '<top level>': .*allowed: "):
        lpconfig.check_schema({"seed": 1})  # nothing to run
    with pytest.raises(lpconfig.ConfigError, match=r"^config key 'studies\.nope': unknown study 'nope'; allowed: "):
        lpconfig.check_schema({"seed": 1, "studies": {"nope": {}}})
