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


SUMMARY_PLOTS = ["metrics_vs_n", "tradeoff"]


def rff_runs():
    return [run for run in RUNS.values() if run.mechanism == "rff"]


def plot_targets():
    if not RUNS:
        return []
    datasets = sorted({run.dataset for run in RUNS.values()})
    plots = list(SUMMARY_PLOTS)
    if len({run.params["B"] for run in rff_runs()}) > 1:
        plots.append("gain_per_cost")
    targets = [f"results/plots/{p}.png" for p in plots]
    targets += [f"results/plots/surfaces-{ds}.png" for ds in datasets]
    # the RFF paper's toy figures illustrate the method, not the user's data: only when asked for
    if rff_runs() and config["plots"].get("illustrations", False):
        targets += ["results/plots/rff-fig3-convergence.png", "results/plots/rff-fig4-user-surfaces.png"]
    return targets


rule plot_summary:
    input:
        "results/summary/metrics.parquet",
    output:
        report(
            "results/plots/{plot}.png",
            caption="../report/summary_plots.rst",
            category="3. Privacy-utility (per paper)",
        ),
    wildcard_constraints:
        plot="metrics_vs_n|tradeoff|gain_per_cost",
    params:
        settings=config["plots"],
        code=code_fingerprint("locpriv.plots"),
    threads: rule_resource("plot_summary", "threads", 1)
    resources:
        mem_mb=rule_resource("plot_summary", "mem_mb", 2000),
        runtime=rule_resource("plot_summary", "runtime", 30),
    log:
        "logs/plots/{plot}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/plot_summary.py"


rule plot_rff_illustrations:
    output:
        fig3=report(
            "results/plots/rff-fig3-convergence.png",
            caption="../report/rff_fig3.rst",
            category="5. RFF paper illustrations",
        ),
        fig4=report(
            "results/plots/rff-fig4-user-surfaces.png",
            caption="../report/rff_fig4.rst",
            category="5. RFF paper illustrations",
        ),
    params:
        seed=config["seed"],
        dpi=config["plots"].get("dpi", 110),
        code=code_fingerprint("locpriv.plots_rff"),
    threads: rule_resource("plot_rff_illustrations", "threads", 1)
    resources:
        mem_mb=rule_resource("plot_rff_illustrations", "mem_mb", 2000),
        runtime=rule_resource("plot_rff_illustrations", "runtime", 30),
    log:
        "logs/plots/rff-illustrations.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/plot_rff_illustrations.py"


rule plot_surfaces:
    input:
        truth="results/ingest/{dataset}/truth.nc",
        estimates=lambda wc: [f"{r.path}/estimate.nc" for r in surface_runs(wc.dataset)],
    output:
        report(
            "results/plots/surfaces-{dataset}.png",
            caption="../report/surfaces.rst",
            category="4. Density surfaces",
            subcategory="{dataset}",
        ),
    params:
        labels=lambda wc: [f"{r.mechanism}: " + ", ".join(f"{k}={v}" for k, v in r.params.items())
                           for r in surface_runs(wc.dataset)],
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
