from locpriv.deconv.study import split_stage
from locpriv.smk import logged

with logged(snakemake):
    wc = snakemake.wildcards
    split_stage(wc.dataset, wc.n, int(wc.rep), snakemake.params.ds, snakemake.params.seed,
                snakemake.output.train, snakemake.output.test)
