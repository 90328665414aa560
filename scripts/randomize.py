from locpriv.smk import logged, optional_input
from locpriv.stages.run import randomize

with logged(snakemake):
    randomize(snakemake.params.run, snakemake.params.seed, int(snakemake.wildcards.shard),
              snakemake.params.users_per_shard, snakemake.input.points, snakemake.input.meta,
              snakemake.input.grid, optional_input(snakemake, "bandwidth"), snakemake.output[0])
