"""Table II curves, Fig. 4, Fig. 5 and Fig. 6 of the radiomap study, from its summary and Fig. 5's map table."""

from locpriv.radiomap.plots import study_figures
from locpriv.smk import logged

with logged(snakemake):
    study_figures(cfg=snakemake.params.cfg, tables=dict(snakemake.input), out=dict(snakemake.output))
