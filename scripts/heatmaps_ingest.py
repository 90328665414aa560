from locpriv.heatmaps.study import ingest_stage
from locpriv.smk import logged

with logged(snakemake):
    ingest_stage(cfg=snakemake.params.cfg, seed=snakemake.params.seed, out=snakemake.output[0])
