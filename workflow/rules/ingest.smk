# ingest: data in, one row per location out (+ metadata, + reference density)
#
# ingest, bandwidth, truth and pooled_kde (and encode_grid) are `cache: True`, shareable between
# checkouts with --cache; Snakemake forbids a benchmark: on a cached rule (a result taken from the
# cache has no run time), so these five rules have none.


# a checkpoint: the number of user shards downstream depends on how many users survive
# loading and clipping
checkpoint ingest:
    input:
        source=ingest_source,
    output:
        points=results("ingest/{dataset}/points.parquet"),
        meta=results("ingest/{dataset}/meta.json"),
    log:
        logs("ingest/{dataset}.log"),
    cache: True
    conda:
        "../../envs/locpriv.yaml"
    params:
        spec=dataset_spec,
        seed=config["seed"],
        code=code_fingerprint("locpriv.stages.prepare"),
    script:
        "../../scripts/ingest.py"


rule ingest_counts:
    # rows read, dropped per reason and kept, per dataset (the report shows it as summary/ingest.html)
    input:
        meta=expand(
            results("ingest/{dataset}/meta.json"), dataset=sorted(run_datasets())
        ),
    output:
        update(results("summary/ingest.csv")),
    log:
        logs("summary/ingest.log"),
    benchmark:
        benchmarks("summary/ingest.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        datasets=sorted(run_datasets()),
        code=code_fingerprint("locpriv.ingest_counts"),
    script:
        "../../scripts/ingest_counts.py"


rule bandwidth:
    input:
        points=results("ingest/{dataset}/points.parquet"),
    output:
        results("ingest/{dataset}/bandwidth.json"),
    log:
        logs("bandwidth/{dataset}.log"),
    cache: True
    conda:
        "../../envs/locpriv.yaml"
    params:
        k=lambda wc: dataset_spec(wc).get("knn_k", lpconfig.DEFAULT_KNN_K),
        seed=config["seed"],
        code=code_fingerprint("locpriv.stages.prepare"),
    script:
        "../../scripts/bandwidth.py"


rule truth:
    input:
        points=results("ingest/{dataset}/points.parquet"),
        grid=GRID_FILE,
        bandwidth=bandwidth_input,
    output:
        TRUTH_FILE,
    log:
        logs(f"truth/{{dataset}}/{GRID_ID}.log"),
    cache: True
    conda:
        "../../envs/locpriv.yaml"
    params:
        spec=dataset_spec,
        code=code_fingerprint("locpriv.stages.prepare"),
    script:
        "../../scripts/truth.py"


rule pooled_kde:
    input:
        points=results("ingest/{dataset}/points.parquet"),
        meta=results("ingest/{dataset}/meta.json"),
        grid=GRID_FILE,
        bandwidth=lambda wc: bandwidth_file(wc) if wc.h == "knn" else [],
    output:
        POOLED_FILE,
    log:
        logs(f"pooled_kde/{{dataset}}/{GRID_ID}/n~{{n}}_h~{{h}}.log"),
    # [RFF-KDE]'s utility reference: the non-private KDE of the same users and bandwidth
    cache: True
    conda:
        "../../envs/locpriv.yaml"
    params:
        code=code_fingerprint("locpriv.stages.prepare"),
    script:
        "../../scripts/pooled_kde.py"
