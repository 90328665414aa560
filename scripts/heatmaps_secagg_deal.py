"""The users of the secure-aggregation scale sub-query, dealt into shards."""

from locpriv.heatmaps.secagg_scale import deal_stage
from locpriv.smk import logged

with logged(snakemake):
    deal_stage(
        population_path=snakemake.input[0],
        scale=snakemake.params.scale,
        seed=snakemake.params.seed,
        out=snakemake.output[0],
    )
