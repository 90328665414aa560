from locpriv.sldp.study import plot_partition
from locpriv.smk import logged

with logged(snakemake):
    p = snakemake.params
    plot_partition(
        run=p.run,
        cfg=p.cfg,
        seed=p.seed,
        regions_path=snakemake.input.regions,
        partition_path=snakemake.input.partition,
        out_png=snakemake.output[0],
        dpi=p.dpi,
    )
