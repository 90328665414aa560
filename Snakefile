# locpriv: every privacy mechanism is a branch of one DAG
#   ingest -> encode -> randomize -> aggregate -> estimate -> attack -> metrics -> summary/report
# See README.md for how to run it and workflow/rules/*.smk for the stages.

import os
import sys
import warnings

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import min_version

min_version("9.0")

# `snakemake --report` evaluates each rule's resources without awaiting the input-size coroutine
# Snakemake makes for them (snakemake/rules.py, 9.x): one RuntimeWarning per rule on the console,
# about sizes the report does not use
warnings.filterwarnings(
    "ignore",
    message="coroutine 'InputFiles._predicated_size_files",
    category=RuntimeWarning,
)

# The library is pip-installable (pyproject.toml); putting lib/ on the path as
# well lets the Snakefile and every job (also inside a --software-deployment-method
# conda environment, which holds only the dependencies) import this checkout's
# locpriv, so results always come from the code in this working tree.
LIB = os.path.join(workflow.basedir, "lib")
sys.path.insert(0, LIB)
# The console plugin (lib/snakemake_logger_plugin_locpriv) is loaded before this file and imports
# locpriv from wherever Python found it first (e.g. another checkout's editable install): forget
# that copy, so that the rules and the code fingerprints read this working tree's library.
if not os.path.abspath(
    getattr(sys.modules.get("locpriv"), "__file__", None) or LIB
).startswith(LIB + os.sep):
    for _module in [
        m for m in sys.modules if m == "locpriv" or m.startswith("locpriv.")
    ]:
        del sys.modules[_module]
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [LIB, os.environ.get("PYTHONPATH")])
)
# the config's plugin modules, for every job; set from the config key `plugins` by the start-up
# check (workflow/rules/common.smk, locpriv.plugins.activate)
os.environ["LOCPRIV_PLUGINS"] = ""


envvars:
    # set just above, so always present; declaring them passes them on to cluster jobs as well
    "PYTHONPATH",
    "LOCPRIV_PLUGINS",


from locpriv import ledger as lpledger
from locpriv import smk as lpsmk
from locpriv.config import ConfigError

if workflow.is_main_process:
    try:
        lpsmk.check_yaml(
            "config.yaml"
        )  # line and column of a syntax error (Snakemake gives neither)
    except ConfigError as exc:
        raise WorkflowError(f"invalid configuration: {exc}") from None
    _stale_locks, _other_run = lpsmk.claim_workdir()
    if _stale_locks:
        logger.info(_stale_locks)


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
# every table of TABLES as an HTML page for the report (the main DAG's and the studies')
include: "workflow/rules/tables.smk"


# the main DAG's rules, where the config has experiments (a studies-only config has no grid,
# attack or shards for them to read)
if RUNS:

    include: "workflow/rules/ingest.smk"
    include: "workflow/rules/encode.smk"
    include: "workflow/rules/randomize.smk"
    include: "workflow/rules/aggregate.smk"
    include: "workflow/rules/attack.smk"
    include: "workflow/rules/audit.smk"
    include: "workflow/rules/metrics.smk"
    include: "workflow/rules/frontier.smk"
    # the adversaries across the windowed releases (datasets with `releases` only)
    include: "workflow/rules/linkage.smk"
    include: "workflow/rules/report.smk"


# continual releases (releases: {mode: continual}) read the windows' ingested points only
if CONTINUAL:
    if not RUNS:

        include: "workflow/rules/ingest.smk"
    include: "workflow/rules/continual.smk"


# Studies: the protocols that are not a per-user density surface (interactive quadtrees,
# secure-aggregation heatmaps, federated radio maps, 1-D deconvolution).  A study's rules
# are parsed only when the config has a section for it; each fills STUDY_TARGETS[name].
# A registered study without a rule file of its own (a plugin's) runs on the generic rules.
STUDY_TARGETS = {}
REGISTERED_STUDIES = [
    _study
    for _study in config.get("studies", {})
    if not os.path.exists(
        os.path.join(workflow.basedir, f"workflow/rules/studies/{_study}.smk")
    )
]
for _study in config.get("studies", {}):
    if _study not in REGISTERED_STUDIES:

        include: f"workflow/rules/studies/{_study}.smk"


if REGISTERED_STUDIES:

    include: "workflow/rules/studies/registered.smk"


# Every file this config makes that is known before the DAG: the results, the density runs'
# intermediates and what the results' rules read.  rule all asks for all of them, so the same
# command remakes any that is missing, and only these are checked for damage.
ALL_FILES = lpsmk.with_static_inputs(
    workflow.rules,
    summary_targets()
    + plot_targets()
    + frontier_targets()
    + linkage_targets()
    + [t for targets in STUDY_TARGETS.values() for t in targets]
    + intermediate_targets()
    + (continual_targets() if CONTINUAL else []),
    RESULTS,
)

if workflow.is_main_process:
    lpsmk.announce_checkpoints(workflow.rules)
    for _line in CONFIG_WARNINGS:
        lpsmk.warn(_line, logger.warning)
# every release this config makes is charged to its dataset's ledger before any job draws noise
# (locpriv.ledger); over a dataset's budget, the run stops here with one line
# (a command that runs no job checks and reports, charging nothing; Snakemake tells a dry run only
# after this file is read, so the flags are read here; an unrecognised one charges: never too little)
if workflow.is_main_process and (RUNS or CONTINUAL) and not REPORT_MODE:
    _no_jobs = {
        "-n",
        "--dry-run",
        "--dryrun",
        "--lint",
        "--unlock",
        "--list-rules",
        "--dag",
    }
    try:
        for _line in lpledger.charge_runs(
            config,
            ALL_RUNS,
            RESULTS,
            write=not _no_jobs.intersection(a.split("=")[0] for a in sys.argv),
        ):
            logger.info(_line)
    except lpledger.LedgerError as exc:
        raise WorkflowError(f"privacy budget: {exc}") from None
# a live run's outputs may be mid-write: check this config's outputs only when this run is alone
if workflow.is_main_process and not _other_run and not REPORT_MODE:
    for _line in lpsmk.remove_temporaries(RESULTS) + lpsmk.remove_damaged(
        ALL_FILES, view_folders
    ):
        logger.info(_line)
    check_users_kept()


rule all:
    default_target: True
    input:
        default_targets(ALL_FILES),
        [] if REPORT_MODE else view_targets,


# what a user opens first, named on the console's last line: the three files README's "Quick start"
# names (tests/test_convergence.py holds the two to the same list)
OPEN_FIRST = (
    [
        results(p)
        for p in ("summary/frontier.csv", "plots/frontier.png", "summary/runs.csv")
    ]
    if RUNS
    else [
        t for targets in STUDY_TARGETS.values() for t in targets if t.endswith(".csv")
    ]
) + ([results("summary/continual.csv")] if CONTINUAL else [])


onstart:
    # Snakemake's local scheduler otherwise spins (lib/locpriv/smk.py)
    lpsmk.drop_local_rate_limit(workflow)


onsuccess:
    # figures of another config run in the same results_dir would pass for this config's
    for _line in lpsmk.remove_stale_plots(
        results("plots"),
        plot_targets() + frontier_targets() + linkage_targets(),
    ):
        logger.info(_line)
    lpsmk.closing_lines(OPEN_FIRST, failed=False, emit=logger.info)


onerror:
    # a failed job's restored update() output must not pass for up to date in the next run
    for _line in lpsmk.distrust_restored(workflow):
        logger.info(_line)
    # repeat the warnings as the console's last lines (each failed job printed its own line once)
    lpsmk.closing_lines(OPEN_FIRST, failed=True, emit=logger.error)
