# the shared utility workload and the privacy-utility frontier (one adversary, every mechanism)

from locpriv import frontier as lpfrontier
from locpriv.datasets import ingest as lpingest
from locpriv.stages import utility as lputility


rule range_workload:
    # one set of anchored range queries per dataset, answered by every mechanism and the truth
    input:
        points="results/ingest/{dataset}/points.parquet",
        grid="results/encode/{dataset}/grid.nc",
    output:
        "results/ingest/{dataset}/range-workload.parquet",
    params:
        utility=lputility.settings(config),
        seed=config["seed"],
        code=code_fingerprint("locpriv.stages.utility"),
    threads: rule_resource("range_workload", "threads", 1)
    resources:
        mem_mb=rule_resource("range_workload", "mem_mb", 2000),
        runtime=rule_resource("range_workload", "runtime", 30),
    log:
        "logs/range_workload/{dataset}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/range_workload.py"


def frontier_targets():
    return ["results/summary/frontier.csv", "results/plots/frontier.png"] if RUNS else []


rule frontier:
    input:
        "results/summary/metrics.parquet",
    output:
        csv=report(
            "results/summary/frontier.csv",
            caption="../report/frontier_table.rst",
            category="1. Frontier",
        ),
        png=report(
            "results/plots/frontier.png",
            caption="../report/frontier.rst",
            category="1. Frontier",
        ),
    params:
        settings=lpfrontier.settings(config),
        levels=lambda wc: lpfrontier.dataset_levels(
            run_datasets(), lpfrontier.settings(config)["levels"],
            {ds: lpingest.domain_of(spec)[0] for ds, spec in run_datasets().items()}),
        units=lambda wc: {ds: lpingest.domain_of(spec)[1] for ds, spec in run_datasets().items()},
        dpi=config["plots"].get("dpi", 110),
        code=code_fingerprint("locpriv.frontier"),
    threads: rule_resource("frontier", "threads", 1)
    resources:
        mem_mb=rule_resource("frontier", "mem_mb", 2000),
        runtime=rule_resource("frontier", "runtime", 30),
    log:
        "logs/frontier.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/frontier.py"
