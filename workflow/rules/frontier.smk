# the shared utility workload and the privacy-utility frontier (one adversary, every mechanism)


rule range_workload:
    # one set of anchored range queries per dataset, answered by every mechanism and the truth
    input:
        points=results("ingest/{dataset}/points.parquet"),
        grid=GRID_FILE,
    output:
        results("ingest/{dataset}/range-workload.parquet"),
    log:
        logs("range_workload/{dataset}.log"),
    benchmark:
        benchmarks("range_workload/{dataset}.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        utility=lputility.settings(config),
        seed=config["seed"],
        code=code_fingerprint("locpriv.stages.utility"),
    script:
        "../../scripts/range_workload.py"


rule frontier:
    input:
        results("summary/metrics.parquet"),
    output:
        # update(): a failed run restores the previous table and figure instead of deleting them
        csv=update(results("summary/frontier.csv")),
        png=update(
            report(
                results("plots/frontier.png"),
                caption="../report/frontier.rst",
                category="1. Frontier",
            )
        ),
        html=update(
            report(
                results("summary/frontier.html"),
                caption="../report/frontier_table.rst",
                category="1. Frontier",
            )
        ),
        # the recommendation alone, also shown on the report's first page (workflow.rst)
        recommendation=update(
            report(
                results("summary/recommendation.html"),
                caption="../report/recommendation.rst",
                category="1. Frontier",
            )
        ),
    log:
        logs("frontier.log"),
    benchmark:
        benchmarks("frontier.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        settings=lpfrontier.settings(config),
        levels=frontier_levels,
        units=dataset_units,
        dpi=config["plots"].get("dpi", 110),
        code=code_fingerprint("locpriv.frontier"),
    script:
        "../../scripts/frontier.py"
