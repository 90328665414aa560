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
    log:
        "logs/" + RUN_DIR + "/aggregate.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/aggregate.py"
