# aggregate -> estimate: the server side of one run in one job.  The server merges the
# shards' partials with the mechanism's combine (aggregate.nc), then turns the sum into the
# density on the evaluation grid with its guarantee in the attrs (estimate.nc).


rule aggregate_estimate:
    input:
        views=view_dirs,
        grid=GRID_FILE,
        bandwidth=bandwidth_input,
    output:
        aggregate=run_path("aggregate.nc"),
        estimate=run_path("estimate.nc"),
    log:
        run_path("aggregate_estimate.log", logs),
    benchmark:
        run_path("aggregate_estimate.tsv", benchmarks)
    conda:
        "../../envs/locpriv.yaml"
    params:
        run=run_of,
        views=view_files,
        code=lambda wc: mechanism_code(wc, "run"),
    script:
        "../../scripts/aggregate.py"
