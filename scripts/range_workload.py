from locpriv.smk import logged
from locpriv.stages.utility import range_workload

with logged(snakemake):
    range_workload(
        dataset=snakemake.wildcards.dataset,
        points_path=snakemake.input.points,
        grid_path=snakemake.input.grid,
        utility_cfg=snakemake.params.utility,
        seed=snakemake.params.seed,
        out_parquet=snakemake.output[0],
    )
