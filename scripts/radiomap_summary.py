"""Attack RMSE, MAE and guarantee tables over all runs of the radiomap study."""
from locpriv.radiomap.stages import summarise
from locpriv.smk import logged

with logged(snakemake):
    summarise(snakemake.params.runs, snakemake.input.attack, snakemake.input.history, dict(snakemake.output))
