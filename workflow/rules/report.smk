# plots and the Snakemake report; they read the summary (and surfaces the estimates).
# update() on every figure: a failed re-plot restores the previous figure instead of deleting it.


rule plot_summary:
    input:
        results("summary/metrics.parquet"),
    output:
        update(
            report(
                results("plots/{plot}.png"),
                caption="../report/summary_plots.rst",
                category="3. Privacy-utility (per paper)",
            )
        ),
    log:
        logs("plots/{plot}.log"),
    benchmark:
        benchmarks("plots/{plot}.tsv")
    wildcard_constraints:
        plot="|".join(SUMMARY_PLOTS),
    conda:
        "../../envs/locpriv.yaml"
    params:
        settings=summary_plot_settings,
        code=code_fingerprint("locpriv.plots"),
    script:
        "../../scripts/plot_summary.py"


rule plot_rff_illustrations:
    output:
        fig3=update(
            report(
                results("plots/rff-fig3-convergence.png"),
                caption="../report/rff_fig3.rst",
                category="5. RFF paper illustrations",
            )
        ),
        fig4=update(
            report(
                results("plots/rff-fig4-user-surfaces.png"),
                caption="../report/rff_fig4.rst",
                category="5. RFF paper illustrations",
            )
        ),
    log:
        logs("plots/rff-illustrations.log"),
    benchmark:
        benchmarks("plots/rff-illustrations.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        seed=config["seed"],
        dpi=config["plots"].get("dpi", 110),
        code=code_fingerprint("locpriv.plots_rff"),
    script:
        "../../scripts/plot_rff_illustrations.py"


rule plot_surfaces:
    input:
        truth=TRUTH_FILE,
        estimates=surface_estimates,
    output:
        update(
            report(
                results("plots/surfaces-{dataset}.png"),
                caption="../report/surfaces.rst",
                category="4. Density surfaces",
                subcategory="{dataset}",
            )
        ),
    log:
        logs("plots/surfaces-{dataset}.log"),
    benchmark:
        benchmarks("plots/surfaces-{dataset}.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        labels=surface_labels,
        settings=config["plots"],
        code=code_fingerprint("locpriv.plots"),
    script:
        "../../scripts/plot_surfaces.py"
