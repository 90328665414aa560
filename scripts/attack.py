from locpriv.smk import logged, optional_input
from locpriv.stages.attack import attacks_of_run

with logged(snakemake):
    attacks_of_run(
        run=snakemake.params.run,
        seed=snakemake.params.seed,
        attack_cfg=snakemake.params.attack,
        adversary_cfg=snakemake.params.adversary,
        users_per_shard=snakemake.params.users_per_shard,
        view_paths=list(snakemake.params.views),
        points_path=snakemake.input.points,
        meta_json=snakemake.input.meta,
        grid_path=snakemake.input.grid,
        truth_path=snakemake.input.truth,
        bandwidth_json=optional_input(snakemake, "bandwidth"),
        out_local_maxima=snakemake.output.local_maxima,
        out_bayes=snakemake.output.bayes,
    )
