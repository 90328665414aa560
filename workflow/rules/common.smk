# Config validation (before any job), experiment expansion and the small
# helpers every rule file uses.  Rules receive only the config slice they
# need, plus a fingerprint of the locpriv code they run.

import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from locpriv import config as lpconfig
from locpriv import frontier as lpfrontier
from locpriv import io as lpio
from locpriv import mechanisms as lpmechanisms
from locpriv import sanity as lpsanity
from locpriv.adversary import bayes as lpbayes
from locpriv.audit import stage as lpaudit
from locpriv.datasets import ingest as lpingest
from locpriv.datasets import windows as lpwindows
from locpriv.fingerprint import code_fingerprint, code_label
from locpriv.stages import continual as lpcontinual
from locpriv.stages import linkage as lplinkage
from locpriv.stages import utility as lputility

try:
    # activates the config's plugins (here and, through LOCPRIV_PLUGINS, in every job) first
    ALL_RUNS = lpconfig.check_startup(config, Path.cwd())
    # runs on the windows of a continual release are one tree per setting (locpriv.stages.continual)
    _WINDOWED, CONTINUAL = lpcontinual.split(config, ALL_RUNS)
    RUNS = {run.key: run for run in _WINDOWED}
    CONFIG_WARNINGS = lpsanity.config_warnings(
        config, RUNS.values()
    ) + lpconfig.size_warnings(config, RUNS.values())
except lpconfig.ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None


# Path helpers (the PyPSA-Eur idiom): every rule names its files through these, so one
# `results_dir` key moves a config's outputs, logs and Snakemake benchmark records together.
RESULTS = config.get("results_dir", "results")


def results(path):
    return f"{RESULTS}/{path}"


def logs(path):
    return f"logs/{RESULTS}/{path}"


def benchmarks(path):
    return f"benchmarks/{RESULTS}/{path}"


wildcard_constraints:
    dataset=lpsanity.DATASET_NAME,
    mechanism=r"[a-z0-9_]+",
    params=r"[^/]+",
    rep=r"\d+",
    shard=r"\d+",


# one run's folder, relative to results/, logs/ and benchmarks/ alike
RUN = "runs/{dataset}/{mechanism}/{params}/rep~{rep}"
RUN_DIR = results(RUN)


def run_path(path, base=results):
    """A file of one run: run_path("metrics.parquet"), run_path("metrics.log", logs)."""
    return base(f"{RUN}/{path}")


# the grid's size is part of its path: a config with another grid never overwrites this one,
# nor the surfaces on it (the truth and the pooled KDE); a studies-only config has no grid, and
# no main-DAG rule (workflow/Snakefile)
GRID_ID = "grid~{P}x{Q}".format(**config["grid"]) if RUNS else None
GRID_FILE = results(f"encode/{{dataset}}/{GRID_ID}/grid.nc")
TRUTH_FILE = results(f"ingest/{{dataset}}/{GRID_ID}/truth.nc")
POOLED_FILE = results(f"ingest/{{dataset}}/{GRID_ID}/pooled-kde/n~{{n}}_h~{{h}}.nc")


def run_datasets():
    """The config's datasets that some run uses (an unused dataset must not re-run the gathers)."""
    used = {run.dataset for run in RUNS.values()}
    return {ds: spec for ds, spec in config.get("datasets", {}).items() if ds in used}


def dataset_spec(wc):
    return config["datasets"][wc.dataset]


def run_of(wc):
    """The run this job belongs to, as the plain dict the stage functions take."""
    run = RUNS[(wc.dataset, wc.mechanism, wc.params, int(wc.rep))]
    return {
        "dataset": run.dataset,
        "mechanism": run.mechanism,
        "params": run.params,
        "rep": run.rep,
    }


def needs_bandwidth(wc):
    """Bandwidth file for runs and truths that use the kNN rule, else nothing."""
    spec = dataset_spec(wc)
    if getattr(wc, "mechanism", None) is None:
        return spec["source"] != "synthetic"
    return run_of(wc)["params"].get("h") == "knn"


def bandwidth_file(wc):
    return results(f"ingest/{wc.dataset}/bandwidth.json")


def bandwidth_input(wc):
    return bandwidth_file(wc) if needs_bandwidth(wc) else []


def ingest_source(wc):
    spec = dataset_spec(wc)
    return spec["path"] if spec["source"] == "points" else []


def dataset_units(wc):
    """Distance unit per dataset, from the config alone."""
    return {ds: lpingest.domain_of(spec)[1] for ds, spec in run_datasets().items()}


def frontier_levels(wc):
    domains = {ds: lpingest.domain_of(spec)[0] for ds, spec in run_datasets().items()}
    return lpfrontier.dataset_levels(
        run_datasets(),
        lpfrontier.settings(config)["levels"],
        domains,
    )


def mechanism_code(wc, stage):
    # the stage's code and the mechanism class's own module (a plugin's too)
    return code_fingerprint(
        f"locpriv.stages.{stage}", lpmechanisms.get(wc.mechanism).__module__
    )


def n_shards(wc, meta=None):
    """Shards of a run, from its dataset's ingest metadata (``meta``: read that file directly).

    An ``n`` above the users kept is the randomize job's one-line error, not this input
    function's traceback (it is checked before: at ingest and when the metadata exists).
    """
    from locpriv.stages.run import shard_count, shard_size, users_asked

    meta = meta or checkpoints.ingest.get(dataset=wc.dataset).output.meta
    kept = lpio.read_json(meta)["n_users"]
    return shard_count(
        min(users_asked(run_of(wc)["params"], kept), kept),
        shard_size(wc.mechanism, config["users_per_shard"]),
    )


SHARDS_PER_JOB = config.get("shards_per_job", 8)


def shard_batch(wc):
    """The shards one randomize job makes: batch k holds shards k*SHARDS_PER_JOB onwards."""
    from locpriv.stages.run import shard_batches

    return list(shard_batches(n_shards(wc), SHARDS_PER_JOB)[int(wc.batch)])


def view_dirs(wc, meta=None):
    """The randomize jobs' folders of one run (a run of few shards is one job)."""
    count = -(-n_shards(wc, meta) // SHARDS_PER_JOB)
    return [run_path(f"view/batch~{k}").format(**wc) for k in range(count)]


def view_files(wc, meta=None):
    """Every shard's view, in shard order, inside the randomize folders."""
    return [
        run_path(f"view/batch~{i // SHARDS_PER_JOB}/shard~{i}.parquet").format(**wc)
        for i in range(n_shards(wc, meta))
    ]


# ---- run groups: one estimate job and one attack_metrics job make every per-run file of a group
# (workflow/rules/aggregate.smk, attack.smk).  A group is every rep of a setting (dataset x mechanism x
# parameters) when each of its runs surely fits one randomize job (its n is a number within
# users_per_shard x shards_per_job, or it is an interactive mechanism's single shard), else one
# run: a run of many shards keeps its randomize jobs in parallel and its reps in separate jobs.
# The per-run files, their paths and bytes are those of one job per stage (each run keeps its seeds).


def _one_randomize_job(run):
    n = run.params.get("n", "all")
    if lpmechanisms.get(run.mechanism).interactive:
        return True
    return n != "all" and int(n) <= config["users_per_shard"] * SHARDS_PER_JOB


def run_groups():
    """{(setting, reps): runs in rep order}; ``setting`` is a run folder's dataset/mechanism/params."""
    settings = {}
    for run in sorted(RUNS.values(), key=lambda r: r.rep):
        settings.setdefault(f"{run.dataset}/{run.mechanism}/{run.pstr}", []).append(run)
    groups = {}
    for setting, runs in settings.items():
        if all(map(_one_randomize_job, runs)):
            groups[(setting, tuple(r.rep for r in runs))] = runs
        else:
            groups.update({(setting, (r.rep,)): [r] for r in runs})
    return groups


RUN_GROUPS = run_groups()


def group_rules():
    """The rules' rep sets -> a regex matching exactly the settings grouped with those reps."""
    out = {}
    for setting, reps in RUN_GROUPS:
        out.setdefault(reps, []).append(re.escape(setting))
    return {reps: "|".join(sorted(settings)) for reps, settings in sorted(out.items())}


def group_rule_name(stage, reps):
    return (
        f"{stage}_rep{reps[0]}"
        if len(reps) == 1
        else f"{stage}_reps{reps[0]}to{reps[-1]}"
    )


def group_path(name, reps, base=results):
    """One file (or folder) per rep of a group: group_path("metrics.parquet", (0, 1))."""
    return [base(f"runs/{{setting}}/rep~{rep}/{name}") for rep in reps]


def group_wildcards(wc, reps):
    """The group's runs as the per-run input functions read them (their wildcards), in rep order."""
    dataset, mechanism, params = wc.setting.split("/")
    return [
        Wildcards(dataset=dataset, mechanism=mechanism, params=params, rep=str(rep))
        for rep in reps
    ]


def per_run(fn, reps, flat=False):
    """An input or params function of a group rule: ``fn`` of each of its runs, in rep order
    (``flat``: the runs' lists joined, as an input list)."""

    def of_group(wc):
        values = [fn(w) for w in group_wildcards(wc, reps)]
        return [v for value in values for v in _listed(value)] if flat else values

    return of_group


def of_first_run(fn, reps):
    """An input or params function of a group rule whose value all of its runs share."""
    return lambda wc: fn(group_wildcards(wc, reps)[0])


def pooled_input(wc):
    """The run's non-private reference (same users, same bandwidth); none without a bandwidth."""
    params = run_of(wc)["params"]
    if "h" not in params:
        return []
    return POOLED_FILE.format(dataset=wc.dataset, n=params["n"], h=params["h"])


# ---- the privacy audit (workflow/rules/audit.smk): one job per mechanism x privacy-relevant setting

AUDITS = lpaudit.settings(RUNS.values())
AUDIT_DRAWS = config.get("audit", {}).get("draws", lpaudit.DEFAULT_DRAWS)


def audit_targets():
    return [results(f"audit/{mech}/{label}.parquet") for mech, label in AUDITS]


def audit_summary_input(wc):
    """The combined audit table the summary joins (none when nothing claims an epsilon)."""
    return results("audit/audit.parquet") if AUDITS else []


def audit_grids(wc):
    return [
        GRID_FILE.format(dataset=ds)
        for ds in AUDITS[(wc.mechanism, wc.params)]["datasets"]
    ]


def audit_code(wc):
    return code_fingerprint(
        "locpriv.audit.stage", lpmechanisms.get(wc.mechanism).__module__
    )


def run_targets(filename):
    return [results(f"{run.path}/{filename}") for run in RUNS.values()]


class Wildcards(dict):
    """Wildcards as the input functions read them (wc.name, or **wc), for calls outside the DAG."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def run_wildcards(run):
    return Wildcards(
        dataset=run.dataset, mechanism=run.mechanism, params=run.pstr, rep=str(run.rep)
    )


def _listed(files):
    return [files] if isinstance(files, str) else list(files)


# The files of the density runs below the summary.  rule all asks for every one of them, so one
# that is missing (deleted, or removed as damaged) is made again by the same command: Snakemake
# otherwise leaves an intermediate missing as long as the files made from it exist.
RUN_FILES = [
    "aggregate.nc",
    "estimate.nc",
    "attack-local_maxima.parquet",
    "attack-bayes.parquet",
    "metrics.parquet",
]


def intermediate_targets():
    # the combined audit table is read by the summary through an input function
    out = audit_targets() + (list(rules.audit_table.output) if AUDITS else [])
    for ds in run_datasets():
        out += [
            results(f"ingest/{ds}/points.parquet"),
            results(f"ingest/{ds}/meta.json"),
            results(f"ingest/{ds}/range-workload.parquet"),
            GRID_FILE.format(dataset=ds),
            TRUTH_FILE.format(dataset=ds),
        ]
        out += _listed(bandwidth_input(Wildcards(dataset=ds)))
    for run in RUNS.values():
        wc = run_wildcards(run)
        out += [results(f"{run.path}/{name}") for name in RUN_FILES]
        out += _listed(pooled_input(wc)) + _listed(bandwidth_input(wc))
    return sorted(set(out))


def view_targets(wc):
    """Every run's randomize folders (known once its dataset is ingested)."""
    return [d for run in RUNS.values() for d in view_dirs(run_wildcards(run))]


def view_folders():
    """Each randomize folder of a run whose dataset is ingested -> the shard files its job writes.

    Read from the ingest metadata directly: before the DAG, no checkpoint can be asked.
    """
    out = {}
    for run in RUNS.values():
        meta = results(f"ingest/{run.dataset}/meta.json")
        if os.path.exists(meta):
            wc = run_wildcards(run)
            files = view_files(wc, meta)
            for folder in view_dirs(wc, meta):
                out[folder] = [f for f in files if os.path.dirname(f) == folder]
    return out


def check_users_kept():
    """Stop before the DAG when a run asks more users than an ingested dataset kept."""
    for ds in run_datasets():
        meta = results(f"ingest/{ds}/meta.json")
        problem = os.path.exists(meta) and lpsanity.too_few_users(
            lpsanity.requested_users(config, ds), ds, lpio.read_json(meta)
        )
        if problem:
            raise WorkflowError(f"invalid configuration: {problem}")


# ---- targets of the summary, plot and frontier rules (workflow/rules/report.smk, frontier.smk)

SUMMARY_PLOTS = ["metrics_vs_n", "tradeoff", "gain_per_cost"]


def summary_plot_settings(wc):
    # the figures' settings, the frontier's adversary (the privacy column of metrics_vs_n) and
    # each dataset's distance unit (axis labels)
    return {
        **config["plots"],
        "adversary": lpfrontier.settings(config)["adversary"],
        "units": dataset_units(wc),
    }


# The report shows HTML and only offers a CSV as a download: each table a reader decides from is also
# written as an HTML page (locpriv.report_tables), captioned and filed in its report section.
TABLES = {  # table: its report section, page title and csv_to_html's options
    "summary/runs": {
        "section": "2. Summary",
        "title": "runs.csv: one row per mechanism and setting",
        # the metrics in view: parameters as one column, the guarantee's long texts at the end
        "options": {
            "settings": True,
            "last": [
                "guarantee",
                "epsilon_relation",
                "epsilon_model",
                "epsilon_non_private_inputs",
            ],
        },
    },
    "summary/ingest": {
        "section": "2. Summary",
        "title": "ingest.csv: rows read, dropped and kept per dataset",
        "options": {},
    },
    "audit/audit": {
        "section": "Privacy audit",
        "title": "Privacy audit: claimed epsilon against its empirical lower bound (audit.csv)",
        "options": {
            "hide": ["k_x", "k_xprime", "seed"],
            "first": [
                "mechanism",
                "audit_params",
                "dataset",
                "claimed_epsilon",
                "epsilon_lb",
                "holds",
            ],
        },
    },
    "studies/heatmaps/table1": {
        "section": "Location heatmaps (distributed DP)",
        "title": "[DDP-Heatmaps] Table 1 at the base setting (table1.csv)",
        "options": {},
    },
}


def surface_runs(dataset):
    """Per mechanism, the run with the most users (rep 0) on this dataset."""
    best = {}
    for run in RUNS.values():
        if run.dataset != dataset or run.rep != 0:
            continue
        size = float("inf") if run.params["n"] == "all" else run.params["n"]
        if run.mechanism not in best or size > best[run.mechanism][0]:
            best[run.mechanism] = (size, run)
    return [best[m][1] for m in sorted(best)]


def surface_estimates(wc):
    return [results(f"{run.path}/estimate.nc") for run in surface_runs(wc.dataset)]


def surface_labels(wc):
    # numbers as a reader writes them: epsilon=2, not epsilon=2.0
    return [
        f"{run.mechanism}: "
        + ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in run.params.items()
        )
        for run in surface_runs(wc.dataset)
    ]


def rff_runs():
    return [run for run in RUNS.values() if run.mechanism == "rff"]


def plot_targets():
    if not RUNS:
        return []
    datasets = sorted({run.dataset for run in RUNS.values()})
    plots = SUMMARY_PLOTS[:2]
    if len({run.params["B"] for run in rff_runs()}) > 1:
        plots.append("gain_per_cost")  # the gain per unit cost needs two feature counts
    targets = [results(f"plots/{p}.png") for p in plots]
    targets += [results(f"plots/surfaces-{ds}.png") for ds in datasets]
    # the RFF paper's toy figures illustrate the method, not the user's data: only when asked for
    if rff_runs() and config["plots"].get("illustrations", False):
        targets += [
            results("plots/rff-fig3-convergence.png"),
            results("plots/rff-fig4-user-surfaces.png"),
        ]
    return targets


def summary_targets():
    if not RUNS:
        return []
    tables = [
        "metrics.parquet",
        "metrics.csv",
        "runs.csv",
        "runs.html",
        "ingest.csv",
        "ingest.html",
    ]
    audit = [results("audit/audit.html")] if AUDITS else []
    return [results(f"summary/{name}") for name in tables] + audit


def frontier_targets():
    names = [
        "summary/frontier.csv",
        "summary/frontier.html",
        "summary/recommendation.html",
    ]
    return [results(p) for p in (*names, "plots/frontier.png")] if RUNS else []


# `snakemake --report report.html` after an interrupted run, before any run or after a run of
# another config: report the outputs that exist instead of stopping at the first missing one.
REPORT_MODE = workflow.is_main_process and any(
    a.split("=")[0] == "--report" for a in sys.argv
)
if REPORT_MODE:
    # the report lists each result's job parameters for a reader: name the code, not its hash
    # (rule files are parsed after this one, so their params see this binding)
    code_fingerprint = code_label


def default_targets(*groups):
    targets = [t for group in groups for t in group]
    return [t for t in targets if Path(t).exists()] if REPORT_MODE else targets


# ---- the adversaries across releases (workflow/rules/linkage.smk): a dataset's windows, per setting and rep
WINDOWED = lpwindows.windowed_settings(RUNS.values(), config.get("datasets", {}))
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
    names = [
        "summary/cross_release_bayes.csv",
        "summary/trajectory_recovery.csv",
        "summary/frontier_releases.csv",
    ]
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


# ---- continual releases (workflow/rules/continual.smk, locpriv.stages.continual)

CONTINUAL_BY_PATH = {setting.path: setting for setting in CONTINUAL}
CONTINUAL_RUN = "continual/{dataset}/{mechanism}/{params}/rep~{rep}"


def continual_targets():
    """Every continual run's files and their summary (rule all asks for them)."""
    files = ("nodes.parquet", "maps.parquet", "metrics.csv")
    runs = [results(f"{s.path}/{name}") for s in CONTINUAL for name in files]
    return runs + [results("summary/continual.csv")]


def continual_setting(wc):
    return CONTINUAL_BY_PATH[CONTINUAL_RUN.format(**wc)]
