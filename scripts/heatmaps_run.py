"""Every rep of one heatmaps setting: the protocol run (map, transcript, noisy sums), then its metrics."""

from locpriv.heatmaps.study import setting_stage
from locpriv.smk import logged

with logged(snakemake):
    o, p = snakemake.output, snakemake.params
    setting_stage(
        setting=p.setting,
        reps=p.reps,
        seed=p.seed,
        population_path=snakemake.input[0],
        out={k: list(o[k]) for k in ("heatmap", "transcript", "releases", "protocol", "metrics")},
        aggregation=p.aggregation,
        secagg=p.secagg,
        adaptive=p.adaptive,
    )
