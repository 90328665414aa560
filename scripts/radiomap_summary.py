"""The radiomap study's tidy summary (attack RMSE, MAE, guarantees) and Fig. 5's gradient-map table."""

from locpriv.radiomap.study import summarise
from locpriv.smk import logged

with logged(snakemake):
    i = snakemake.input
    summarise(
        cfg=snakemake.params.cfg,
        runs=snakemake.params.runs,
        attack_paths=i.attack,
        history_paths=i.history,
        transcripts=i.transcripts,
        out=dict(snakemake.output),
    )
