from locpriv.heatmaps import plots
from locpriv.smk import logged

with logged(snakemake):
    plots.plot_secagg_cost(
        protocol_path=snakemake.input.protocol,
        transcript_path=snakemake.input.transcript,
        out_png=snakemake.output[0],
        dpi=snakemake.params.dpi,
    )
