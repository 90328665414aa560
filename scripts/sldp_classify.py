"""Every rep of the classification study ([SLDP] §5.2, California housing) at one epsilon."""

from locpriv.sldp.study import classify_reps_stage
from locpriv.smk import logged

with logged(snakemake):
    p = snakemake.params
    classify_reps_stage(
        epsilon=float(snakemake.wildcards.epsilon),
        reps=p.reps,
        cfg=p.cfg,
        seed=p.seed,
        data_path=snakemake.input.data,
        out=list(snakemake.output),
    )
