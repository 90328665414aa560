from locpriv.smk import logged
from locpriv.study import summary_stage

with logged(snakemake):
    summary_stage(
        name=snakemake.wildcards.study,
        paths=list(snakemake.input),
        out_parquet=snakemake.output.parquet,
        out_csv=snakemake.output.csv,
    )
