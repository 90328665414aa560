from locpriv.smk import logged, optional_input
from locpriv.stages.run import estimate_group

with logged(snakemake):
    p, o = snakemake.params, snakemake.output
    estimate_group(
        runs=p.runs,
        seed=p.seed,
        shards=p.shards,
        users_per_shard=p.users_per_shard,
        view_paths=p.views,
        points_path=snakemake.input.points,
        meta_json=snakemake.input.meta,
        grid_path=snakemake.input.grid,
        bandwidth_json=optional_input(snakemake, "bandwidth"),
        out_views=list(o.views),
        out_agg=list(o.aggregate),
        out_est=list(o.estimate),
    )
