from locpriv.deconv.study import fit_stage
from locpriv.smk import logged

with logged(snakemake):
    i, o = snakemake.input, snakemake.output
    fit_stage(snakemake.params.run, snakemake.params.cfg, snakemake.params.seed, i.reports, i.train, i.test,
              o.metrics, o.curves)
