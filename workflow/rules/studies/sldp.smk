# Semi-local DP ([SLDP]): interactive private quadtree, mean estimation, range queries.
#   run (one job per task x N x epsilon, every rep: client data, Alg. 1/2 transcript and partition,
#   then the task's answers vs the baselines) -> summary -> plots

from locpriv.sldp import study as sldp_study

try:
    SLDP = sldp_study.STUDY.validate(config["studies"]["sldp"])
    sldp_study.check_data_paths(SLDP)
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

# one setting's folder: its reps (rep~0, rep~1, ...) are made by one job
SLDP_SETTING = "studies/sldp/runs/task~{task}/n~{n}/epsilon~{epsilon}"
SLDP_CODE = code_fingerprint("locpriv.sldp.study")
# Fig. 1 shows the smallest mean-estimation run at its largest epsilon
SLDP_FIG1 = {
    "task": "mean",
    "n": min(SLDP["mean"]["n"]),
    "epsilon": max(SLDP["mean"]["epsilon"]),
    "rep": 0,
}


rule sldp_run:
    # every rep of one setting, each the protocol then the evaluation: one job (each step takes well
    # under a second)
    input:
        data=lambda wc: (
            SLDP["range"]["path"]
            if wc.task == "range" and SLDP["range"]["path"]
            else []
        ),
    output:
        **{
            key: expand(
                results(f"{SLDP_SETTING}/rep~{{rep}}/{name}"),
                rep=range(SLDP["reps"]),
                allow_missing=True,
            )
            for key, name in (
                ("partition", "partition.parquet"),
                ("rounds", "transcript-rounds.parquet"),
                ("reports", "transcript-reports.parquet"),
                ("regions", "user-regions.parquet"),
                ("evaluation", "evaluation.parquet"),
            )
        },
    log:
        logs(f"{SLDP_SETTING}/run.log"),
    benchmark:
        benchmarks(f"{SLDP_SETTING}/run.tsv")
    wildcard_constraints:
        task="mean|range",
        n=r"\d+",
        epsilon=r"[0-9.e+-]+",
    conda:
        "../../../envs/locpriv.yaml"
    params:
        # the shared protocol settings plus the run's own task section only
        cfg=lambda wc: sldp_study.protocol_config(SLDP, wc.task),
        reps=SLDP["reps"],
        seed=config["seed"],
        code=SLDP_CODE,
    script:
        "../../../scripts/sldp_run.py"


rule sldp_classify:
    input:
        data=SLDP["classify"]["path"] if SLDP["classify"] else [],
    output:
        expand(
            results(
                "studies/sldp/runs/task~classify/n~all/epsilon~{{epsilon}}/rep~{rep}/evaluation.parquet"
            ),
            rep=range(SLDP["reps"]),
        ),
    log:
        logs("studies/sldp/runs/task~classify/n~all/epsilon~{epsilon}/classify.log"),
    benchmark:
        benchmarks(
            "studies/sldp/runs/task~classify/n~all/epsilon~{epsilon}/classify.tsv"
        )
    wildcard_constraints:
        epsilon=r"[0-9.e+-]+",
    conda:
        "../../../envs/locpriv.yaml"
    params:
        cfg={
            **{k: SLDP[k] for k in sldp_study.PROTOCOL_KEYS},
            "classify": SLDP["classify"],
        },
        reps=SLDP["reps"],
        seed=config["seed"],
        code=SLDP_CODE,
    script:
        "../../../scripts/sldp_classify.py"


rule sldp_summary:
    input:
        [
            results(
                f"studies/sldp/runs/{sldp_study.STUDY.run_dir(r)}/evaluation.parquet"
            )
            for r in sldp_study.STUDY.runs(SLDP)
        ],
    output:
        parquet=results("studies/sldp/summary.parquet"),
        csv=results("studies/sldp/summary.csv"),
    log:
        logs("studies/sldp/summary.log"),
    benchmark:
        benchmarks("studies/sldp/summary.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        code=SLDP_CODE,
    script:
        "../../../scripts/sldp_summary.py"


rule sldp_plot:
    input:
        rules.sldp_summary.output.parquet,
    output:
        report(
            results("studies/sldp/plots/mse-mre.png"),
            caption="../../report/sldp-plot.rst",
            category="Semi-local DP",
        ),
    log:
        logs("studies/sldp/plot.log"),
    benchmark:
        benchmarks("studies/sldp/plot.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        dpi=SLDP["plots"]["dpi"],
        code=SLDP_CODE,
    script:
        "../../../scripts/sldp_plot.py"


rule sldp_plot_partition:
    input:
        partition=results(
            f"studies/sldp/runs/{sldp_study.run_dir(SLDP_FIG1)}/partition.parquet"
        ),
        regions=results(
            f"studies/sldp/runs/{sldp_study.run_dir(SLDP_FIG1)}/user-regions.parquet"
        ),
    output:
        report(
            results("studies/sldp/plots/partition.png"),
            caption="../../report/sldp-partition.rst",
            category="Semi-local DP",
        ),
    log:
        logs("studies/sldp/plot-partition.log"),
    benchmark:
        benchmarks("studies/sldp/plot-partition.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        run=SLDP_FIG1,
        cfg=sldp_study.protocol_config(SLDP, "mean"),
        seed=config["seed"],
        dpi=SLDP["plots"]["dpi"],
        code=SLDP_CODE,
    script:
        "../../../scripts/sldp_plot_partition.py"


STUDY_TARGETS["sldp"] = [
    results("studies/sldp/summary.csv"),
    results("studies/sldp/plots/mse-mre.png"),
    results("studies/sldp/plots/partition.png"),
]
