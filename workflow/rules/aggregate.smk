# estimate: the client and server side of a run group (common.smk, RUN_GROUPS) in one job.  Per
# run: its first randomize batch (view/batch~0; any later batches are randomize jobs), then the
# server merges the shards' partials with the mechanism's combine (aggregate.nc) and turns the
# sum into the density on the evaluation grid with its guarantee in the attrs (estimate.nc).
# One rule per rep set, each matching exactly its groups' settings.


for _reps, _settings in group_rules().items():

    rule:
        name:
            group_rule_name("estimate", _reps)
        input:
            points=of_first_run(
                lambda wc: results(f"ingest/{wc.dataset}/points.parquet"), _reps
            ),
            meta=of_first_run(
                lambda wc: results(f"ingest/{wc.dataset}/meta.json"), _reps
            ),
            grid=of_first_run(lambda wc: GRID_FILE.format(dataset=wc.dataset), _reps),
            bandwidth=of_first_run(bandwidth_input, _reps),
            later_views=per_run(lambda wc: view_dirs(wc)[1:], _reps, flat=True),
        output:
            views=[directory(p) for p in group_path("view/batch~0", _reps)],
            aggregate=group_path("aggregate.nc", _reps),
            estimate=group_path("estimate.nc", _reps),
        log:
            logs("runs/{setting}/estimate.log"),
        benchmark:
            benchmarks("runs/{setting}/estimate.tsv")
        wildcard_constraints:
            setting=_settings,
        conda:
            "../../envs/locpriv.yaml"
        params:
            runs=per_run(run_of, _reps),
            shards=per_run(lambda wc: shard_batch(Wildcards(wc, batch="0")), _reps),
            views=per_run(view_files, _reps),
            seed=config["seed"],
            users_per_shard=config["users_per_shard"],
            code=of_first_run(lambda wc: mechanism_code(wc, "run"), _reps),
        script:
            "../../scripts/estimate.py"
