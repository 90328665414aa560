from locpriv.smk import logged, optional_input
from locpriv.stages.metrics import run_metrics

with logged(snakemake):
    run_metrics(snakemake.params.run, snakemake.input.estimate, snakemake.input.truth,
                optional_input(snakemake, "pooled"),
                snakemake.input.attack, snakemake.input.grid, optional_input(snakemake, "bandwidth"),
                snakemake.output[0], bayes_path=snakemake.input.bayes, workload_path=snakemake.input.workload,
                hotspot_k=snakemake.params.hotspot_k, meta_json=snakemake.input.meta)
