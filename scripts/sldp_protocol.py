from locpriv.sldp.study import protocol_stage
from locpriv.smk import logged

with logged(snakemake):
    out = snakemake.output
    protocol_stage(snakemake.params.run, snakemake.params.cfg, snakemake.params.seed,
                   out.partition, out.rounds, out.reports, out.regions)
