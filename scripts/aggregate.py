from locpriv.smk import logged, optional_input
from locpriv.stages.run import aggregate

with logged(snakemake):
    aggregate(snakemake.params.run, list(snakemake.input.views), snakemake.input.grid,
              optional_input(snakemake, "bandwidth"), snakemake.output[0])
