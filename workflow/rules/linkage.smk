# the adversaries across releases: every setting run on a dataset with `releases: {window: ...}` makes T
# releases of the same persons (datasets.windows); these rules attack them together, per setting and rep
# (locpriv.stages.linkage).  A config without windowed datasets has none of these jobs.

from locpriv.stages import linkage as lplinkage


def windowed_settings():
    """{(dataset, mechanism, params, rep): its runs in window order} over the datasets cut into windows."""
    out = {}
    for run in RUNS.values():
        spec = config["datasets"][run.dataset]
        if "window" in spec:
            key = (spec["window"]["of"], run.mechanism, run.pstr, run.rep)
            out.setdefault(key, []).append(run)
    index = lambda run: config["datasets"][run.dataset]["window"]["index"]
    return {key: sorted(runs, key=index) for key, runs in sorted(out.items())}


WINDOWED = windowed_settings()
WINDOWED_DATASETS = {
    key[0]: [r.dataset for r in runs] for key, runs in WINDOWED.items()
}
LINKAGE = results("linkage/{dataset}/{mechanism}/{params}/rep~{rep}")


def window_wildcards(wc):
    """The T window runs of a linkage job, as the per-run input functions read them."""
    runs = WINDOWED[(wc.dataset, wc.mechanism, wc.params, int(wc.rep))]
    return [run_wildcards(run) for run in runs]


def windows_of(wc):
    """The window datasets of a dataset (or of a linkage job's), in time order."""
    return WINDOWED_DATASETS[wc.dataset]


def per_window(path):
    """An input function: ``path`` (a dataset's file pattern) of every window of the job's dataset."""
    return lambda wc: [path.format(dataset=w) for w in windows_of(wc)]


def first_window(path):
    """The first window's file: every window shares the grid, and the prior is the first window's truth."""
    return lambda wc: path.format(dataset=windows_of(wc)[0])


def linkage_targets():
    if not WINDOWED:
        return []
    names = ["summary/cross_release_bayes.csv", "summary/trajectory_recovery.csv"]
    return [results(n) for n in (*names, "plots/cross_release.png")]


def linkage_files(name):
    """Every setting's and rep's linkage file ``name``, and the runs they are named by in the summary."""
    keys = list(WINDOWED)
    files = [
        f"{LINKAGE}/{name}".format(dataset=d, mechanism=m, params=p, rep=r)
        for d, m, p, r in keys
    ]
    runs = [
        {"dataset": d, "mechanism": m, "setting": p, "rep": r} for d, m, p, r in keys
    ]
    return files, runs


def exact_files():
    datasets = sorted({key[0] for key in WINDOWED})
    files = [results(f"linkage/{d}/exact/recovery.parquet") for d in datasets]
    runs = [
        {"dataset": d, "mechanism": "exact", "setting": "exact", "rep": 0}
        for d in datasets
    ]
    return files, runs


WINDOWED_NAMES = "|".join(re.escape(d) for d in sorted(WINDOWED_DATASETS))


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
            dpi=config["plots"].get("dpi", 110),
            code=code_fingerprint("locpriv.stages.linkage"),
        script:
            "../../scripts/linkage_summary.py"
