from locpriv.smk import logged
from locpriv.study import run_stage

with logged(snakemake):
    run_stage(
        name=snakemake.wildcards.study,
        run=snakemake.params.run,
        cfg=snakemake.params.cfg,
        seed=snakemake.params.seed,
        out_path=snakemake.output[0],
    )
