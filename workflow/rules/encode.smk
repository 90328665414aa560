# encode: the public structures the server broadcasts; nothing here reads private data


rule encode_grid:
    cache: True
    output:
        "results/encode/{dataset}/grid.nc",
    params:
        spec=dataset_spec,
        grid=config["grid"],
        code=code_fingerprint("locpriv.stages.prepare"),
    threads: rule_resource("encode_grid", "threads", 1)
    resources:
        mem_mb=rule_resource("encode_grid", "mem_mb", 2000),
        runtime=rule_resource("encode_grid", "runtime", 30),
    log:
        "logs/encode/{dataset}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/encode_grid.py"
