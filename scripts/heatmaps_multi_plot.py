"""The multi-location figure of the heatmaps study (Table 2's scale / clip-bits effect) from its table."""

from locpriv.heatmaps.plots import plot_multi
from locpriv.smk import logged

with logged(snakemake):
    plot_multi(multi_path=snakemake.input.table, out_png=snakemake.output[0], dpi=snakemake.params.dpi)
