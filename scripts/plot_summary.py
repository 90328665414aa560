from locpriv import plots
from locpriv.smk import logged

with logged(snakemake):
    getattr(plots, snakemake.wildcards.plot)(
        summary_path=snakemake.input[0], out_png=snakemake.output[0], settings=snakemake.params.settings
    )
