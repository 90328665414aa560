"""The heatmaps study's figures: MSE sweeps (Fig. 7, 8) and the per-round strip of the base run."""

from locpriv.heatmaps import plots
from locpriv.smk import logged

with logged(snakemake):
    i, o, p = snakemake.input, snakemake.output, snakemake.params
    plots.plot_sweeps(summary_path=i.summary, base=p.base, out_png=o.sweeps, dpi=p.dpi)
    plots.plot_rounds(population_path=i.population, releases_path=i.releases, out_png=o.rounds, dpi=p.dpi)
