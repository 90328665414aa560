# encode: the public structures the server broadcasts; nothing here reads private data


# The grid's size is in its path (GRID_FILE): another grid never overwrites this one.
# cache: True (shareable with --cache), so no benchmark: (Snakemake forbids both on one rule).
rule encode_grid:
    output:
        GRID_FILE,
    log:
        logs(f"encode/{{dataset}}/{GRID_ID}.log"),
    cache: True
    conda:
        "../../envs/locpriv.yaml"
    params:
        spec=dataset_spec,
        grid=config["grid"],
        code=code_fingerprint("locpriv.stages.prepare"),
    script:
        "../../scripts/encode_grid.py"
