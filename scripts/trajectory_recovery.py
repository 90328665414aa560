from locpriv.smk import logged
from locpriv.stages.linkage import trajectory_recovery

with logged(snakemake):
    p, i = snakemake.params, snakemake.input
    trajectory_recovery(
        runs=p.runs,
        linkage_cfg=p.linkage,
        est_paths=list(i.estimates),
        points_paths=list(i.points),
        meta_jsons=list(i.meta),
        grid_path=i.grid,
        out=snakemake.output[0],
    )
