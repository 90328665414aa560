from locpriv.deconv.plots import dataset_figure
from locpriv.smk import logged

with logged(snakemake):
    i = snakemake.input
    curves = {tuple(k.split("_")[1:]): v for k, v in i.items() if k.startswith("curves_")}
    tests = {k.split("_", 1)[1]: v for k, v in i.items() if k.startswith("test_")}
    dataset_figure(
        name=snakemake.wildcards.dataset,
        cfg=snakemake.params.cfg,
        summary_path=i.summary,
        curve_paths=curves,
        test_paths=tests,
        out_png=snakemake.output[0],
        dpi=snakemake.params.dpi,
    )
