from locpriv.sldp.study import plot_stage
from locpriv.smk import logged

with logged(snakemake):
    plot_stage(snakemake.input[0], snakemake.output[0], snakemake.params.dpi)
