from locpriv.smk import logged
from locpriv.stages.prepare import ingest

with logged(snakemake):
    ingest(snakemake.wildcards.dataset, snakemake.params.spec, snakemake.params.seed,
           snakemake.output.points, snakemake.output.meta)
