from locpriv.ingest_counts import write_counts
from locpriv.smk import logged

with logged(snakemake):
    write_counts(
        meta_paths=list(snakemake.input.meta), datasets=list(snakemake.params.datasets), out_csv=snakemake.output[0]
    )
