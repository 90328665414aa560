from locpriv.audit.stage import run_audit
from locpriv.smk import logged

with logged(snakemake):
    run_audit(
        mechanism=snakemake.wildcards.mechanism,
        params=snakemake.params.setting,
        grid_paths=dict(zip(snakemake.params.datasets, snakemake.input.grids, strict=True)),
        draws=snakemake.params.draws,
        seed=snakemake.params.seed,
        out_path=snakemake.output[0],
    )
