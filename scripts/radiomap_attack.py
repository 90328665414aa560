"""WCL attack ([GeoDP-Radio] eq. 18) on every kept epoch of one run's transcript."""
from locpriv.radiomap.stages import attack
from locpriv.smk import logged

with logged(snakemake):
    attack(snakemake.params.cfg, dict(snakemake.input), snakemake.input.transcript, snakemake.output[0])
