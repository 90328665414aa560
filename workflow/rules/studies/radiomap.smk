# Federated radio-map construction with geometry-aligned DP and the WCL attack ([GeoDP-Radio]).
#   ingest (city, users, stations) -> geometry (cells under each link; cached)
#   -> measure (RSS, eq. 4) -> train (protocol per scheme/mu/rho; transcript)
#   -> attack (WCL, eq. 18) -> summary (Table I/II, Fig. 4/6 data, guarantees) -> plots

from locpriv.radiomap import validate_config as radiomap_validate
from locpriv.radiomap.config import run_dir as radiomap_run_dir, run_list as radiomap_run_list

try:
    RADIOMAP = radiomap_validate(config["studies"]["radiomap"])
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

RADIOMAP_DIR = "results/studies/radiomap"
RADIOMAP_RUNS = radiomap_run_list(RADIOMAP)
RADIOMAP_ENV = {
    "heights": f"{RADIOMAP_DIR}/ingest/heights.nc",
    "users": f"{RADIOMAP_DIR}/ingest/users.parquet",
    "stations": f"{RADIOMAP_DIR}/ingest/stations.parquet",
    "pairs": f"{RADIOMAP_DIR}/ingest/pairs.parquet",
    "eval_points": f"{RADIOMAP_DIR}/ingest/eval_points.parquet",
}
RADIOMAP_LINKS = {
    "links": f"{RADIOMAP_DIR}/geometry/links.parquet",
    "link_distance": f"{RADIOMAP_DIR}/geometry/link_distance.parquet",
    "eval_links": f"{RADIOMAP_DIR}/geometry/eval_links.parquet",
    "eval_distance": f"{RADIOMAP_DIR}/geometry/eval_distance.parquet",
}
RADIOMAP_RUN = RADIOMAP_DIR + "/runs/scheme~{scheme}/mu~{mu}/rho~{rho}"


def radiomap_slice(*keys):
    return {k: RADIOMAP[k] for k in keys}


def radiomap_run_of(wc):
    return {"scheme": wc.scheme, "mu": float(wc.mu), "rho": float(wc.rho)}


def radiomap_run_files(name):
    return [f"{RADIOMAP_DIR}/runs/{radiomap_run_dir(r)}/{name}" for r in RADIOMAP_RUNS]


wildcard_constraints:
    scheme=r"radio_[a-z]+",
    mu=r"[0-9.e+-]+",
    rho=r"[0-9.e+-]+",


rule radiomap_ingest:
    output:
        buildings=f"{RADIOMAP_DIR}/ingest/buildings.parquet",
        **RADIOMAP_ENV,
    log:
        f"logs/{RADIOMAP_DIR}/ingest.log",
    params:
        cfg=radiomap_slice("environment", "n_users", "n_stations", "n_measurements", "evaluation"),
        seed=config["seed"],
        code=code_fingerprint("locpriv.radiomap.stages"),
    threads: rule_resource("radiomap_ingest", "threads", 1)
    resources:
        mem_mb=rule_resource("radiomap_ingest", "mem_mb", 1000),
        runtime=rule_resource("radiomap_ingest", "runtime", 10),
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/radiomap_ingest.py"


rule radiomap_geometry:
    # deterministic and the most expensive set-up step: shareable via --cache
    input:
        **RADIOMAP_ENV,
    output:
        **RADIOMAP_LINKS,
    cache: True
    log:
        f"logs/{RADIOMAP_DIR}/geometry.log",
    params:
        cfg=radiomap_slice("environment", "evaluation"),
        code=code_fingerprint("locpriv.radiomap.stages"),
    threads: rule_resource("radiomap_geometry", "threads", 1)
    resources:
        mem_mb=rule_resource("radiomap_geometry", "mem_mb", 2000),
        runtime=rule_resource("radiomap_geometry", "runtime", 10),
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/radiomap_geometry.py"


rule radiomap_measure:
    input:
        **RADIOMAP_ENV,
        **RADIOMAP_LINKS,
    output:
        measurements=f"{RADIOMAP_DIR}/measure/measurements.parquet",
    log:
        f"logs/{RADIOMAP_DIR}/measure.log",
    params:
        cfg=radiomap_slice("environment", "channel"),
        seed=config["seed"],
        code=code_fingerprint("locpriv.radiomap.stages"),
    threads: rule_resource("radiomap_measure", "threads", 1)
    resources:
        mem_mb=rule_resource("radiomap_measure", "mem_mb", 2000),
        runtime=rule_resource("radiomap_measure", "runtime", 10),
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/radiomap_measure.py"


rule radiomap_train:
    input:
        **RADIOMAP_ENV,
        **RADIOMAP_LINKS,
        measurements=rules.radiomap_measure.output.measurements,
    output:
        transcript=f"{RADIOMAP_RUN}/transcript.parquet",
        model=f"{RADIOMAP_RUN}/model.parquet",
        history=f"{RADIOMAP_RUN}/history.parquet",
    log:
        f"logs/{RADIOMAP_RUN}/train.log",
    params:
        cfg=radiomap_slice("environment", "n_users", "channel", "model", "training", "geo", "attack", "delta",
                           "evaluation"),
        run=radiomap_run_of,
        seed=config["seed"],
        code=code_fingerprint("locpriv.radiomap.stages"),
    threads: rule_resource("radiomap_train", "threads", 1)
    resources:
        mem_mb=rule_resource("radiomap_train", "mem_mb", 4000),
        runtime=rule_resource("radiomap_train", "runtime", 60),
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/radiomap_train.py"


rule radiomap_attack:
    input:
        **RADIOMAP_ENV,
        transcript=f"{RADIOMAP_RUN}/transcript.parquet",
    output:
        f"{RADIOMAP_RUN}/attack.parquet",
    log:
        f"logs/{RADIOMAP_RUN}/attack.log",
    params:
        cfg=radiomap_slice("environment", "attack"),
        code=code_fingerprint("locpriv.radiomap.stages"),
    threads: rule_resource("radiomap_attack", "threads", 1)
    resources:
        mem_mb=rule_resource("radiomap_attack", "mem_mb", 2000),
        runtime=rule_resource("radiomap_attack", "runtime", 10),
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/radiomap_attack.py"


rule radiomap_summary:
    input:
        attack=radiomap_run_files("attack.parquet"),
        history=radiomap_run_files("history.parquet"),
    output:
        attack=f"{RADIOMAP_DIR}/summary/attack_rmse.parquet",
        mae=f"{RADIOMAP_DIR}/summary/mae.parquet",
        guarantees=f"{RADIOMAP_DIR}/summary/guarantees.parquet",
    log:
        f"logs/{RADIOMAP_DIR}/summary.log",
    params:
        runs=RADIOMAP_RUNS,
        code=code_fingerprint("locpriv.radiomap.stages"),
    threads: rule_resource("radiomap_summary", "threads", 1)
    resources:
        mem_mb=rule_resource("radiomap_summary", "mem_mb", 1000),
        runtime=rule_resource("radiomap_summary", "runtime", 10),
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/radiomap_summary.py"


rule radiomap_plots:
    input:
        attack=rules.radiomap_summary.output.attack,
        mae=rules.radiomap_summary.output.mae,
        transcripts=radiomap_run_files("transcript.parquet"),
    output:
        mae=report(f"{RADIOMAP_DIR}/plots/mae.png", caption="../../report/radiomap-mae.rst",
                   category="Federated radio map ([GeoDP-Radio])"),
        fig4=report(f"{RADIOMAP_DIR}/plots/fig4_error_vs_mu.png", caption="../../report/radiomap-fig4.rst",
                    category="Federated radio map ([GeoDP-Radio])"),
        fig5=report(f"{RADIOMAP_DIR}/plots/fig5_gradient_maps.png", caption="../../report/radiomap-fig5.rst",
                    category="Federated radio map ([GeoDP-Radio])"),
        fig6=report(f"{RADIOMAP_DIR}/plots/fig6_error_vs_rho.png", caption="../../report/radiomap-fig6.rst",
                    category="Federated radio map ([GeoDP-Radio])"),
    log:
        f"logs/{RADIOMAP_DIR}/plots.log",
    params:
        cfg=radiomap_slice("environment", "attack", "plots"),
        runs=RADIOMAP_RUNS,
        code=code_fingerprint("locpriv.radiomap.plots", "locpriv.radiomap.stages"),
    threads: rule_resource("radiomap_plots", "threads", 1)
    resources:
        mem_mb=rule_resource("radiomap_plots", "mem_mb", 2000),
        runtime=rule_resource("radiomap_plots", "runtime", 10),
    conda:
        "../../../envs/locpriv.yaml"
    script:
        "../../../scripts/radiomap_plots.py"


STUDY_TARGETS["radiomap"] = [
    *rules.radiomap_summary.output,
    *rules.radiomap_plots.output,
]
