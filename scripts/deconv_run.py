"""One split of the deconv study and every epsilon's Laplace reports and fit on it."""

from locpriv.deconv.study import split_run_stage
from locpriv.smk import logged

with logged(snakemake):
    wc, o = snakemake.wildcards, snakemake.output
    split_run_stage(
        dataset=wc.dataset,
        n=wc.n,
        rep=int(wc.rep),
        cfg=snakemake.params.cfg,
        seed=snakemake.params.seed,
        out={
            "train": o.train,
            "test": o.test,
            "reports": list(o.reports),
            "metrics": list(o.metrics),
            "curves": list(o.curves),
        },
    )
