from locpriv.heatmaps.study import ingest_stage
from locpriv.smk import logged

with logged(snakemake):
    ingest_stage(snakemake.params.cfg, snakemake.params.seed, snakemake.output[0])
