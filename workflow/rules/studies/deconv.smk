# Laplace LDP with deconvoluting KDE and Nadaraya-Watson regression ([Deconv-LDP]).
#   run (one job per split: clients' true x, y and train/test, then per epsilon the Laplace reports
#   and the fit: LOO-CV bandwidth, deconvoluting NW vs linear/logistic, densities)
#   -> summary (table) -> plots (one figure per dataset)
# The 2-D location branch of the same mechanism is the `laplace_ldp` mechanism of the main DAG.

from locpriv.deconv import study as deconv_study

try:
    DECONV = deconv_study.STUDY.validate(config["studies"]["deconv"])
    deconv_study.check_data_paths(DECONV)
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

DECONV_SPLIT = "studies/deconv/runs/dataset~{dataset}/n~{n}/rep~{rep}"
DECONV_EPSILONS = deconv_study.epsilon_labels(DECONV)
DECONV_CODE = code_fingerprint("locpriv.deconv.study")


rule deconv_run:
    # split + every epsilon's randomize and fit in one job: each step takes well under a second
    input:
        lambda wc: deconv_study.data_paths(DECONV["datasets"][wc.dataset]),
    output:
        train=results(f"{DECONV_SPLIT}/train.parquet"),
        test=results(f"{DECONV_SPLIT}/test.parquet"),
        reports=expand(
            results(f"{DECONV_SPLIT}/epsilon~{{epsilon}}/reports.parquet"),
            epsilon=DECONV_EPSILONS,
            allow_missing=True,
        ),
        metrics=expand(
            results(f"{DECONV_SPLIT}/epsilon~{{epsilon}}/metrics.parquet"),
            epsilon=DECONV_EPSILONS,
            allow_missing=True,
        ),
        curves=expand(
            results(f"{DECONV_SPLIT}/epsilon~{{epsilon}}/curves.parquet"),
            epsilon=DECONV_EPSILONS,
            allow_missing=True,
        ),
    log:
        logs(f"{DECONV_SPLIT}/run.log"),
    benchmark:
        benchmarks(f"{DECONV_SPLIT}/run.tsv")
    wildcard_constraints:
        dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
        n=r"\d+|all",
        rep=r"\d+",
    conda:
        "../../../envs/locpriv.yaml"
    params:
        # the run needs the estimator settings and its own dataset only
        cfg=lambda wc: deconv_study.fit_config(DECONV, wc.dataset),
        seed=config["seed"],
        code=code_fingerprint(
            "locpriv.deconv.study",
            "locpriv.deconv.estimators",
            "locpriv.deconv.kernels",
            "locpriv.deconv.data",
            "locpriv.laplace_ldp",
        ),
    script:
        "../../../scripts/deconv_run.py"


rule deconv_summary:
    input:
        [
            results(
                f"studies/deconv/runs/{deconv_study.STUDY.run_dir(r)}/metrics.parquet"
            )
            for r in deconv_study.STUDY.runs(DECONV)
        ],
    output:
        parquet=results("studies/deconv/summary.parquet"),
        csv=results("studies/deconv/summary.csv"),
    log:
        logs("studies/deconv/summary.log"),
    benchmark:
        benchmarks("studies/deconv/summary.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        code=DECONV_CODE,
    script:
        "../../../scripts/deconv_summary.py"


rule deconv_plot:
    input:
        unpack(
            lambda wc: {
                k: results(v)
                for k, v in deconv_study.figure_files(DECONV, wc.dataset).items()
            }
        ),
    output:
        report(
            results("studies/deconv/plots/{dataset}.png"),
            caption="../../report/deconv-plot.rst",
            category="Deconvolution (Laplace LDP)",
        ),
    log:
        logs("studies/deconv/plot-{dataset}.log"),
    benchmark:
        benchmarks("studies/deconv/plot-{dataset}.tsv")
    wildcard_constraints:
        dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    conda:
        "../../../envs/locpriv.yaml"
    params:
        cfg=DECONV,
        dpi=DECONV["plots"]["dpi"],
        code=code_fingerprint("locpriv.deconv.plots"),
    script:
        "../../../scripts/deconv_plot.py"


STUDY_TARGETS["deconv"] = [results("studies/deconv/summary.csv")] + [
    results(f"studies/deconv/plots/{d}.png") for d in DECONV["datasets"]
]
