from locpriv import io
from locpriv.smk import logged, optional_input
from locpriv.stages.prepare import pooled_kde
from locpriv.stages.run import n_users_of

with logged(snakemake):
    wc = snakemake.wildcards
    n = n_users_of({"n": wc.n if wc.n == "all" else int(wc.n)}, snakemake.input.meta)
    h = io.read_json(optional_input(snakemake, "bandwidth"))["h"] if wc.h == "knn" else float(wc.h)
    pooled_kde(
        points_path=snakemake.input.points, n_users=n, h=h, grid_path=snakemake.input.grid, out_nc=snakemake.output[0]
    )
