# attack: localise a fixed sample of users from exactly what the server saw, with both
# adversaries in one job (same views, same sampled users): [RFF-KDE]'s local maxima and
# Shokri et al. (2011)'s Bayes-optimal adversary.


rule attack:
    input:
        views=view_dirs,
        points=results("ingest/{dataset}/points.parquet"),
        meta=results("ingest/{dataset}/meta.json"),
        grid=GRID_FILE,
        truth=TRUTH_FILE,
        bandwidth=bandwidth_input,
    output:
        local_maxima=run_path("attack-local_maxima.parquet"),
        bayes=run_path("attack-bayes.parquet"),
    log:
        run_path("attack.log", logs),
    benchmark:
        run_path("attack.tsv", benchmarks)
    conda:
        "../../envs/locpriv.yaml"
    params:
        run=run_of,
        views=view_files,
        seed=config["seed"],
        attack=config["attack"],
        adversary=lpbayes.settings(config),
        users_per_shard=config["users_per_shard"],
        code=lambda wc: mechanism_code(wc, "attack"),
    script:
        "../../scripts/attack.py"
