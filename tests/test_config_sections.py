"""One config dialect: every section answers the same three bad inputs with the same one-line style.

The main DAG's sections (``experiments.*``, ``datasets.*``) are checked by the JSON schema, the studies'
sections by their own validators (``StudySection``); both must say
``config key '<full key>': <problem>; allowed: <allowed>`` on one line.  The schema's study keys and
defaults must be the studies' own DEFAULTS.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from locpriv import config as lpconfig
from locpriv.deconv import study as deconv
from locpriv.heatmaps import study as heatmaps
from locpriv.radiomap import config as radiomap
from locpriv.sldp import study as sldp

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())
EXPERIMENT = next(iter(BASE["experiments"]))
DATASET = next(iter(BASE["datasets"]))
VALIDATORS = {"deconv": deconv.validate_config, "sldp": sldp.validate_config,
              "heatmaps": heatmaps.validate_config, "radiomap": radiomap.validate_config}
STUDY_DEFAULTS = {"deconv": deconv.DEFAULTS, "sldp": sldp.DEFAULTS, "heatmaps": heatmaps.DEFAULTS,
                  "radiomap": radiomap.DEFAULTS}
# sub-sections whose default is null (off) but whose keys are fixed
NULL_SECTIONS = {("heatmaps", "multi_location"): heatmaps.MULTI_DEFAULTS}
# mappings of user-chosen names (datasets, noise schemes): no fixed keys
FREE_SECTIONS = {("deconv", "datasets"), ("radiomap", "runs")}

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
    lpconfig.check_schema(config, SCHEMA)
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
    assert re.fullmatch(rf"config key '{re.escape(top)}\.{re.escape(name)}\.{re.escape(key)}': .+; allowed: .+",
                        message), message


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("study", VALIDATORS)
def test_study_validators_alone_give_the_same_error(study, bad):
    """Without the schema in front (a notebook calling the study), the study says the same thing."""
    key, value = BAD[bad] or SECTIONS[study][1]
    section = copy.deepcopy(BASE["studies"][study])
    section[key] = value
    with pytest.raises(lpconfig.ConfigError,
                       match=rf"^config key 'studies\.{study}\.{re.escape(key)}': [^\n]+; allowed: [^\n]+$"):
        VALIDATORS[study](section)


@pytest.mark.parametrize("study", [s for s in VALIDATORS if "reps" in STUDY_DEFAULTS[s]])
def test_reps_is_one_positive_integer_in_every_study(study):
    section = copy.deepcopy(BASE["studies"][study])
    for bad in ([3, 1], [3], 0, 2.0, True):
        section["reps"] = bad
        with pytest.raises(lpconfig.ConfigError, match=r"allowed: an integer >= 1$"):
            VALIDATORS[study](section)
    section["reps"] = 3
    assert VALIDATORS[study](section)["reps"] == 3


def test_a_study_without_repetitions_names_reps_an_unknown_key():
    """radiomap has one scenario per setting (no reps key): `reps` gets the same one-line style."""
    studies = [s for s in VALIDATORS if "reps" not in STUDY_DEFAULTS[s]]
    assert studies == ["radiomap"]
    section = copy.deepcopy(BASE["studies"]["radiomap"])
    section["reps"] = [3, 1]
    with pytest.raises(lpconfig.ConfigError, match=r"^config key 'studies\.radiomap\.reps': unknown key; allowed: "):
        VALIDATORS["radiomap"](section)


def _schema_keys(node: dict) -> dict:
    return node.get("properties", {})


def _compare(schema_props: dict, defaults: dict, where: tuple) -> None:
    assert sorted(schema_props) == sorted(defaults), (
        f"schema keys of {'.'.join(where)} differ from the study's defaults: "
        f"only in schema {sorted(set(schema_props) - set(defaults))}, "
        f"only in defaults {sorted(set(defaults) - set(schema_props))}")
    for key, default in defaults.items():
        node = schema_props[key]
        sub = NULL_SECTIONS.get((*where[1:], key), default)
        if isinstance(sub, dict) and sub and (*where[1:], key) not in FREE_SECTIONS:
            _compare(_schema_keys(node), sub, (*where, key))
        else:
            assert node.get("default") == default, f"{'.'.join((*where, key))}: schema default {node.get('default')!r}"


@pytest.mark.parametrize("study", STUDY_DEFAULTS)
def test_schema_keys_and_defaults_are_the_studys(study):
    schema = yaml.safe_load(SCHEMA.read_text())
    node = schema["properties"]["studies"]["properties"][study]
    _compare(_schema_keys(node), STUDY_DEFAULTS[study], ("studies", study))


def test_schema_lists_exactly_the_studies():
    schema = yaml.safe_load(SCHEMA.read_text())
    assert sorted(schema["properties"]["studies"]["properties"]) == sorted(VALIDATORS)
