from locpriv.heatmaps.study import metrics_stage
from locpriv.smk import logged

with logged(snakemake):
    i = snakemake.input
    metrics_stage(snakemake.params.run, i.population, i.heatmap, i.transcript, snakemake.output[0])
