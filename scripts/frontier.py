from locpriv.frontier import frontier
from locpriv.smk import logged

with logged(snakemake):
    p = snakemake.params
    frontier(
        summary_parquet=snakemake.input[0],
        cfg=p.settings,
        levels=p.levels,
        units=p.units,
        dpi=p.dpi,
        out_csv=snakemake.output.csv,
        out_png=snakemake.output.png,
        out_html=snakemake.output.html,
        out_recommendation=snakemake.output.recommendation,
    )
