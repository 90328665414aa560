from locpriv.report_tables import csv_to_html
from locpriv.smk import logged

with logged(snakemake):
    csv_to_html(
        csv_path=snakemake.input[0],
        out_html=snakemake.output[0],
        title=snakemake.params.title,
        **snakemake.params.options,
    )
