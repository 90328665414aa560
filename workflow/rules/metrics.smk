# metrics: one tidy table per run, gathered into results/summary/

from locpriv.datasets import ingest as lpingest
from locpriv.stages import utility as lputility


def pooled_input(wc):
    """The run's non-private reference (same users, same bandwidth); none without a bandwidth."""
    params = run_of(wc)["params"]
    if "h" not in params:
        return []
    return f"results/ingest/{wc.dataset}/pooled-kde/n~{params['n']}_h~{params['h']}.nc"


rule metrics:
    input:
        estimate=RUN_DIR + "/estimate.nc",
        truth="results/ingest/{dataset}/truth.nc",
        pooled=pooled_input,
        attack=RUN_DIR + "/attack-local_maxima.parquet",
        bayes=RUN_DIR + "/attack-bayes.parquet",
        workload="results/ingest/{dataset}/range-workload.parquet",
        grid="results/encode/{dataset}/grid.nc",
        bandwidth=bandwidth_input,
        meta="results/ingest/{dataset}/meta.json",
    output:
        RUN_DIR + "/metrics.parquet",
    params:
        run=run_of,
        hotspot_k=lputility.settings(config)["hotspot_k"],
        code=lambda wc: mechanism_code(wc, "metrics"),
    threads: rule_resource("metrics", "threads", 1)
    resources:
        mem_mb=rule_resource("metrics", "mem_mb", 2000),
        runtime=rule_resource("metrics", "runtime", 30),
    log:
        "logs/" + RUN_DIR + "/metrics.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/metrics.py"


rule summary:
    input:
        metrics=run_targets("metrics.parquet"),
        audit=lambda wc: audit_summary_input(),
    output:
        parquet=report(
            "results/summary/metrics.parquet",
            caption="../report/summary.rst",
            category="2. Summary",
        ),
        csv="results/summary/metrics.csv",
        runs=report(
            "results/summary/runs.csv",
            caption="../report/runs.rst",
            category="2. Summary",
        ),
    params:
        code=code_fingerprint("locpriv.stages.metrics"),
        # distance unit per dataset, from the config alone (the wide table puts it in column names)
        units=lambda wc: {ds: lpingest.domain_of(spec)[1] for ds, spec in run_datasets().items()},
    threads: rule_resource("summary", "threads", 1)
    resources:
        mem_mb=rule_resource("summary", "mem_mb", 2000),
        runtime=rule_resource("summary", "runtime", 30),
    log:
        "logs/summary.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/summary.py"
