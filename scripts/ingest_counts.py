from locpriv.ingest_counts import write_counts
from locpriv.smk import logged

with logged(snakemake):
    write_counts(list(snakemake.input.meta), list(snakemake.params.datasets), snakemake.output[0])
