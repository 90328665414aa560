from locpriv.smk import logged, optional_input
from locpriv.stages.run import aggregate_estimate

with logged(snakemake):
    aggregate_estimate(
        run=snakemake.params.run,
        view_paths=list(snakemake.params.views),
        grid_path=snakemake.input.grid,
        bandwidth_json=optional_input(snakemake, "bandwidth"),
        out_agg=snakemake.output.aggregate,
        out_est=snakemake.output.estimate,
    )
