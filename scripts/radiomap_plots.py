"""Table II curves, Fig. 4, Fig. 5 and Fig. 6 of the radiomap study."""
from locpriv.radiomap.stages import plot_all
from locpriv.smk import logged

with logged(snakemake):
    plot_all(snakemake.params.cfg, snakemake.params.runs, dict(snakemake.input), snakemake.input.transcripts,
             dict(snakemake.output))
