# the adversaries across releases: every setting run on a dataset with `releases: {window: ...}` makes T
# releases of the same persons (datasets.windows); these rules attack them together, per setting and rep
# (locpriv.stages.linkage).  A config without windowed datasets has none of these jobs.  Their helpers
# (WINDOWED, window_wildcards, ...) are in common.smk.


if WINDOWED:

    rule cross_release_bayes:
        # the Bayes adversary over each sampled person's home cell, from all their windows' reports
        input:
            views=lambda wc: [d for w in window_wildcards(wc) for d in view_dirs(w)],
            points=per_window(results("ingest/{dataset}/points.parquet")),
            meta=per_window(results("ingest/{dataset}/meta.json")),
            grid=first_window(GRID_FILE),
            truth=first_window(TRUTH_FILE),
            bandwidth=lambda wc: [
                b for w in window_wildcards(wc) for b in _listed(bandwidth_input(w))
            ],
        output:
            f"{LINKAGE}/cross_release_bayes.parquet",
        log:
            logs("linkage/{dataset}/{mechanism}/{params}/rep~{rep}/bayes.log"),
        benchmark:
            benchmarks("linkage/{dataset}/{mechanism}/{params}/rep~{rep}/bayes.tsv")
        wildcard_constraints:
            dataset=WINDOWED_NAMES,
        conda:
            "../../envs/locpriv.yaml"
        params:
            runs=lambda wc: [run_of(w) for w in window_wildcards(wc)],
            views=lambda wc: [view_files(w) for w in window_wildcards(wc)],
            bandwidths=lambda wc: [
                bandwidth_file(w) if needs_bandwidth(w) else None
                for w in window_wildcards(wc)
            ],
            seed=config["seed"],
            adversary=lpbayes.settings(config),
            code=lambda wc: code_fingerprint(
                "locpriv.stages.linkage", lpmechanisms.get(wc.mechanism).__module__
            ),
        script:
            "../../scripts/cross_release_bayes.py"

    rule trajectory_recovery:
        # Xu et al. (2017) on the setting's per-window published maps
        input:
            estimates=lambda wc: [
                run_path("estimate.nc").format(**w) for w in window_wildcards(wc)
            ],
            points=per_window(results("ingest/{dataset}/points.parquet")),
            meta=per_window(results("ingest/{dataset}/meta.json")),
            grid=first_window(GRID_FILE),
        output:
            f"{LINKAGE}/recovery.parquet",
        log:
            logs("linkage/{dataset}/{mechanism}/{params}/rep~{rep}/recovery.log"),
        benchmark:
            benchmarks("linkage/{dataset}/{mechanism}/{params}/rep~{rep}/recovery.tsv")
        wildcard_constraints:
            dataset=WINDOWED_NAMES,
        conda:
            "../../envs/locpriv.yaml"
        params:
            runs=lambda wc: [run_of(w) for w in window_wildcards(wc)],
            linkage=config.get("linkage", {}),
            code=code_fingerprint("locpriv.stages.linkage"),
        script:
            "../../scripts/trajectory_recovery.py"

    rule exact_recovery:
        # Xu et al. (2017) on the exact counts per cell and window: the paper's own setting
        input:
            points=per_window(results("ingest/{dataset}/points.parquet")),
            meta=per_window(results("ingest/{dataset}/meta.json")),
            grid=first_window(GRID_FILE),
        output:
            results("linkage/{dataset}/exact/recovery.parquet"),
        log:
            logs("linkage/{dataset}/exact/recovery.log"),
        benchmark:
            benchmarks("linkage/{dataset}/exact/recovery.tsv")
        wildcard_constraints:
            dataset=WINDOWED_NAMES,
        conda:
            "../../envs/locpriv.yaml"
        params:
            linkage=config.get("linkage", {}),
            code=code_fingerprint("locpriv.stages.linkage"),
        script:
            "../../scripts/exact_recovery.py"

    rule linkage_summary:
        # both attacks against the number of releases, over the reps
        input:
            bayes=linkage_files("cross_release_bayes.parquet")[0],
            recovery=linkage_files("recovery.parquet")[0] + exact_files()[0],
        output:
            bayes=results("summary/cross_release_bayes.csv"),
            recovery=results("summary/trajectory_recovery.csv"),
            # both attacks per k with each setting's trust model and person-level epsilon after k releases
            frontier=results("summary/frontier_releases.csv"),
            png=report(
                results("plots/cross_release.png"),
                caption="../report/cross_release.rst",
                category="1. Frontier",
            ),
        log:
            logs("linkage_summary.log"),
        benchmark:
            benchmarks("linkage_summary.tsv")
        conda:
            "../../envs/locpriv.yaml"
        params:
            bayes_runs=linkage_files("cross_release_bayes.parquet")[1],
            recovery_runs=linkage_files("recovery.parquet")[1] + exact_files()[1],
            guarantees=lplinkage.setting_guarantees(config, WINDOWED),
            dpi=config["plots"].get("dpi", 110),
            code=code_fingerprint("locpriv.stages.linkage"),
        script:
            "../../scripts/linkage_summary.py"
