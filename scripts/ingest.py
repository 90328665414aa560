from locpriv.smk import logged
from locpriv.stages.prepare import ingest

with logged(snakemake):
    ingest(name=snakemake.wildcards.dataset, spec=snakemake.params.spec, seed=snakemake.params.seed,
           out_points=snakemake.output.points, out_meta=snakemake.output.meta)
