# Location heatmaps under distributed DP with secure aggregation ([DDP-Heatmaps]).
#   ingest (population image) -> run (one job per setting, every rep: dp_heatmap = Alg. 2 or a
#   baseline, per-round transcript and noisy sums, then the metrics) -> summary -> table (Table 1)
#   -> figures (round strip, sweeps: Fig. 7, 8); optional multi-location users on Geolife
#   (§5.7, Table 2's scale / clip bits); `aggregation: secure` runs every sum through
#   pairwise-masking secure aggregation (locpriv.secagg) and adds the protocol's bytes per
#   client (plots/secagg_cost.png).

from locpriv.heatmaps import study as heatmaps_study

try:
    HEATMAPS = heatmaps_study.STUDY.validate(config["studies"]["heatmaps"])
    heatmaps_study.check_data_paths(HEATMAPS)
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

HEATMAPS_POP = results("studies/heatmaps/population.nc")
# one setting's folder: its reps (rep~0, rep~1, ...) are made by one job
HEATMAPS_SETTING = "studies/heatmaps/runs/method~{method}/epsilon~{epsilon}/n~{n}/c~{c}/shard~{shard}/dropout~{dropout}"
HEATMAPS_CODE = code_fingerprint(
    "locpriv.heatmaps.study",
    "locpriv.heatmaps.adaptive",
    "locpriv.heatmaps.consistency",
    "locpriv.heatmaps.baselines",
    "locpriv.heatmaps.aggregation",
    "locpriv.heatmaps.polya",
    "locpriv.heatmaps.prefix_tree",
    "locpriv.heatmaps.clients",
    "locpriv.heatmaps.metrics",
    "locpriv.secagg.protocol",
    "locpriv.secagg.client",
    "locpriv.secagg.server",
    "locpriv.secagg.simulate",
    "locpriv.secagg.pki",
    "locpriv.secagg.shamir",
    "locpriv.secagg.crypto",
    "locpriv.secagg.graph",
)
HEATMAPS_BASE_RUN = heatmaps_study.STUDY.run_dir(
    {"method": "dp_heatmap", **HEATMAPS["base"], "rep": 0}
)


rule heatmaps_ingest:
    input:
        HEATMAPS["population"]["path"] or [],
    output:
        HEATMAPS_POP,
    log:
        logs("studies/heatmaps/ingest.log"),
    benchmark:
        benchmarks("studies/heatmaps/ingest.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        cfg={"population": HEATMAPS["population"]},
        seed=config["seed"],
        code=code_fingerprint("locpriv.heatmaps.study"),
    script:
        "../../../scripts/heatmaps_ingest.py"


rule heatmaps_run:
    # every rep of one setting, each run then its metrics: one job (each step takes well under a second)
    input:
        HEATMAPS_POP,
    output:
        **{
            key: expand(
                results(f"{HEATMAPS_SETTING}/rep~{{rep}}/{name}"),
                rep=range(HEATMAPS["reps"]),
                allow_missing=True,
            )
            for key, name in (
                ("heatmap", "heatmap.nc"),
                ("transcript", "transcript.parquet"),
                ("releases", "releases.parquet"),
                # secure aggregation: every message the server received (empty in the other modes)
                ("protocol", "secagg_transcript.parquet"),
                ("metrics", "metrics.parquet"),
            )
        },
    log:
        logs(f"{HEATMAPS_SETTING}/run.log"),
    benchmark:
        benchmarks(f"{HEATMAPS_SETTING}/run.tsv")
    wildcard_constraints:
        method=r"[a-z_]+",
        epsilon=r"[0-9.e+-]+",
        n=r"\d+",
        c=r"[0-9.e+-]+",
        shard=r"\d+",
        dropout=r"[0-9.e+-]+",
    conda:
        "../../../envs/locpriv.yaml"
    params:
        setting=heatmaps_study.setting_of,
        reps=HEATMAPS["reps"],
        seed=config["seed"],
        aggregation=HEATMAPS["aggregation"],
        secagg=HEATMAPS["secagg"],
        adaptive=HEATMAPS["adaptive"],
        code=HEATMAPS_CODE,
    script:
        "../../../scripts/heatmaps_run.py"


rule heatmaps_summary:
    input:
        [
            results(
                f"studies/heatmaps/runs/{heatmaps_study.STUDY.run_dir(r)}/metrics.parquet"
            )
            for r in heatmaps_study.STUDY.runs(HEATMAPS)
        ],
    output:
        parquet=results("studies/heatmaps/summary.parquet"),
        csv=results("studies/heatmaps/summary.csv"),
    log:
        logs("studies/heatmaps/summary.log"),
    benchmark:
        benchmarks("studies/heatmaps/summary.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        code=code_fingerprint("locpriv.heatmaps.study"),
    script:
        "../../../scripts/heatmaps_summary.py"


rule heatmaps_table:
    input:
        summary=rules.heatmaps_summary.output.parquet,
    output:
        table=results("studies/heatmaps/table1.csv"),
    log:
        logs("studies/heatmaps/table.log"),
    benchmark:
        benchmarks("studies/heatmaps/table.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        base=HEATMAPS["base"],
        code=code_fingerprint("locpriv.heatmaps.tables"),
    script:
        "../../../scripts/heatmaps_table.py"


rule heatmaps_figures:
    input:
        summary=rules.heatmaps_summary.output.parquet,
        population=HEATMAPS_POP,
        releases=(
            results(f"studies/heatmaps/runs/{HEATMAPS_BASE_RUN}/releases.parquet")
            if "dp_heatmap" in HEATMAPS["methods"]
            else []
        ),
    output:
        sweeps=report(
            results("studies/heatmaps/plots/sweeps.png"),
            caption="../../report/heatmaps-sweeps.rst",
            category="Location heatmaps (distributed DP)",
        ),
        rounds=report(
            results("studies/heatmaps/plots/rounds.png"),
            caption="../../report/heatmaps-rounds.rst",
            category="Location heatmaps (distributed DP)",
        ),
    log:
        logs("studies/heatmaps/figures.log"),
    benchmark:
        benchmarks("studies/heatmaps/figures.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        base=HEATMAPS["base"],
        dpi=HEATMAPS["plots"]["dpi"],
        code=code_fingerprint("locpriv.heatmaps.plots"),
    script:
        "../../../scripts/heatmaps_figures.py"


rule heatmaps_secagg_cost:
    input:
        protocol=results(
            f"studies/heatmaps/runs/{HEATMAPS_BASE_RUN}/secagg_transcript.parquet"
        ),
        transcript=results(
            f"studies/heatmaps/runs/{HEATMAPS_BASE_RUN}/transcript.parquet"
        ),
    output:
        report(
            results("studies/heatmaps/plots/secagg_cost.png"),
            caption="../../report/heatmaps-secagg.rst",
            category="Location heatmaps (distributed DP)",
        ),
    log:
        logs("studies/heatmaps/secagg_cost.log"),
    benchmark:
        benchmarks("studies/heatmaps/secagg_cost.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        dpi=HEATMAPS["plots"]["dpi"],
        code=code_fingerprint("locpriv.heatmaps.plots"),
    script:
        "../../../scripts/heatmaps_secagg_cost.py"


rule heatmaps_multi:
    input:
        (HEATMAPS["multi_location"] or {}).get("path") or [],
    output:
        table=results("studies/heatmaps/multi_location.parquet"),
    log:
        logs("studies/heatmaps/multi.log"),
    benchmark:
        benchmarks("studies/heatmaps/multi.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        cfg={
            "multi_location": HEATMAPS["multi_location"],
            "aggregation": HEATMAPS["aggregation"],
            "secagg": HEATMAPS["secagg"],
        },
        seed=config["seed"],
        code=code_fingerprint(
            "locpriv.heatmaps.multi_study",
            "locpriv.heatmaps.multi_location",
            "locpriv.heatmaps.clients",
            "locpriv.secagg.protocol",
            "locpriv.secagg.client",
            "locpriv.secagg.server",
            "locpriv.secagg.simulate",
            "locpriv.secagg.pki",
            "locpriv.secagg.shamir",
            "locpriv.secagg.crypto",
            "locpriv.secagg.graph",
        ),
    script:
        "../../../scripts/heatmaps_multi.py"


rule heatmaps_multi_plot:
    input:
        table=rules.heatmaps_multi.output.table,
    output:
        report(
            results("studies/heatmaps/plots/multi_location.png"),
            caption="../../report/heatmaps-multi.rst",
            category="Location heatmaps (distributed DP)",
        ),
    log:
        logs("studies/heatmaps/multi_plot.log"),
    benchmark:
        benchmarks("studies/heatmaps/multi_plot.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        dpi=HEATMAPS["plots"]["dpi"],
        code=code_fingerprint("locpriv.heatmaps.plots"),
    script:
        "../../../scripts/heatmaps_multi_plot.py"


if HEATMAPS["secagg_scale"]:
    # one sub-query in secure mode at population scale: deal -> one job per batch of shards -> gather
    # (wall time from each job's benchmark file, peak memory from the job itself)
    from locpriv.heatmaps import secagg_scale

    SECAGG_SCALE = HEATMAPS["secagg_scale"]
    SECAGG_SCALE_BATCHES = secagg_scale.shard_batches(SECAGG_SCALE)
    SECAGG_SCALE_CODE = code_fingerprint(
        "locpriv.heatmaps.secagg_scale",
        "locpriv.heatmaps.clients",
        "locpriv.secagg.protocol",
        "locpriv.secagg.client",
        "locpriv.secagg.server",
        "locpriv.secagg.simulate",
        "locpriv.secagg.graph",
        "locpriv.secagg.pki",
        "locpriv.secagg.shamir",
        "locpriv.secagg.crypto",
    )

    rule heatmaps_secagg_deal:
        input:
            HEATMAPS_POP,
        output:
            results("studies/heatmaps/secagg_scale/deal.parquet"),
        log:
            logs("studies/heatmaps/secagg_scale/deal.log"),
        benchmark:
            benchmarks("studies/heatmaps/secagg_scale/deal.tsv")
        conda:
            "../../../envs/locpriv.yaml"
        params:
            scale=SECAGG_SCALE,
            seed=config["seed"],
            code=SECAGG_SCALE_CODE,
        script:
            "../../../scripts/heatmaps_secagg_deal.py"

    rule heatmaps_secagg_shard:
        input:
            rules.heatmaps_secagg_deal.output,
        output:
            results("studies/heatmaps/secagg_scale/batch~{batch}.parquet"),
        log:
            logs("studies/heatmaps/secagg_scale/batch~{batch}.log"),
        benchmark:
            benchmarks("studies/heatmaps/secagg_scale/batch~{batch}.tsv")
        wildcard_constraints:
            batch=r"\d+",
        conda:
            "../../../envs/locpriv.yaml"
        params:
            shards=lambda wc: SECAGG_SCALE_BATCHES[int(wc.batch)],
            scale=SECAGG_SCALE,
            epsilon=HEATMAPS["base"]["epsilon"],
            secagg=HEATMAPS["secagg"],
            seed=config["seed"],
            code=SECAGG_SCALE_CODE,
        script:
            "../../../scripts/heatmaps_secagg_shard.py"

    rule heatmaps_secagg_scale:
        input:
            batches=expand(
                results("studies/heatmaps/secagg_scale/batch~{batch}.parquet"),
                batch=range(len(SECAGG_SCALE_BATCHES)),
            ),
            benchmarks=expand(
                benchmarks("studies/heatmaps/secagg_scale/batch~{batch}.tsv"),
                batch=range(len(SECAGG_SCALE_BATCHES)),
            ),
        output:
            histogram=results("studies/heatmaps/secagg_scale/histogram.parquet"),
            table=results("studies/heatmaps/secagg_scale/shards.csv"),
        log:
            logs("studies/heatmaps/secagg_scale/gather.log"),
        benchmark:
            benchmarks("studies/heatmaps/secagg_scale/gather.tsv")
        conda:
            "../../../envs/locpriv.yaml"
        params:
            code=SECAGG_SCALE_CODE,
        script:
            "../../../scripts/heatmaps_secagg_scale.py"


STUDY_TARGETS["heatmaps"] = [
    results("studies/heatmaps/summary.csv"),
    results("studies/heatmaps/table1.csv"),
    results("studies/heatmaps/table1.html"),
    results("studies/heatmaps/plots/sweeps.png"),
]
if "dp_heatmap" in HEATMAPS["methods"]:
    STUDY_TARGETS["heatmaps"].append(results("studies/heatmaps/plots/rounds.png"))
if "dp_heatmap" in HEATMAPS["methods"] and HEATMAPS["aggregation"] == "secure":
    STUDY_TARGETS["heatmaps"].append(results("studies/heatmaps/plots/secagg_cost.png"))
if HEATMAPS["secagg_scale"]:
    STUDY_TARGETS["heatmaps"].append(
        results("studies/heatmaps/secagg_scale/shards.csv")
    )
if HEATMAPS["multi_location"]:
    STUDY_TARGETS["heatmaps"].append(
        results("studies/heatmaps/plots/multi_location.png")
    )
