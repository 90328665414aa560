"""Federated training of one (scheme, mu, rho) run and the WCL attack ([GeoDP-Radio] eq. 18) on its transcript."""

from locpriv.radiomap.study import run_stage
from locpriv.smk import logged

with logged(snakemake):
    run_stage(
        cfg=snakemake.params.cfg,
        run=snakemake.params.run,
        seed=snakemake.params.seed,
        paths=dict(snakemake.input),
        out=dict(snakemake.output),
    )
