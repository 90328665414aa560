from locpriv.smk import logged, optional_input
from locpriv.stages.attack import bayes_attack

with logged(snakemake):
    bayes_attack(snakemake.params.run, snakemake.params.seed, snakemake.params.adversary,
                 snakemake.params.users_per_shard, list(snakemake.input.views), snakemake.input.points,
                 snakemake.input.meta, snakemake.input.grid, snakemake.input.truth,
                 optional_input(snakemake, "bandwidth"), snakemake.output[0])
