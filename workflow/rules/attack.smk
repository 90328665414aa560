# attack: localise a fixed sample of users from exactly what the server saw

from locpriv.adversary import bayes as lpbayes


rule attack:
    input:
        views=view_files,
        points="results/ingest/{dataset}/points.parquet",
        meta="results/ingest/{dataset}/meta.json",
        grid="results/encode/{dataset}/grid.nc",
        bandwidth=bandwidth_input,
    output:
        RUN_DIR + "/attack-local_maxima.parquet",
    params:
        run=run_of,
        seed=config["seed"],
        attack=config["attack"],
        users_per_shard=config["users_per_shard"],
        code=lambda wc: mechanism_code(wc, "attack"),
    threads: rule_resource("attack", "threads", 1)
    resources:
        mem_mb=rule_resource("attack", "mem_mb", 2000),
        runtime=rule_resource("attack", "runtime", 30),
    log:
        "logs/" + RUN_DIR + "/attack.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/attack.py"


rule bayes_attack:
    # Shokri et al. (2011)'s Bayes-optimal adversary on the same sampled users
    input:
        views=view_files,
        points="results/ingest/{dataset}/points.parquet",
        meta="results/ingest/{dataset}/meta.json",
        grid="results/encode/{dataset}/grid.nc",
        truth="results/ingest/{dataset}/truth.nc",
        bandwidth=bandwidth_input,
    output:
        RUN_DIR + "/attack-bayes.parquet",
    params:
        run=run_of,
        seed=config["seed"],
        adversary=lpbayes.settings(config),
        users_per_shard=config["users_per_shard"],
        code=lambda wc: mechanism_code(wc, "attack"),
    threads: rule_resource("bayes_attack", "threads", 1)
    resources:
        mem_mb=rule_resource("bayes_attack", "mem_mb", 2000),
        runtime=rule_resource("bayes_attack", "runtime", 30),
    log:
        "logs/" + RUN_DIR + "/bayes_attack.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/bayes_attack.py"
