# summary: every run's metrics table (rule attack_metrics) gathered into results/summary/


rule summary:
    input:
        metrics=run_targets("metrics.parquet"),
        attacks=run_targets("attack-bayes.parquet"),
        audit=audit_summary_input,
    output:
        # update(): Snakemake keeps the previous summary and restores it if this job fails
        parquet=update(results("summary/metrics.parquet")),
        csv=update(results("summary/metrics.csv")),
        # the report shows runs.csv as summary/runs.html (rule table_html)
        runs=update(results("summary/runs.csv")),
        # one row per run and attacked user: what the frontier's exposed and p10 summarise
        users=update(results("summary/attacked_users.parquet")),
    log:
        logs("summary.log"),
    benchmark:
        benchmarks("summary.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        code=code_fingerprint("locpriv.stages.metrics"),
        # distance unit per dataset, from the config alone (the wide table puts it in column names)
        units=dataset_units,
    script:
        "../../scripts/summary.py"
