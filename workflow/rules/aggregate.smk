# aggregate: the server merges shard partials with the mechanism's combine


rule aggregate:
    input:
        views=view_files,
        grid="results/encode/{dataset}/grid.nc",
        bandwidth=bandwidth_input,
    output:
        RUN_DIR + "/aggregate.nc",
    params:
        run=run_of,
        code=lambda wc: mechanism_code(wc, "run"),
    threads: rule_resource("aggregate", "threads", 1)
    resources:
        mem_mb=rule_resource("aggregate", "mem_mb", 2000),
        runtime=rule_resource("aggregate", "runtime", 30),
    log:
        "logs/" + RUN_DIR + "/aggregate.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/aggregate.py"
