from locpriv.heatmaps import plots
from locpriv.smk import logged

with logged(snakemake):
    plots.plot_secagg_cost(snakemake.input.protocol, snakemake.input.transcript, snakemake.output[0],
                           snakemake.params.dpi)
