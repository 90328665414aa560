from locpriv.smk import logged
from locpriv.audit.stage import audit_table

with logged(snakemake):
    audit_table(audit_paths=list(snakemake.input), out_parquet=snakemake.output.parquet,
                out_csv=snakemake.output.csv)
