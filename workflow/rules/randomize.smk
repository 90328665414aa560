# randomize: the client side, one fixed-size user shard per job


rule randomize:
    input:
        points="results/ingest/{dataset}/points.parquet",
        meta="results/ingest/{dataset}/meta.json",
        grid="results/encode/{dataset}/grid.nc",
        bandwidth=bandwidth_input,
    output:
        RUN_DIR + "/view/shard~{shard}.parquet",
    params:
        run=run_of,
        seed=config["seed"],
        users_per_shard=config["users_per_shard"],
        code=lambda wc: mechanism_code(wc, "run"),
    threads: rule_resource("randomize", "threads", 1)
    resources:
        mem_mb=rule_resource("randomize", "mem_mb", 2000),
        runtime=rule_resource("randomize", "runtime", 30),
    log:
        "logs/" + RUN_DIR + "/randomize-{shard}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/randomize.py"
