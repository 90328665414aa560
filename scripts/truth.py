from locpriv.smk import logged, optional_input
from locpriv.stages.prepare import truth

with logged(snakemake):
    truth(snakemake.params.spec, snakemake.input.points, snakemake.input.grid,
          optional_input(snakemake, "bandwidth"), snakemake.output[0])
