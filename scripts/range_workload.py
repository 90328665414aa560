from locpriv.smk import logged
from locpriv.stages.utility import range_workload

with logged(snakemake):
    range_workload(snakemake.wildcards.dataset, snakemake.input.points, snakemake.input.grid,
                   snakemake.params.utility, snakemake.params.seed, snakemake.output[0])
