from locpriv.frontier import frontier
from locpriv.smk import logged

with logged(snakemake):
    frontier(snakemake.input[0], snakemake.params.settings, snakemake.params.levels, snakemake.params.units,
             snakemake.params.dpi, snakemake.output.csv, snakemake.output.png, snakemake.output.html,
             snakemake.output.recommendation)
