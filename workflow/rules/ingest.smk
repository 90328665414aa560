# ingest: data in, one row per location out (+ metadata, + reference density)


def ingest_source(wc):
    spec = dataset_spec(wc)
    return spec["path"] if spec["source"] == "points" else []


checkpoint ingest:
    # a checkpoint: the number of user shards downstream depends on how many
    # users survive loading and clipping
    cache: True
    input:
        source=ingest_source,
    output:
        points="results/ingest/{dataset}/points.parquet",
        meta="results/ingest/{dataset}/meta.json",
    params:
        spec=dataset_spec,
        seed=config["seed"],
        code=code_fingerprint("locpriv.stages.prepare"),
    threads: rule_resource("ingest", "threads", 1)
    resources:
        mem_mb=rule_resource("ingest", "mem_mb", 2000),
        runtime=rule_resource("ingest", "runtime", 30),
    log:
        "logs/ingest/{dataset}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/ingest.py"


rule bandwidth:
    cache: True
    input:
        points="results/ingest/{dataset}/points.parquet",
    output:
        "results/ingest/{dataset}/bandwidth.json",
    params:
        k=lambda wc: dataset_spec(wc).get("knn_k", lpconfig.DEFAULT_KNN_K),
        seed=config["seed"],
        code=code_fingerprint("locpriv.stages.prepare"),
    threads: rule_resource("bandwidth", "threads", 1)
    resources:
        mem_mb=rule_resource("bandwidth", "mem_mb", 2000),
        runtime=rule_resource("bandwidth", "runtime", 30),
    log:
        "logs/bandwidth/{dataset}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/bandwidth.py"


rule truth:
    cache: True
    input:
        points="results/ingest/{dataset}/points.parquet",
        grid="results/encode/{dataset}/grid.nc",
        bandwidth=bandwidth_input,
    output:
        "results/ingest/{dataset}/truth.nc",
    params:
        spec=dataset_spec,
        code=code_fingerprint("locpriv.stages.prepare"),
    threads: rule_resource("truth", "threads", 1)
    resources:
        mem_mb=rule_resource("truth", "mem_mb", 2000),
        runtime=rule_resource("truth", "runtime", 30),
    log:
        "logs/truth/{dataset}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/truth.py"


rule pooled_kde:
    # [RFF-KDE]'s utility reference: the non-private KDE of the same users and bandwidth
    cache: True
    input:
        points="results/ingest/{dataset}/points.parquet",
        meta="results/ingest/{dataset}/meta.json",
        grid="results/encode/{dataset}/grid.nc",
        bandwidth=lambda wc: f"results/ingest/{wc.dataset}/bandwidth.json" if wc.h == "knn" else [],
    output:
        "results/ingest/{dataset}/pooled-kde/n~{n}_h~{h}.nc",
    params:
        code=code_fingerprint("locpriv.stages.prepare"),
    threads: rule_resource("pooled_kde", "threads", 1)
    resources:
        mem_mb=rule_resource("pooled_kde", "mem_mb", 2000),
        runtime=rule_resource("pooled_kde", "runtime", 30),
    log:
        "logs/pooled_kde/{dataset}/n~{n}_h~{h}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/pooled_kde.py"
