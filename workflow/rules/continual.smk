# continual: every heatmap_flat setting on a dataset with releases {window: ..., mode: continual} is one
# release over its T windows, the binary tree's nodes (locpriv.stages.continual); it reads the windows'
# ingested points and is charged once to the dataset's ledger (workflow/Snakefile, locpriv.ledger)


rule continual:
    input:
        points=lambda wc: [
            results(f"ingest/{w}/points.parquet")
            for w in continual_setting(wc).windows
        ],
    output:
        nodes=results(f"{CONTINUAL_RUN}/nodes.parquet"),
        maps=results(f"{CONTINUAL_RUN}/maps.parquet"),
        metrics=results(f"{CONTINUAL_RUN}/metrics.csv"),
    log:
        logs(f"{CONTINUAL_RUN}/continual.log"),
    benchmark:
        benchmarks(f"{CONTINUAL_RUN}/continual.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        setting=lambda wc: lpcontinual.as_params(continual_setting(wc)),
        spec=lambda wc: config["datasets"][continual_setting(wc).windows[0]],
        person_rows=lambda wc: lpledger.continual_rows(config, continual_setting(wc)),
        seed=config["seed"],
        code=lambda wc: code_fingerprint(
            "locpriv.stages.continual", lpmechanisms.get(wc.mechanism).__module__
        ),
    script:
        "../../scripts/continual.py"


rule continual_summary:
    input:
        [results(f"{setting.path}/metrics.csv") for setting in CONTINUAL],
    output:
        update(results("summary/continual.csv")),
    log:
        logs("summary/continual.log"),
    benchmark:
        benchmarks("summary/continual.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        code=code_fingerprint("locpriv.stages.continual"),
    script:
        "../../scripts/continual_summary.py"
