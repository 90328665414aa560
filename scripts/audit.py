from locpriv.smk import logged
from locpriv.audit.stage import run_audit

with logged(snakemake):
    run_audit(snakemake.wildcards.mechanism, snakemake.params.setting,
              dict(zip(snakemake.params.datasets, snakemake.input.grids)), snakemake.params.draws,
              snakemake.params.seed, snakemake.output[0])
