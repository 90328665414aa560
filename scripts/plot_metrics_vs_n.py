from locpriv import plots
from locpriv.smk import logged

with logged(snakemake):
    plots.metrics_vs_n(snakemake.input[0], snakemake.output[0], snakemake.params.settings)
