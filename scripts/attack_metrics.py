from locpriv.smk import logged, optional_input
from locpriv.stages.attack import attack_metrics_group

with logged(snakemake):
    p, i, o = snakemake.params, snakemake.input, snakemake.output
    attack_metrics_group(
        runs=p.runs,
        seed=p.seed,
        attack_cfg=p.attack,
        adversary_cfg=p.adversary,
        users_per_shard=p.users_per_shard,
        hotspot_k=p.hotspot_k,
        view_paths=p.views,
        est_paths=list(i.estimate),
        points_path=i.points,
        meta_json=i.meta,
        grid_path=i.grid,
        truth_path=i.truth,
        pooled_path=optional_input(snakemake, "pooled"),
        workload_path=i.workload,
        bandwidth_json=optional_input(snakemake, "bandwidth"),
        out_local_maxima=list(o.local_maxima),
        out_bayes=list(o.bayes),
        out_metrics=list(o.metrics),
    )
