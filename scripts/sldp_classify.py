from locpriv.sldp.study import classify_stage
from locpriv.smk import logged

with logged(snakemake):
    classify_stage(snakemake.params.run, snakemake.params.cfg, snakemake.params.seed,
                   snakemake.input.data, snakemake.output[0])
