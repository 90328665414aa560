from locpriv.smk import logged
from locpriv.stages.continual import summarise

with logged(snakemake):
    summarise(paths=list(snakemake.input), out=snakemake.output[0])
