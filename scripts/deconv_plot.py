from locpriv.deconv.plots import dataset_figure
from locpriv.smk import logged

with logged(snakemake):
    i = snakemake.input
    curves = {tuple(k.split("_")[1:]): v for k, v in i.items() if k.startswith("curves_")}
    tests = {k.split("_", 1)[1]: v for k, v in i.items() if k.startswith("test_")}
    dataset_figure(snakemake.wildcards.dataset, snakemake.params.cfg, i.summary, curves, tests,
                   snakemake.output[0], snakemake.params.dpi)
