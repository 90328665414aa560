# randomize: the client side; one job makes a batch of fixed-size user shards in turn
# (config shards_per_job).  A run's first batch is made by its group's estimate job (aggregate.smk),
# so a small run needs no randomize job and a large one still fans out over batches 1, 2, ...


rule randomize:
    input:
        points=results("ingest/{dataset}/points.parquet"),
        meta=results("ingest/{dataset}/meta.json"),
        grid=GRID_FILE,
        bandwidth=bandwidth_input,
    output:
        directory(run_path("view/batch~{batch}")),
    log:
        run_path("randomize-{batch}.log", logs),
    benchmark:
        run_path("randomize-{batch}.tsv", benchmarks)
    wildcard_constraints:
        batch=r"[1-9]\d*",
    conda:
        "../../envs/locpriv.yaml"
    params:
        run=run_of,
        shards=shard_batch,
        seed=config["seed"],
        users_per_shard=config["users_per_shard"],
        code=lambda wc: mechanism_code(wc, "run"),
    script:
        "../../scripts/randomize.py"
