# locpriv: every privacy mechanism is a branch of one DAG
#   ingest -> encode -> randomize -> aggregate -> estimate -> attack -> metrics -> summary/report
# See README.md for how to run it and workflow/rules/*.smk for the stages.

from snakemake.utils import min_version

min_version("8.20")


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


rule all:
    default_target: True
    input:
        "results/summary/metrics.parquet",
        "results/summary/metrics.csv",
        plot_targets(),
