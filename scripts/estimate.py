from locpriv.smk import logged, optional_input
from locpriv.stages.run import estimate

with logged(snakemake):
    estimate(snakemake.params.run, snakemake.input.aggregate, snakemake.input.grid,
             optional_input(snakemake, "bandwidth"), snakemake.output[0])
