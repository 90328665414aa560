"""Multi-location users of the heatmaps study ([DDP-Heatmaps] §5.7): overflow and MSE per scale and clip bits."""

from locpriv.heatmaps.multi_study import multi_stage
from locpriv.smk import logged

with logged(snakemake):
    multi_stage(cfg=snakemake.params.cfg, seed=snakemake.params.seed, out=snakemake.output.table)
