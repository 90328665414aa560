from locpriv.smk import logged
from locpriv.stages.prepare import encode_grid

with logged(snakemake):
    encode_grid(spec=snakemake.params.spec, grid_spec=snakemake.params.grid, out_grid=snakemake.output[0])
