"""Synthetic city, users, stations and measurement pairs, the cells under every link and the RSS
measurements of the radiomap study."""

from locpriv.radiomap.study import setup_stage
from locpriv.smk import logged

with logged(snakemake):
    setup_stage(cfg=snakemake.params.cfg, seed=snakemake.params.seed, out=dict(snakemake.output))
