from locpriv.heatmaps.study import run_stage
from locpriv.smk import logged

with logged(snakemake):
    o = snakemake.output
    run_stage(snakemake.params.run, snakemake.params.seed, snakemake.input[0], o.heatmap, o.transcript, o.releases)
