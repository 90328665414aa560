from locpriv.smk import logged
from locpriv.audit.stage import audit_table

with logged(snakemake):
    audit_table(list(snakemake.input), snakemake.output.parquet, snakemake.output.csv, snakemake.output.html)
