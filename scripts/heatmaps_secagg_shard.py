"""One batch of shards of the scale sub-query through the masking protocol, with its measurements."""

from locpriv.heatmaps.secagg_scale import shard_stage
from locpriv.smk import logged

with logged(snakemake):
    p = snakemake.params
    shard_stage(
        deal_path=snakemake.input[0],
        shards=p.shards,
        scale=p.scale,
        epsilon=p.epsilon,
        secagg=p.secagg,
        seed=p.seed,
        out=snakemake.output[0],
    )
