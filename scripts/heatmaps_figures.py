"""The heatmaps study's figures: MSE sweeps (Fig. 7, 8) and the per-round strip of the base run."""
from locpriv.heatmaps import plots
from locpriv.smk import logged

with logged(snakemake):
    i, o, p = snakemake.input, snakemake.output, snakemake.params
    plots.plot_sweeps(i.summary, p.base, o.sweeps, p.dpi)
    plots.plot_rounds(i.population, i.releases, o.rounds, p.dpi)
