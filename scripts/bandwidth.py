from locpriv import sanity
from locpriv.smk import logged
from locpriv.stages.prepare import bandwidth

with logged(snakemake):
    # the warning thresholds come from the config, not params: they change no result, so they
    # must not re-run the job or change its cache key
    bandwidth(snakemake.input.points, snakemake.wildcards.dataset, snakemake.params.k,
              snakemake.params.seed, snakemake.output[0],
              spec=snakemake.config["datasets"][snakemake.wildcards.dataset],
              limits=sanity.settings(snakemake.config))
