# plots and the Snakemake report; they read the summary (and surfaces the estimates)


def surface_runs(dataset):
    """Per mechanism, the run with the most users (rep 0) on this dataset."""
    best = {}
    for run in RUNS.values():
        if run.dataset != dataset or run.rep != 0:
            continue
        size = float("inf") if run.params["n"] == "all" else run.params["n"]
        if run.mechanism not in best or size > best[run.mechanism][0]:
            best[run.mechanism] = (size, run)
    return [best[m][1] for m in sorted(best)]


def plot_targets():
    datasets = sorted({run.dataset for run in RUNS.values()})
    return ["results/plots/metrics_vs_n.png"] + [
        f"results/plots/surfaces-{ds}.png" for ds in datasets
    ]


rule plot_metrics_vs_n:
    input:
        "results/summary/metrics.parquet",
    output:
        report(
            "results/plots/metrics_vs_n.png",
            caption="../report/metrics_vs_n.rst",
            category="Privacy-utility",
        ),
    params:
        settings=config["plots"],
        code=code_fingerprint("locpriv.plots"),
    threads: rule_resource("plot_metrics_vs_n", "threads", 1)
    resources:
        mem_mb=rule_resource("plot_metrics_vs_n", "mem_mb", 2000),
        runtime=rule_resource("plot_metrics_vs_n", "runtime", 30),
    log:
        "logs/plots/metrics_vs_n.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/plot_metrics_vs_n.py"


rule plot_surfaces:
    input:
        truth="results/ingest/{dataset}/truth.nc",
        estimates=lambda wc: [f"{r.path}/estimate.nc" for r in surface_runs(wc.dataset)],
    output:
        report(
            "results/plots/surfaces-{dataset}.png",
            caption="../report/surfaces.rst",
            category="Density surfaces",
            subcategory="{dataset}",
        ),
    params:
        labels=lambda wc: [f"{r.mechanism} {r.pstr}" for r in surface_runs(wc.dataset)],
        settings=config["plots"],
        code=code_fingerprint("locpriv.plots"),
    threads: rule_resource("plot_surfaces", "threads", 1)
    resources:
        mem_mb=rule_resource("plot_surfaces", "mem_mb", 2000),
        runtime=rule_resource("plot_surfaces", "runtime", 30),
    log:
        "logs/plots/surfaces-{dataset}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/plot_surfaces.py"
