# locpriv: every privacy mechanism is a branch of one DAG
#   ingest -> encode -> randomize -> aggregate -> estimate -> attack -> metrics -> summary/report
# See README.md for how to run it and workflow/rules/*.smk for the stages.

import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

min_version("8.20")

# The library is pip-installable (pyproject.toml); putting lib/ on the path as
# well lets the Snakefile and every job (also inside a --software-deployment-method
# conda environment, which holds only the dependencies) import this checkout's
# locpriv, so results always come from the code in this working tree.
LIB = os.path.join(workflow.basedir, "lib")
sys.path.insert(0, LIB)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [LIB, os.environ.get("PYTHONPATH")]))


from locpriv import smk as lpsmk
from locpriv.config import ConfigError

if workflow.is_main_process:
    try:
        lpsmk.check_yaml("config.yaml")  # line and column of a syntax error (Snakemake gives neither)
    except ConfigError as exc:
        raise WorkflowError(f"invalid configuration: {exc}") from None
    _stale, _other_run = lpsmk.claim_workdir()
    # a live run's outputs may be mid-write: check them only when this run is alone
    for _line in filter(None, [_stale, *([] if _other_run else lpsmk.remove_damaged())]):
        print(_line, file=sys.stderr)


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/encode.smk"
include: "workflow/rules/randomize.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/estimate.smk"
include: "workflow/rules/attack.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/frontier.smk"
include: "workflow/rules/report.smk"


# Studies: the protocols of seeds 001-004 that are not a per-user density
# surface (interactive quadtrees, secure-aggregation heatmaps, federated radio
# maps, 1-D deconvolution).  A study's rules are parsed only when the config
# has a section for it; each fills STUDY_TARGETS[name].
STUDY_TARGETS = {}
for _study in config.get("studies", {}):
    include: f"workflow/rules/studies/{_study}.smk"


# `snakemake --report report.html` after an interrupted run, before any run or after a run of
# another config: report the figures that exist instead of stopping at the first missing one.
REPORT_MODE = workflow.is_main_process and any(a.split("=")[0] == "--report" for a in sys.argv)


def default_targets(*groups):
    targets = [t for group in groups for t in group]
    return [t for t in targets if os.path.exists(t)] if REPORT_MODE else targets


rule all:
    default_target: True
    input:
        default_targets(
            ["results/summary/metrics.parquet", "results/summary/metrics.csv"] if RUNS else [],
            plot_targets(),
            frontier_targets(),
            [t for targets in STUDY_TARGETS.values() for t in targets],
        ),


onerror:
    # repeat each failed job's one-line error as the console's last lines
    if os.path.exists(lpsmk.ERROR_DIGEST):
        print("".join(open(lpsmk.ERROR_DIGEST).readlines()[-20:]), end="", file=sys.stderr)
