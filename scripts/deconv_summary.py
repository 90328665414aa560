from locpriv.deconv.study import summary_stage
from locpriv.smk import logged

with logged(snakemake):
    summary_stage(paths=list(snakemake.input), out_parquet=snakemake.output.parquet, out_csv=snakemake.output.csv)
