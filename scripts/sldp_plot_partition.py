from locpriv.sldp.study import plot_partition
from locpriv.smk import logged

with logged(snakemake):
    p = snakemake.params
    plot_partition(p.run, p.cfg, p.seed, snakemake.input.regions, snakemake.input.partition,
                   snakemake.output[0], p.dpi)
