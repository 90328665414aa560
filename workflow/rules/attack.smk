# attack_metrics: a run group's attacks and metrics in one job.  Per run: localise a fixed sample
# of users from exactly what the server saw, with both adversaries (same views, same sampled
# users): [RFF-KDE]'s local maxima and Shokri et al. (2011)'s Bayes-optimal adversary; then the
# run's tidy metrics table (gathered into results/summary/ by rule summary).  Apart from the attack
# files it only reads what the estimate job wrote, so it runs after it.


for _reps, _settings in group_rules().items():

    rule:
        name:
            group_rule_name("attack_metrics", _reps)
        input:
            views=per_run(view_dirs, _reps, flat=True),
            estimate=per_run(lambda wc: run_path("estimate.nc").format(**wc), _reps),
            points=of_first_run(
                lambda wc: results(f"ingest/{wc.dataset}/points.parquet"), _reps
            ),
            meta=of_first_run(
                lambda wc: results(f"ingest/{wc.dataset}/meta.json"), _reps
            ),
            grid=of_first_run(lambda wc: GRID_FILE.format(dataset=wc.dataset), _reps),
            truth=of_first_run(lambda wc: TRUTH_FILE.format(dataset=wc.dataset), _reps),
            bandwidth=of_first_run(bandwidth_input, _reps),
            pooled=of_first_run(pooled_input, _reps),
            workload=of_first_run(
                lambda wc: results(f"ingest/{wc.dataset}/range-workload.parquet"),
                _reps,
            ),
        output:
            local_maxima=group_path("attack-local_maxima.parquet", _reps),
            bayes=group_path("attack-bayes.parquet", _reps),
            metrics=group_path("metrics.parquet", _reps),
        log:
            logs("runs/{setting}/attack_metrics.log"),
        benchmark:
            benchmarks("runs/{setting}/attack_metrics.tsv")
        wildcard_constraints:
            setting=_settings,
        conda:
            "../../envs/locpriv.yaml"
        params:
            runs=per_run(run_of, _reps),
            views=per_run(view_files, _reps),
            seed=config["seed"],
            attack=config["attack"],
            adversary=lpbayes.settings(config),
            users_per_shard=config["users_per_shard"],
            hotspot_k=lputility.settings(config)["hotspot_k"],
            code=of_first_run(
                lambda wc: [
                    mechanism_code(wc, "attack"),
                    mechanism_code(wc, "metrics"),
                ],
                _reps,
            ),
        script:
            "../../scripts/attack_metrics.py"
