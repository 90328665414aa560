from locpriv import plots_rff
from locpriv.seeding import rng
from locpriv.smk import logged

with logged(snakemake):
    plots_rff.plot_fig3_convergence(
        path=snakemake.output.fig3, rng=rng(snakemake.params.seed, "plot", "rff-fig3"), dpi=snakemake.params.dpi
    )
    plots_rff.plot_user_surfaces(
        path=snakemake.output.fig4, rng=rng(snakemake.params.seed, "plot", "rff-fig4"), dpi=snakemake.params.dpi
    )
