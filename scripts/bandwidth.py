from locpriv.smk import logged
from locpriv.stages.prepare import bandwidth

with logged(snakemake):
    bandwidth(snakemake.input.points, snakemake.wildcards.dataset, snakemake.params.k,
              snakemake.params.seed, snakemake.output[0])
