from locpriv.report_tables import csv_to_html
from locpriv.smk import logged

with logged(snakemake):
    csv_to_html(snakemake.input[0], snakemake.output[0], snakemake.params.title, **snakemake.params.options)
