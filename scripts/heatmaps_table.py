"""Table 1 of the heatmaps study (per method, at the base setting) from the summary."""
from locpriv.heatmaps import plots
from locpriv.smk import logged

with logged(snakemake):
    plots.results_table(snakemake.input.summary, snakemake.params.base, snakemake.output.table)
