# Registered studies without a rule file of their own (a plugin's study, locpriv.study):
#   run (one job per run: Study.execute, its tidy table) -> summary (Study.collect)

from locpriv import study as lpstudy

try:
    REGISTERED = {name: lpstudy.get(name) for name in REGISTERED_STUDIES}
    REGISTERED_CFG = {
        name: study.validate(config["studies"][name])
        for name, study in REGISTERED.items()
    }
except (lpconfig.ConfigError, ValueError) as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None
for _name, _study in REGISTERED.items():
    if _study.execute is None:
        raise WorkflowError(
            f"invalid configuration: study {_name!r} has no rule file "
            f"(workflow/rules/studies/{_name}.smk) and no execute function to run it"
        )
# study -> run folder -> run
REGISTERED_RUNS = {
    name: {study.run_dir(run): run for run in study.runs(REGISTERED_CFG[name])}
    for name, study in REGISTERED.items()
}


def registered_code(wc):
    # the study's own module (a plugin's) and the generic stages
    return code_fingerprint("locpriv.study", REGISTERED[wc.study].execute.__module__)


rule study_run:
    output:
        results("studies/{study}/runs/{run}/metrics.parquet"),
    log:
        logs("studies/{study}/runs/{run}/run.log"),
    benchmark:
        benchmarks("studies/{study}/runs/{run}/run.tsv")
    wildcard_constraints:
        study="|".join(REGISTERED),
        run=r"[^.][^ ]*",
    conda:
        "../../../envs/locpriv.yaml"
    params:
        run=lambda wc: REGISTERED_RUNS[wc.study][wc.run],
        cfg=lambda wc: REGISTERED_CFG[wc.study],
        seed=config["seed"],
        code=registered_code,
    script:
        "../../../scripts/study_run.py"


rule study_summary:
    input:
        lambda wc: [
            results(f"studies/{wc.study}/runs/{run_dir}/metrics.parquet")
            for run_dir in REGISTERED_RUNS[wc.study]
        ],
    output:
        parquet=results("studies/{study}/summary.parquet"),
        csv=results("studies/{study}/summary.csv"),
    log:
        logs("studies/{study}/summary.log"),
    benchmark:
        benchmarks("studies/{study}/summary.tsv")
    wildcard_constraints:
        study="|".join(REGISTERED),
    conda:
        "../../../envs/locpriv.yaml"
    params:
        code=registered_code,
    script:
        "../../../scripts/study_summary.py"


for _name in REGISTERED:
    STUDY_TARGETS[_name] = [
        results(f"studies/{_name}/summary.parquet"),
        results(f"studies/{_name}/summary.csv"),
    ]
