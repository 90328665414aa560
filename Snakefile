# locpriv: every privacy mechanism is a branch of one DAG
#   ingest -> encode -> randomize -> aggregate -> estimate -> attack -> metrics -> summary/report
# See README.md for how to run it and workflow/rules/*.smk for the stages.

import os
import sys

from snakemake.utils import min_version

min_version("8.20")

# The library is pip-installable (pyproject.toml); putting lib/ on the path as
# well lets the Snakefile and every job (also inside a --software-deployment-method
# conda environment, which holds only the dependencies) import this checkout's
# locpriv, so results always come from the code in this working tree.
LIB = os.path.join(workflow.basedir, "lib")
sys.path.insert(0, LIB)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [LIB, os.environ.get("PYTHONPATH")]))


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/encode.smk"
include: "workflow/rules/randomize.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/estimate.smk"
include: "workflow/rules/attack.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/report.smk"


# Studies: the protocols of seeds 001-004 that are not a per-user density
# surface (interactive quadtrees, secure-aggregation heatmaps, federated radio
# maps, 1-D deconvolution).  A study's rules are parsed only when the config
# has a section for it; each fills STUDY_TARGETS[name].
STUDY_TARGETS = {}
for _study in config.get("studies", {}):
    include: f"workflow/rules/studies/{_study}.smk"


rule all:
    default_target: True
    input:
        ["results/summary/metrics.parquet", "results/summary/metrics.csv"] if RUNS else [],
        plot_targets(),
        [t for targets in STUDY_TARGETS.values() for t in targets],
