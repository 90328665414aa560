# Semi-local DP ([SLDP]): interactive private quadtree, mean estimation, range queries.
#   protocol (client data, Alg. 1/2 transcript, partition) -> evaluate (task answers vs baselines)
#   -> summary -> plot

from locpriv.sldp.study import classify_runs as sldp_classify_runs, run_dir as sldp_run_dir, runs as sldp_runs
from locpriv.sldp.study import validate_config as sldp_validate

try:
    SLDP = sldp_validate(config["studies"]["sldp"])
    for _key, _path in (("classify.path", (SLDP["classify"] or {}).get("path")), ("range.path", SLDP["range"]["path"])):
        if _path and not Path(_path).exists():
            raise lpconfig.ConfigError(f"config key 'studies.sldp.{_key}': file {_path!r} does not exist; "
                                       "allowed: a path (absolute or relative to the working directory)")
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

SLDP_DIR = "results/studies/sldp"
SLDP_PROTOCOL_KEYS = ("delta", "threshold", "max_depth", "delta_constant", "split_rule", "calibration")
SLDP_RUN = SLDP_DIR + "/runs/task~{task}/n~{n}/epsilon~{epsilon}/rep~{rep}"


wildcard_constraints:
    task="mean|range",
    epsilon=r"[0-9.e+-]+|inf",   # inf: the deconvolution study's noiseless reference


def sldp_run(wc):
    return {"task": wc.task, "n": int(wc.n), "epsilon": float(wc.epsilon), "rep": int(wc.rep)}


def sldp_slice(wc):
    """The config a run uses: shared protocol settings plus its own task's section only."""
    return {**{k: SLDP[k] for k in SLDP_PROTOCOL_KEYS}, wc.task: SLDP[wc.task]}


def sldp_data(wc):
    return SLDP["range"]["path"] if wc.task == "range" and SLDP["range"]["path"] else []


rule sldp_protocol:
    input:
        data=sldp_data,
    output:
        partition=SLDP_RUN + "/partition.parquet",
        rounds=SLDP_RUN + "/transcript-rounds.parquet",
        reports=SLDP_RUN + "/transcript-reports.parquet",
        regions=SLDP_RUN + "/user-regions.parquet",
    params:
        run=sldp_run,
        cfg=sldp_slice,
        seed=config["seed"],
        code=code_fingerprint("locpriv.sldp.study"),
    threads: rule_resource("sldp_protocol", "threads", 1)
    resources:
        mem_mb=rule_resource("sldp_protocol", "mem_mb", 2000),
        runtime=rule_resource("sldp_protocol", "runtime", 30),
    log:
        "logs/" + SLDP_RUN + "/protocol.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/sldp_protocol.py"


rule sldp_evaluate:
    input:
        data=sldp_data,
        partition=SLDP_RUN + "/partition.parquet",
        regions=SLDP_RUN + "/user-regions.parquet",
    output:
        SLDP_RUN + "/evaluation.parquet",
    params:
        run=sldp_run,
        cfg=sldp_slice,
        seed=config["seed"],
        code=code_fingerprint("locpriv.sldp.study"),
    threads: rule_resource("sldp_evaluate", "threads", 1)
    resources:
        mem_mb=rule_resource("sldp_evaluate", "mem_mb", 2000),
        runtime=rule_resource("sldp_evaluate", "runtime", 30),
    log:
        "logs/" + SLDP_RUN + "/evaluate.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/sldp_evaluate.py"


rule sldp_classify:
    input:
        data=SLDP["classify"]["path"] if SLDP["classify"] else [],
    output:
        SLDP_DIR + "/runs/task~classify/n~all/epsilon~{epsilon}/rep~{rep}/evaluation.parquet",
    params:
        run=lambda wc: {"task": "classify", "n": "all", "epsilon": float(wc.epsilon), "rep": int(wc.rep)},
        cfg={**{k: SLDP[k] for k in SLDP_PROTOCOL_KEYS},
             "classify": SLDP["classify"]},
        seed=config["seed"],
        code=code_fingerprint("locpriv.sldp.study"),
    threads: rule_resource("sldp_classify", "threads", 1)
    resources:
        mem_mb=rule_resource("sldp_classify", "mem_mb", 2000),
        runtime=rule_resource("sldp_classify", "runtime", 30),
    log:
        "logs/" + SLDP_DIR + "/runs/task~classify/epsilon~{epsilon}/rep~{rep}/classify.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/sldp_classify.py"


rule sldp_summary:
    input:
        [f"{SLDP_DIR}/runs/{sldp_run_dir(r)}/evaluation.parquet" for r in sldp_runs(SLDP) + sldp_classify_runs(SLDP)],
    output:
        parquet=f"{SLDP_DIR}/summary.parquet",
        csv=f"{SLDP_DIR}/summary.csv",
    params:
        code=code_fingerprint("locpriv.sldp.study"),
    threads: rule_resource("sldp_summary", "threads", 1)
    resources:
        mem_mb=rule_resource("sldp_summary", "mem_mb", 2000),
        runtime=rule_resource("sldp_summary", "runtime", 30),
    log:
        f"logs/{SLDP_DIR}/summary.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/sldp_summary.py"


rule sldp_plot:
    input:
        f"{SLDP_DIR}/summary.parquet",
    output:
        report(f"{SLDP_DIR}/plots/mse-mre.png", caption="../../report/sldp-plot.rst", category="Semi-local DP"),
    params:
        dpi=SLDP["plots"]["dpi"],
        code=code_fingerprint("locpriv.sldp.study"),
    threads: rule_resource("sldp_plot", "threads", 1)
    resources:
        mem_mb=rule_resource("sldp_plot", "mem_mb", 2000),
        runtime=rule_resource("sldp_plot", "runtime", 30),
    log:
        f"logs/{SLDP_DIR}/plot.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/sldp_plot.py"


# Fig. 1 shows the smallest mean-estimation run at its largest epsilon
SLDP_FIG1 = {"task": "mean", "n": min(SLDP["mean"]["n"]), "epsilon": max(SLDP["mean"]["epsilon"]), "rep": 0}


rule sldp_plot_partition:
    input:
        partition=f"{SLDP_DIR}/runs/{sldp_run_dir(SLDP_FIG1)}/partition.parquet",
        regions=f"{SLDP_DIR}/runs/{sldp_run_dir(SLDP_FIG1)}/user-regions.parquet",
    output:
        report(f"{SLDP_DIR}/plots/partition.png", caption="../../report/sldp-partition.rst",
               category="Semi-local DP"),
    params:
        run=SLDP_FIG1,
        cfg={**{k: SLDP[k] for k in SLDP_PROTOCOL_KEYS},
             "mean": SLDP["mean"]},
        seed=config["seed"],
        dpi=SLDP["plots"]["dpi"],
        code=code_fingerprint("locpriv.sldp.study"),
    threads: rule_resource("sldp_plot_partition", "threads", 1)
    resources:
        mem_mb=rule_resource("sldp_plot_partition", "mem_mb", 2000),
        runtime=rule_resource("sldp_plot_partition", "runtime", 30),
    log:
        f"logs/{SLDP_DIR}/plot-partition.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/sldp_plot_partition.py"


STUDY_TARGETS["sldp"] = [f"{SLDP_DIR}/summary.csv", f"{SLDP_DIR}/plots/mse-mre.png",
                         f"{SLDP_DIR}/plots/partition.png"]
