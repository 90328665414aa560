from locpriv.sldp.study import evaluate_stage
from locpriv.smk import logged

with logged(snakemake):
    evaluate_stage(snakemake.params.run, snakemake.params.cfg, snakemake.params.seed,
                   snakemake.input.partition, snakemake.input.regions, snakemake.output[0])
