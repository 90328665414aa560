from locpriv.heatmaps.plots import plot_multi
from locpriv.heatmaps.multi_study import multi_stage
from locpriv.smk import logged

with logged(snakemake):
    multi_stage(snakemake.params.cfg, snakemake.params.seed, snakemake.output.table)
    plot_multi(snakemake.output.table, snakemake.output.plot, snakemake.params.dpi)
