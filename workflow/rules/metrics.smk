# metrics: one tidy table per run, gathered into results/summary/


rule metrics:
    input:
        estimate=run_path("estimate.nc"),
        truth=TRUTH_FILE,
        pooled=pooled_input,
        attack=run_path("attack-local_maxima.parquet"),
        bayes=run_path("attack-bayes.parquet"),
        workload=results("ingest/{dataset}/range-workload.parquet"),
        grid=GRID_FILE,
        bandwidth=bandwidth_input,
        meta=results("ingest/{dataset}/meta.json"),
    output:
        run_path("metrics.parquet"),
    log:
        run_path("metrics.log", logs),
    benchmark:
        run_path("metrics.tsv", benchmarks)
    conda:
        "../../envs/locpriv.yaml"
    params:
        run=run_of,
        hotspot_k=lputility.settings(config)["hotspot_k"],
        code=lambda wc: mechanism_code(wc, "metrics"),
    script:
        "../../scripts/metrics.py"


rule summary:
    input:
        metrics=run_targets("metrics.parquet"),
        audit=audit_summary_input,
    output:
        # update(): Snakemake keeps the previous summary and restores it if this job fails
        parquet=update(results("summary/metrics.parquet")),
        csv=update(results("summary/metrics.csv")),
        # the report shows runs.csv as summary/runs.html (rule table_html)
        runs=update(results("summary/runs.csv")),
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
