# encode: the public structures the server broadcasts; nothing here reads private data


rule encode_grid:
    output:
        "results/encode/{dataset}/grid.nc",
    params:
        spec=dataset_spec,
        grid=config["grid"],
        code=code_fingerprint("locpriv.stages.prepare"),
    log:
        "logs/encode/{dataset}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/encode_grid.py"
