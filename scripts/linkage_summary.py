from locpriv.smk import logged
from locpriv.stages.linkage import linkage_summary

with logged(snakemake):
    p, i, o = snakemake.params, snakemake.input, snakemake.output
    linkage_summary(
        bayes_runs=p.bayes_runs,
        bayes_paths=list(i.bayes),
        recovery_runs=p.recovery_runs,
        recovery_paths=list(i.recovery),
        out_bayes=o.bayes,
        out_recovery=o.recovery,
        out_plot=o.png,
        out_frontier=o.frontier,
        guarantees=p.guarantees,
        dpi=p.dpi,
    )
