from locpriv.smk import logged, optional_input
from locpriv.stages.metrics import attacked_users, runs_table, summary

with logged(snakemake):
    summary(
        metric_paths=list(snakemake.input.metrics),
        out_parquet=snakemake.output.parquet,
        out_csv=snakemake.output.csv,
        audit_table=optional_input(snakemake, "audit"),
    )
    runs_table(summary_parquet=snakemake.output.parquet, units=snakemake.params.units, out_csv=snakemake.output.runs)
    attacked_users(
        metric_paths=list(snakemake.input.metrics),
        attack_paths=list(snakemake.input.attacks),
        out_parquet=snakemake.output.users,
    )
