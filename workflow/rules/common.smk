# Config validation (before any job), experiment expansion and the small
# helpers every rule file uses.  Rules receive only the config slice they
# need, plus a fingerprint of the locpriv code they run.

import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from locpriv import config as lpconfig
from locpriv import mechanisms as lpmechanisms
from locpriv.datasets import registry
from locpriv.fingerprint import code_fingerprint

try:
    lpconfig.check_schema(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")
    lpconfig.check_values(config)
    _unusable = registry.check_real_files(config, Path.cwd())  # real data: missing or other bytes
    if _unusable:
        raise lpconfig.ConfigError("config key '{}': {}".format(*_unusable[0]))
    lpconfig.check_dataset_paths(config, Path.cwd())
    RUNS = {run.key: run for run in lpconfig.expand_runs(config)}
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None


wildcard_constraints:
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    mechanism=r"[a-z0-9_]+",
    params=r"[^/]+",
    rep=r"\d+",
    shard=r"\d+",


RUN_DIR = "results/runs/{dataset}/{mechanism}/{params}/rep~{rep}"


def run_datasets():
    """The config's datasets that some run uses (an unused dataset must not re-run the gathers)."""
    used = {run.dataset for run in RUNS.values()}
    return {ds: spec for ds, spec in config.get("datasets", {}).items() if ds in used}


def dataset_spec(wc):
    return config["datasets"][wc.dataset]


def run_of(wc):
    """The run this job belongs to, as the plain dict the stage functions take."""
    run = RUNS[(wc.dataset, wc.mechanism, wc.params, int(wc.rep))]
    return {"dataset": run.dataset, "mechanism": run.mechanism, "params": run.params, "rep": run.rep}


def needs_bandwidth(wc):
    """Bandwidth file for runs and truths that use the kNN rule, else nothing."""
    spec = dataset_spec(wc)
    if getattr(wc, "mechanism", None) is None:
        return spec["source"] != "synthetic"
    return run_of(wc)["params"].get("h") == "knn"


def bandwidth_input(wc):
    return f"results/ingest/{wc.dataset}/bandwidth.json" if needs_bandwidth(wc) else []



def mechanism_code(wc, stage):
    # the plugin's own module (one module may define several mechanisms)
    return code_fingerprint(f"locpriv.stages.{stage}", type(lpmechanisms.get(wc.mechanism)).__module__)


def n_shards(wc):
    from locpriv.stages.run import n_users_of, shard_count, shard_size

    meta = checkpoints.ingest.get(dataset=wc.dataset).output.meta
    run = run_of(wc)
    return shard_count(n_users_of(run["params"], meta), shard_size(run["mechanism"], config["users_per_shard"]))


def view_files(wc):
    return expand(
        RUN_DIR.format(**wc) + "/view/shard~{shard}.parquet", shard=range(n_shards(wc))
    )


def run_targets(filename):
    return [f"{run.path}/{filename}" for run in RUNS.values()]


def rule_resource(rule_name, key, fallback):
    """Cluster resource of a rule from config['resources'] (rule entry, then 'default').

    Resources are not rerun triggers: changing them re-runs nothing.
    """
    table = config.get("resources", {})
    return table.get(rule_name, {}).get(key, table.get("default", {}).get(key, fallback))
