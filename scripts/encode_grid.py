from locpriv.smk import logged
from locpriv.stages.prepare import encode_grid

with logged(snakemake):
    encode_grid(snakemake.params.spec, snakemake.params.grid, snakemake.output[0])
