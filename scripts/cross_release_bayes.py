from locpriv.smk import logged
from locpriv.stages.linkage import cross_release_bayes

with logged(snakemake):
    p, i = snakemake.params, snakemake.input
    cross_release_bayes(
        runs=p.runs,
        seed=p.seed,
        adversary_cfg=p.adversary,
        view_paths=p.views,
        points_paths=list(i.points),
        meta_jsons=list(i.meta),
        grid_path=i.grid,
        truth_path=i.truth,
        bandwidth_jsons=p.bandwidths,
        out=snakemake.output[0],
    )
