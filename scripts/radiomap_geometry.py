"""Cells under every measurement / evaluation link and the link heights (sparse)."""
from locpriv.radiomap.stages import geometry
from locpriv.smk import logged

with logged(snakemake):
    geometry(snakemake.params.cfg, dict(snakemake.input), dict(snakemake.output))
