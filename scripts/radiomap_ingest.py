"""Synthetic city, users, stations and measurement pairs of the radiomap study."""
from locpriv.radiomap.stages import ingest
from locpriv.seeding import rng
from locpriv.smk import logged

with logged(snakemake):
    cfg = snakemake.params.cfg
    ingest(cfg, rng(snakemake.params.seed, "radiomap", "environment"), dict(snakemake.output))
