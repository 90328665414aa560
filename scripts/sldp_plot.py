from locpriv.sldp.study import plot_stage
from locpriv.smk import logged

with logged(snakemake):
    plot_stage(summary_path=snakemake.input[0], out_png=snakemake.output[0], dpi=snakemake.params.dpi)
