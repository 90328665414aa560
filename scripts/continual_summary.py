from locpriv.smk import logged
from locpriv.stages.continual import summarise

with logged(snakemake):
    summarise(list(snakemake.input), snakemake.output[0])
