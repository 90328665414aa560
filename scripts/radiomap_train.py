"""Federated training of one (scheme, mu, rho) run; writes the transcript."""
from locpriv.radiomap.stages import train_run
from locpriv.seeding import rng
from locpriv.smk import logged

with logged(snakemake):
    run = snakemake.params.run
    train_run(snakemake.params.cfg, run, dict(snakemake.input),
              rng(snakemake.params.seed, "radiomap", "train", run), dict(snakemake.output))
