# Location heatmaps under distributed DP with secure aggregation ([DDP-Heatmaps]).
#   ingest (population image) -> run (dp_heatmap = Alg. 2, or a baseline; per-round transcript
#   and noisy sums) -> metrics -> summary -> Table 1 CSV, round strip, sweeps (Fig. 7, 8);
#   optional multi-location users on Geolife (§5.7, Table 2's scale / clip bits);
#   `aggregation: secure` runs every sum through pairwise-masking secure aggregation (locpriv.secagg)
#   and adds the protocol's bytes per client (plots/secagg_cost.png).

from locpriv.heatmaps.study import run_dir as heatmaps_run_dir, runs as heatmaps_runs
from locpriv.heatmaps.study import validate_config as heatmaps_validate

try:
    HEATMAPS = heatmaps_validate(config["studies"]["heatmaps"])
    for _key, _path in (("population.path", HEATMAPS["population"]["path"]),
                        ("multi_location.path", (HEATMAPS["multi_location"] or {}).get("path"))):
        if _path and not Path(_path).exists():
            raise lpconfig.ConfigError(f"config key 'studies.heatmaps.{_key}': file {_path!r} does not exist; "
                                       "allowed: a path (absolute or relative to the working directory)")
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

HEATMAPS_DIR = "results/studies/heatmaps"
HEATMAPS_POP = f"{HEATMAPS_DIR}/population.nc"
HEATMAPS_RUN = (HEATMAPS_DIR + "/runs/method~{method}/epsilon~{epsilon}/n~{n}/c~{c}/shard~{shard}"
                "/dropout~{dropout}/rep~{rep}")
HEATMAPS_CODE = code_fingerprint("locpriv.heatmaps.study", "locpriv.heatmaps.adaptive",
                                 "locpriv.heatmaps.baselines", "locpriv.heatmaps.aggregation",
                                 "locpriv.heatmaps.polya", "locpriv.heatmaps.prefix_tree",
                                 "locpriv.heatmaps.clients", "locpriv.secagg.protocol", "locpriv.secagg.shamir",
                                 "locpriv.secagg.crypto", "locpriv.secagg.graph")
HEATMAPS_BASE_RUN = {"method": "dp_heatmap", **HEATMAPS["base"], "rep": 0}


def heatmaps_run(wc):
    return {"method": wc.method, "epsilon": float(wc.epsilon), "users_per_round": int(wc.n),
            "calibration": float(wc.c), "shard_size": int(wc.shard), "dropout": float(wc.dropout),
            "rep": int(wc.rep)}


rule heatmaps_ingest:
    input:
        HEATMAPS["population"]["path"] or [],
    output:
        HEATMAPS_POP,
    params:
        cfg={"population": HEATMAPS["population"]},
        seed=config["seed"],
        code=code_fingerprint("locpriv.heatmaps.study"),
    threads: rule_resource("heatmaps_ingest", "threads", 1)
    resources:
        mem_mb=rule_resource("heatmaps_ingest", "mem_mb", 2000),
        runtime=rule_resource("heatmaps_ingest", "runtime", 30),
    log:
        f"logs/{HEATMAPS_DIR}/ingest.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/heatmaps_ingest.py"


rule heatmaps_run:
    input:
        HEATMAPS_POP,
    output:
        heatmap=HEATMAPS_RUN + "/heatmap.nc",
        transcript=HEATMAPS_RUN + "/transcript.parquet",
        releases=HEATMAPS_RUN + "/releases.parquet",
        # secure aggregation: every message the server received (empty in the other modes)
        protocol=HEATMAPS_RUN + "/secagg_transcript.parquet",
    params:
        run=heatmaps_run,
        seed=config["seed"],
        aggregation=HEATMAPS["aggregation"],
        secagg=HEATMAPS["secagg"],
        code=HEATMAPS_CODE,
    threads: rule_resource("heatmaps_run", "threads", 1)
    resources:
        mem_mb=rule_resource("heatmaps_run", "mem_mb", 4000),
        runtime=rule_resource("heatmaps_run", "runtime", 30),
    log:
        "logs/" + HEATMAPS_RUN + "/run.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/heatmaps_run.py"


rule heatmaps_metrics:
    input:
        population=HEATMAPS_POP,
        heatmap=HEATMAPS_RUN + "/heatmap.nc",
        transcript=HEATMAPS_RUN + "/transcript.parquet",
    output:
        HEATMAPS_RUN + "/metrics.parquet",
    params:
        run=heatmaps_run,
        code=code_fingerprint("locpriv.heatmaps.study", "locpriv.heatmaps.metrics"),
    threads: rule_resource("heatmaps_metrics", "threads", 1)
    resources:
        mem_mb=rule_resource("heatmaps_metrics", "mem_mb", 2000),
        runtime=rule_resource("heatmaps_metrics", "runtime", 30),
    log:
        "logs/" + HEATMAPS_RUN + "/metrics.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/heatmaps_metrics.py"


rule heatmaps_summary:
    input:
        [f"{HEATMAPS_DIR}/runs/{heatmaps_run_dir(r)}/metrics.parquet" for r in heatmaps_runs(HEATMAPS)],
    output:
        parquet=f"{HEATMAPS_DIR}/summary.parquet",
        csv=f"{HEATMAPS_DIR}/summary.csv",
    params:
        code=code_fingerprint("locpriv.heatmaps.study"),
    threads: rule_resource("heatmaps_summary", "threads", 1)
    resources:
        mem_mb=rule_resource("heatmaps_summary", "mem_mb", 2000),
        runtime=rule_resource("heatmaps_summary", "runtime", 30),
    log:
        f"logs/{HEATMAPS_DIR}/summary.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/heatmaps_summary.py"


rule heatmaps_figures:
    input:
        summary=f"{HEATMAPS_DIR}/summary.parquet",
        population=HEATMAPS_POP,
        releases=f"{HEATMAPS_DIR}/runs/{heatmaps_run_dir(HEATMAPS_BASE_RUN)}/releases.parquet"
        if "dp_heatmap" in HEATMAPS["methods"] else [],
    output:
        table=report(f"{HEATMAPS_DIR}/table1.csv", caption="../../report/heatmaps-table.rst",
                     category="Location heatmaps (distributed DP)"),
        sweeps=report(f"{HEATMAPS_DIR}/plots/sweeps.png", caption="../../report/heatmaps-sweeps.rst",
                      category="Location heatmaps (distributed DP)"),
        rounds=report(f"{HEATMAPS_DIR}/plots/rounds.png", caption="../../report/heatmaps-rounds.rst",
                      category="Location heatmaps (distributed DP)"),
    params:
        base=HEATMAPS["base"],
        dpi=HEATMAPS["plots"]["dpi"],
        code=code_fingerprint("locpriv.heatmaps.plots"),
    threads: rule_resource("heatmaps_figures", "threads", 1)
    resources:
        mem_mb=rule_resource("heatmaps_figures", "mem_mb", 2000),
        runtime=rule_resource("heatmaps_figures", "runtime", 30),
    log:
        f"logs/{HEATMAPS_DIR}/figures.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/heatmaps_figures.py"


rule heatmaps_secagg_cost:
    input:
        protocol=f"{HEATMAPS_DIR}/runs/{heatmaps_run_dir(HEATMAPS_BASE_RUN)}/secagg_transcript.parquet",
        transcript=f"{HEATMAPS_DIR}/runs/{heatmaps_run_dir(HEATMAPS_BASE_RUN)}/transcript.parquet",
    output:
        report(f"{HEATMAPS_DIR}/plots/secagg_cost.png", caption="../../report/heatmaps-secagg.rst",
               category="Location heatmaps (distributed DP)"),
    params:
        dpi=HEATMAPS["plots"]["dpi"],
        code=code_fingerprint("locpriv.heatmaps.plots"),
    threads: rule_resource("heatmaps_secagg_cost", "threads", 1)
    resources:
        mem_mb=rule_resource("heatmaps_secagg_cost", "mem_mb", 2000),
        runtime=rule_resource("heatmaps_secagg_cost", "runtime", 30),
    log:
        f"logs/{HEATMAPS_DIR}/secagg_cost.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/heatmaps_secagg_cost.py"


rule heatmaps_multi:
    input:
        (HEATMAPS["multi_location"] or {}).get("path") or [],
    output:
        table=f"{HEATMAPS_DIR}/multi_location.parquet",
        plot=report(f"{HEATMAPS_DIR}/plots/multi_location.png", caption="../../report/heatmaps-multi.rst",
                    category="Location heatmaps (distributed DP)"),
    params:
        cfg={"multi_location": HEATMAPS["multi_location"]},
        seed=config["seed"],
        dpi=HEATMAPS["plots"]["dpi"],
        code=code_fingerprint("locpriv.heatmaps.multi_study", "locpriv.heatmaps.plots"),
    threads: rule_resource("heatmaps_multi", "threads", 1)
    resources:
        mem_mb=rule_resource("heatmaps_multi", "mem_mb", 4000),
        runtime=rule_resource("heatmaps_multi", "runtime", 30),
    log:
        f"logs/{HEATMAPS_DIR}/multi.log",
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/heatmaps_multi.py"


STUDY_TARGETS["heatmaps"] = [f"{HEATMAPS_DIR}/summary.csv", f"{HEATMAPS_DIR}/table1.csv",
                             f"{HEATMAPS_DIR}/plots/sweeps.png"]
if "dp_heatmap" in HEATMAPS["methods"]:
    STUDY_TARGETS["heatmaps"].append(f"{HEATMAPS_DIR}/plots/rounds.png")
if "dp_heatmap" in HEATMAPS["methods"] and HEATMAPS["aggregation"] == "secure":
    STUDY_TARGETS["heatmaps"].append(f"{HEATMAPS_DIR}/plots/secagg_cost.png")
if HEATMAPS["multi_location"]:
    STUDY_TARGETS["heatmaps"].append(f"{HEATMAPS_DIR}/plots/multi_location.png")
