from locpriv.smk import logged
from locpriv.stages.linkage import exact_recovery

with logged(snakemake):
    i = snakemake.input
    exact_recovery(
        linkage_cfg=snakemake.params.linkage,
        points_paths=list(i.points),
        meta_jsons=list(i.meta),
        grid_path=i.grid,
        out=snakemake.output[0],
    )
