from locpriv.smk import logged
from locpriv.stages.continual import release

with logged(snakemake):
    release(
        setting=snakemake.params.setting,
        spec=snakemake.params.spec,
        points=list(snakemake.input.points),
        person_rows=snakemake.params.person_rows,
        seed=snakemake.params.seed,
        out_nodes=snakemake.output.nodes,
        out_maps=snakemake.output.maps,
        out_metrics=snakemake.output.metrics,
    )
