# Federated radio-map construction with geometry-aligned DP and the WCL attack ([GeoDP-Radio]).
#   ingest (city, users, stations; the cells under each link; RSS measurements, eq. 4)
#   -> run (protocol per scheme/mu/rho: transcript, model, history; WCL attack, eq. 18)
#   -> summary (one tidy table: attack RMSE, MAE, guarantees; Fig. 5's gradient maps) -> plots

from locpriv.radiomap import study as radiomap_study

try:
    RADIOMAP = radiomap_study.STUDY.validate(config["studies"]["radiomap"])
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None

RADIOMAP_RUNS = radiomap_study.STUDY.runs(RADIOMAP)
RADIOMAP_ENV = {
    "heights": results("studies/radiomap/ingest/heights.nc"),
    "users": results("studies/radiomap/ingest/users.parquet"),
    "stations": results("studies/radiomap/ingest/stations.parquet"),
    "pairs": results("studies/radiomap/ingest/pairs.parquet"),
    "eval_points": results("studies/radiomap/ingest/eval_points.parquet"),
}
RADIOMAP_LINKS = {
    "links": results("studies/radiomap/geometry/links.parquet"),
    "link_distance": results("studies/radiomap/geometry/link_distance.parquet"),
    "eval_links": results("studies/radiomap/geometry/eval_links.parquet"),
    "eval_distance": results("studies/radiomap/geometry/eval_distance.parquet"),
}
RADIOMAP_RUN = "studies/radiomap/runs/scheme~{scheme}/mu~{mu}/rho~{rho}"
RADIOMAP_CODE = code_fingerprint("locpriv.radiomap.study")


rule radiomap_ingest:
    # ingest, link geometry and measurements in one job (each well under a second at the default size)
    output:
        **RADIOMAP_ENV,
        **RADIOMAP_LINKS,
        buildings=results("studies/radiomap/ingest/buildings.parquet"),
        measurements=results("studies/radiomap/measure/measurements.parquet"),
    log:
        logs("studies/radiomap/ingest.log"),
    benchmark:
        benchmarks("studies/radiomap/ingest.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        cfg={
            k: RADIOMAP[k]
            for k in (
                "environment",
                "n_users",
                "n_stations",
                "n_measurements",
                "evaluation",
                "channel",
            )
        },
        seed=config["seed"],
        code=RADIOMAP_CODE,
    script:
        "../../../scripts/radiomap_ingest.py"


rule radiomap_run:
    input:
        **RADIOMAP_ENV,
        **RADIOMAP_LINKS,
        measurements=rules.radiomap_ingest.output.measurements,
    output:
        transcript=results(f"{RADIOMAP_RUN}/transcript.parquet"),
        model=results(f"{RADIOMAP_RUN}/model.parquet"),
        history=results(f"{RADIOMAP_RUN}/history.parquet"),
        attack=results(f"{RADIOMAP_RUN}/attack.parquet"),
    log:
        logs(f"{RADIOMAP_RUN}/run.log"),
    benchmark:
        benchmarks(f"{RADIOMAP_RUN}/run.tsv")
    wildcard_constraints:
        scheme=r"radio_[a-z]+",
        mu=r"[0-9.e+-]+",
        rho=r"[0-9.e+-]+",
    conda:
        "../../../envs/locpriv.yaml"
    params:
        cfg={
            k: RADIOMAP[k]
            for k in (
                "environment",
                "n_users",
                "channel",
                "model",
                "training",
                "geo",
                "attack",
                "delta",
                "evaluation",
            )
        },
        run=lambda wc: {"scheme": wc.scheme, "mu": float(wc.mu), "rho": float(wc.rho)},
        seed=config["seed"],
        code=RADIOMAP_CODE,
    script:
        "../../../scripts/radiomap_run.py"


rule radiomap_summary:
    input:
        attack=[
            results(
                f"studies/radiomap/runs/{radiomap_study.STUDY.run_dir(r)}/attack.parquet"
            )
            for r in RADIOMAP_RUNS
        ],
        history=[
            results(
                f"studies/radiomap/runs/{radiomap_study.STUDY.run_dir(r)}/history.parquet"
            )
            for r in RADIOMAP_RUNS
        ],
        transcripts=[
            results(
                f"studies/radiomap/runs/{radiomap_study.STUDY.run_dir(r)}/transcript.parquet"
            )
            for r in RADIOMAP_RUNS
        ],
    output:
        parquet=results("studies/radiomap/summary.parquet"),
        csv=results("studies/radiomap/summary.csv"),
        # Fig. 5's data: one user's upload per noisy run (not a summary table)
        gradient_maps=results("studies/radiomap/gradient_maps.parquet"),
    log:
        logs("studies/radiomap/summary.log"),
    benchmark:
        benchmarks("studies/radiomap/summary.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        cfg={k: RADIOMAP[k] for k in ("environment", "n_users", "attack", "plots")},
        runs=RADIOMAP_RUNS,
        code=RADIOMAP_CODE,
    script:
        "../../../scripts/radiomap_summary.py"


rule radiomap_plots:
    input:
        summary=rules.radiomap_summary.output.parquet,
        gradient_maps=rules.radiomap_summary.output.gradient_maps,
    output:
        mae=report(
            results("studies/radiomap/plots/mae.png"),
            caption="../../report/radiomap-mae.rst",
            category="Federated radio map ([GeoDP-Radio])",
        ),
        fig4=report(
            results("studies/radiomap/plots/fig4_error_vs_mu.png"),
            caption="../../report/radiomap-fig4.rst",
            category="Federated radio map ([GeoDP-Radio])",
        ),
        fig5=report(
            results("studies/radiomap/plots/fig5_gradient_maps.png"),
            caption="../../report/radiomap-fig5.rst",
            category="Federated radio map ([GeoDP-Radio])",
        ),
        fig6=report(
            results("studies/radiomap/plots/fig6_error_vs_rho.png"),
            caption="../../report/radiomap-fig6.rst",
            category="Federated radio map ([GeoDP-Radio])",
        ),
    log:
        logs("studies/radiomap/plots.log"),
    benchmark:
        benchmarks("studies/radiomap/plots.tsv")
    conda:
        "../../../envs/locpriv.yaml"
    params:
        cfg={k: RADIOMAP[k] for k in ("attack", "plots")},
        code=code_fingerprint("locpriv.radiomap.plots"),
    script:
        "../../../scripts/radiomap_plots.py"


STUDY_TARGETS["radiomap"] = [
    *rules.radiomap_summary.output,
    *rules.radiomap_plots.output,
]
