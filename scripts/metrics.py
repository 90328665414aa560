from locpriv.smk import logged, optional_input
from locpriv.stages.metrics import run_metrics

with logged(snakemake):
    run_metrics(
        run=snakemake.params.run,
        est_path=snakemake.input.estimate,
        truth_path=snakemake.input.truth,
        pooled_path=optional_input(snakemake, "pooled"),
        attack_path=snakemake.input.attack,
        bayes_path=snakemake.input.bayes,
        workload_path=snakemake.input.workload,
        grid_path=snakemake.input.grid,
        bandwidth_json=optional_input(snakemake, "bandwidth"),
        meta_json=snakemake.input.meta,
        hotspot_k=snakemake.params.hotspot_k,
        out_metrics=snakemake.output[0],
    )
