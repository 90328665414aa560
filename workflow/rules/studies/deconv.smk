# Laplace LDP with deconvoluting KDE and Nadaraya-Watson regression ([Deconv-LDP]).
#   split (clients' true x, y; train/test) -> randomize (Laplace reports, per epsilon)
#   -> fit (LOO-CV bandwidth, deconvoluting NW vs linear/logistic, densities) -> summary -> plots
# The 2-D location branch of the same mechanism is the `laplace_ldp` mechanism of the main DAG.

from locpriv.deconv.plots import figure_epsilon as deconv_figure_epsilon
from locpriv.deconv.study import data_paths as deconv_data_paths, run_dir as deconv_run_dir
from locpriv.deconv.study import runs as deconv_runs, validate_config as deconv_validate

try:
    DECONV = deconv_validate(config["studies"]["deconv"])
    for _name, _ds in DECONV["datasets"].items():
        for _path in deconv_data_paths(_ds):
            if not Path(_path).exists():
                raise lpconfig.ConfigError(f"config key 'studies.deconv.datasets.{_name}.path': {_path!r} does "
                                           "not exist; allowed: a path (absolute or relative to the working directory)")
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

DECONV_DIR = "results/studies/deconv"
DECONV_SPLIT = DECONV_DIR + "/runs/dataset~{dataset}/n~{n}/rep~{rep}"
DECONV_RUN = DECONV_SPLIT + "/epsilon~{epsilon}"
DECONV_CODE = code_fingerprint("locpriv.deconv.study")


def deconv_run(wc):
    return {"dataset": wc.dataset, "n": wc.n, "epsilon": wc.epsilon if wc.epsilon == "inf" else float(wc.epsilon),
            "rep": int(wc.rep)}


rule deconv_split:
    input:
        lambda wc: deconv_data_paths(DECONV["datasets"][wc.dataset]),
    output:
        train=DECONV_SPLIT + "/train.parquet",
        test=DECONV_SPLIT + "/test.parquet",
    params:
        ds=lambda wc: DECONV["datasets"][wc.dataset],
        seed=config["seed"],
        code=DECONV_CODE,
    threads: rule_resource("deconv_split", "threads", 1)
    resources:
        mem_mb=rule_resource("deconv_split", "mem_mb", 2000),
        runtime=rule_resource("deconv_split", "runtime", 30),
    log:
        "logs/" + DECONV_SPLIT + "/split.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/deconv_split.py"


rule deconv_randomize:
    input:
        DECONV_SPLIT + "/train.parquet",
    output:
        DECONV_RUN + "/reports.parquet",
    params:
        run=deconv_run,
        ds=lambda wc: DECONV["datasets"][wc.dataset],
        seed=config["seed"],
        code=DECONV_CODE,
    threads: rule_resource("deconv_randomize", "threads", 1)
    resources:
        mem_mb=rule_resource("deconv_randomize", "mem_mb", 2000),
        runtime=rule_resource("deconv_randomize", "runtime", 30),
    log:
        "logs/" + DECONV_RUN + "/randomize.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/deconv_randomize.py"


rule deconv_fit:
    input:
        reports=DECONV_RUN + "/reports.parquet",
        train=DECONV_SPLIT + "/train.parquet",
        test=DECONV_SPLIT + "/test.parquet",
    output:
        metrics=DECONV_RUN + "/metrics.parquet",
        curves=DECONV_RUN + "/curves.parquet",
    params:
        run=deconv_run,
        # the fit needs the estimator settings and its own dataset only
        cfg=lambda wc: {**{k: v for k, v in DECONV.items() if k not in ("datasets", "epsilon", "plots")},
                        "datasets": {wc.dataset: DECONV["datasets"][wc.dataset]}},
        seed=config["seed"],
        code=code_fingerprint("locpriv.deconv.study", "locpriv.deconv.estimators", "locpriv.deconv.kernels"),
    threads: rule_resource("deconv_fit", "threads", 1)
    resources:
        mem_mb=rule_resource("deconv_fit", "mem_mb", 4000),
        runtime=rule_resource("deconv_fit", "runtime", 30),
    log:
        "logs/" + DECONV_RUN + "/fit.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/deconv_fit.py"


rule deconv_summary:
    input:
        [f"{DECONV_DIR}/runs/{deconv_run_dir(r)}/metrics.parquet" for r in deconv_runs(DECONV)],
    output:
        parquet=f"{DECONV_DIR}/summary.parquet",
        csv=f"{DECONV_DIR}/summary.csv",
    params:
        code=DECONV_CODE,
    threads: rule_resource("deconv_summary", "threads", 1)
    resources:
        mem_mb=rule_resource("deconv_summary", "mem_mb", 2000),
        runtime=rule_resource("deconv_summary", "runtime", 30),
    log:
        f"logs/{DECONV_DIR}/summary.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/deconv_summary.py"


def deconv_figure_inputs(wc):
    ds = DECONV["datasets"][wc.dataset]
    eps = ("inf", deconv_figure_epsilon(DECONV, wc.dataset))
    run = lambda n, e: {"dataset": wc.dataset, "n": n, "epsilon": e, "rep": 0}
    return {"summary": f"{DECONV_DIR}/summary.parquet",
            **{f"curves_{n}_{e}": f"{DECONV_DIR}/runs/{deconv_run_dir(run(n, e))}/curves.parquet"
               for n in ds["n"] for e in eps},
            **{f"test_{n}": f"{DECONV_SPLIT.format(dataset=wc.dataset, n=n, rep=0)}/test.parquet" for n in ds["n"]}}


rule deconv_plot:
    input:
        unpack(deconv_figure_inputs),
    output:
        report(DECONV_DIR + "/plots/{dataset}.png", caption="../../report/deconv-plot.rst",
               category="Deconvolution (Laplace LDP)"),
    params:
        cfg=DECONV,
        dpi=DECONV["plots"]["dpi"],
        code=code_fingerprint("locpriv.deconv.plots"),
    threads: rule_resource("deconv_plot", "threads", 1)
    resources:
        mem_mb=rule_resource("deconv_plot", "mem_mb", 2000),
        runtime=rule_resource("deconv_plot", "runtime", 30),
    log:
        "logs/" + DECONV_DIR + "/plot-{dataset}.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/deconv_plot.py"


STUDY_TARGETS["deconv"] = [f"{DECONV_DIR}/summary.csv"] + [f"{DECONV_DIR}/plots/{d}.png" for d in DECONV["datasets"]]
