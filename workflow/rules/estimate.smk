# estimate: the density on the evaluation grid, with its guarantee in the attrs


rule estimate:
    input:
        aggregate=RUN_DIR + "/aggregate.nc",
        grid="results/encode/{dataset}/grid.nc",
        bandwidth=bandwidth_input,
    output:
        RUN_DIR + "/estimate.nc",
    params:
        run=run_of,
        code=lambda wc: mechanism_code(wc, "run"),
    threads: rule_resource("estimate", "threads", 1)
    resources:
        mem_mb=rule_resource("estimate", "mem_mb", 2000),
        runtime=rule_resource("estimate", "runtime", 30),
    log:
        "logs/" + RUN_DIR + "/estimate.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/estimate.py"
