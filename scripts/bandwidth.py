from locpriv import sanity
from locpriv.smk import logged
from locpriv.stages.prepare import bandwidth

with logged(snakemake):
    # the warning thresholds come from the config, not params: they change no result, so they
    # must not re-run the job or change its cache key
    bandwidth(
        points_path=snakemake.input.points,
        name=snakemake.wildcards.dataset,
        k=snakemake.params.k,
        seed=snakemake.params.seed,
        out_json=snakemake.output[0],
        spec=snakemake.config["datasets"][snakemake.wildcards.dataset],
        limits=sanity.settings(snakemake.config),
    )
