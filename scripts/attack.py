from locpriv.smk import logged, optional_input
from locpriv.stages.attack import attack

with logged(snakemake):
    attack(snakemake.params.run, snakemake.params.seed, snakemake.params.attack,
           snakemake.params.users_per_shard, list(snakemake.input.views), snakemake.input.points,
           snakemake.input.meta, snakemake.input.grid, optional_input(snakemake, "bandwidth"),
           snakemake.output[0])
