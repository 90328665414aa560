"""The scale sub-query's released histogram and its per-shard wall time and peak memory table."""

from locpriv.heatmaps.secagg_scale import gather_stage
from locpriv.smk import logged

with logged(snakemake):
    gather_stage(
        paths=list(snakemake.input.batches),
        benchmarks=list(snakemake.input.benchmarks),
        out_histogram=snakemake.output.histogram,
        out_table=snakemake.output.table,
    )
