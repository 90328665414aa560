from locpriv import sanity
from locpriv.smk import logged
from locpriv.stages.prepare import ingest

with logged(snakemake):
    # the runs' n come from the config, not params: they are checked here (the earliest point the
    # number of users is known) but are not part of the ingest's identity or cache key
    dataset = snakemake.wildcards.dataset
    ingest(
        name=dataset,
        spec=snakemake.params.spec,
        seed=snakemake.params.seed,
        out_points=snakemake.output.points,
        out_meta=snakemake.output.meta,
        requested=sanity.requested_users(snakemake.config, dataset),
    )
