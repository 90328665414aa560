from locpriv.smk import logged
from locpriv.stages.metrics import summary

with logged(snakemake):
    summary(list(snakemake.input), snakemake.output.parquet, snakemake.output.csv)
