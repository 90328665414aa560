from locpriv.heatmaps.study import run_stage
from locpriv.smk import logged

with logged(snakemake):
    o = snakemake.output
    p = snakemake.params
    run_stage(p.run, p.seed, snakemake.input[0], o.heatmap, o.transcript, o.releases, o.protocol,
              p.aggregation, p.secagg)
