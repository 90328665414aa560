"""RSS measurements y = gamma(p; h*) + xi ([GeoDP-Radio] eq. 4)."""
from locpriv.radiomap.stages import measure
from locpriv.seeding import rng
from locpriv.smk import logged

with logged(snakemake):
    measure(snakemake.params.cfg, dict(snakemake.input),
            rng(snakemake.params.seed, "radiomap", "measurements"), dict(snakemake.output))
