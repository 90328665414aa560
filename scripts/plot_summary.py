from locpriv import plots
from locpriv.smk import logged

with logged(snakemake):
    getattr(plots, snakemake.wildcards.plot)(snakemake.input[0], snakemake.output[0], snakemake.params.settings)
