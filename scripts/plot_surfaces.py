from locpriv import plots
from locpriv.smk import logged

with logged(snakemake):
    plots.surfaces(
        truth_path=snakemake.input.truth,
        estimate_paths=list(snakemake.input.estimates),
        labels=snakemake.params.labels,
        out_png=snakemake.output[0],
        settings=snakemake.params.settings,
    )
