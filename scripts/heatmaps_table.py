"""Table 1 of the heatmaps study (per method, at the base setting) from the summary."""

from locpriv.heatmaps.tables import results_table
from locpriv.smk import logged

with logged(snakemake):
    results_table(summary_path=snakemake.input.summary, base=snakemake.params.base, out_csv=snakemake.output.table)
