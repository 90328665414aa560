from locpriv.deconv.study import randomize_stage
from locpriv.smk import logged

with logged(snakemake):
    randomize_stage(snakemake.params.run, snakemake.params.ds, snakemake.params.seed, snakemake.input[0],
                    snakemake.output[0])
