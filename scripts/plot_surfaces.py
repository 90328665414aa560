from locpriv import plots
from locpriv.smk import logged

with logged(snakemake):
    plots.surfaces(snakemake.input.truth, list(snakemake.input.estimates), snakemake.params.labels,
                   snakemake.output[0], snakemake.params.settings)
