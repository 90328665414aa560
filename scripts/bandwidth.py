from locpriv.smk import logged
from locpriv.stages.prepare import bandwidth

with logged(snakemake):
    bandwidth(points_path=snakemake.input.points, name=snakemake.wildcards.dataset, k=snakemake.params.k,
              seed=snakemake.params.seed, out_json=snakemake.output[0])
