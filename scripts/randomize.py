from locpriv.smk import logged, optional_input
from locpriv.stages.run import randomize

with logged(snakemake):
    randomize(
        run=snakemake.params.run,
        seed=snakemake.params.seed,
        shards=snakemake.params.shards,
        users_per_shard=snakemake.params.users_per_shard,
        points_path=snakemake.input.points,
        meta_json=snakemake.input.meta,
        grid_path=snakemake.input.grid,
        bandwidth_json=optional_input(snakemake, "bandwidth"),
        out_dir=snakemake.output[0],
    )
