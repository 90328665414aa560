from locpriv.heatmaps.study import summary_stage
from locpriv.smk import logged

with logged(snakemake):
    summary_stage(list(snakemake.input), snakemake.output.parquet, snakemake.output.csv)
