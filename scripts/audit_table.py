from locpriv.audit.stage import audit_table
from locpriv.smk import logged

with logged(snakemake):
    audit_table(audit_paths=list(snakemake.input), out_parquet=snakemake.output.parquet, out_csv=snakemake.output.csv)
