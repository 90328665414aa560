from locpriv.smk import logged, optional_input
from locpriv.stages.prepare import truth

with logged(snakemake):
    truth(
        spec=snakemake.params.spec,
        points_path=snakemake.input.points,
        grid_path=snakemake.input.grid,
        bandwidth_json=optional_input(snakemake, "bandwidth"),
        out_truth=snakemake.output[0],
    )
