"""Attack RMSE, MAE, guarantee and Fig. 5 gradient-map tables over all runs of the radiomap study."""
from locpriv.radiomap.stages import summarise
from locpriv.smk import logged

with logged(snakemake):
    i = snakemake.input
    summarise(cfg=snakemake.params.cfg, runs=snakemake.params.runs, attack_paths=i.attack, history_paths=i.history,
              transcripts=i.transcripts, out=dict(snakemake.output))
