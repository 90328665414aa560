from locpriv.smk import logged, optional_input
from locpriv.stages.metrics import runs_table, summary

with logged(snakemake):
    summary(list(snakemake.input.metrics), snakemake.output.parquet, snakemake.output.csv,
            audit_table=optional_input(snakemake, "audit"))
    runs_table(snakemake.output.parquet, snakemake.params.units, snakemake.output.runs)
