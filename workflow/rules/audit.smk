# audit: an empirical lower bound on epsilon beside every claimed guarantee (locpriv.audit).
# One cached job per mechanism x privacy-relevant parameter setting whose guarantee states an
# epsilon; settings without a formal guarantee get none.  The summary joins the bounds.

from locpriv.audit import stage as lpaudit

AUDITS = lpaudit.settings(RUNS.values())
AUDIT_DRAWS = config.get("audit", {}).get("draws", lpaudit.DEFAULT_DRAWS)


def audit_targets():
    return [f"results/audit/{mech}/{label}.parquet" for mech, label in AUDITS]


def audit_summary_input():
    """The combined audit table the summary joins (none when nothing claims an epsilon)."""
    return "results/audit/audit.parquet" if AUDITS else []


rule audit:
    input:
        grids=lambda wc: [f"results/encode/{ds}/grid.nc" for ds in AUDITS[(wc.mechanism, wc.params)]["datasets"]],
    output:
        "results/audit/{mechanism}/{params}.parquet",
    params:
        setting=lambda wc: AUDITS[(wc.mechanism, wc.params)]["params"],
        datasets=lambda wc: AUDITS[(wc.mechanism, wc.params)]["datasets"],
        seed=config["seed"],
        draws=AUDIT_DRAWS,
        code=lambda wc: code_fingerprint("locpriv.audit.stage", type(lpmechanisms.get(wc.mechanism)).__module__),
    threads: rule_resource("audit", "threads", 1)
    resources:
        mem_mb=rule_resource("audit", "mem_mb", 2000),
        runtime=rule_resource("audit", "runtime", 30),
    log:
        "logs/audit/{mechanism}/{params}.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/audit.py"


rule audit_table:
    input:
        audit_targets(),
    output:
        parquet="results/audit/audit.parquet",
        html=report(
            "results/audit/audit.html",
            caption="../report/audit.rst",
            category="Privacy audit",
        ),
        csv="results/audit/audit.csv",
    params:
        code=code_fingerprint("locpriv.audit.stage"),
    threads: rule_resource("audit_table", "threads", 1)
    resources:
        mem_mb=rule_resource("audit_table", "mem_mb", 1000),
        runtime=rule_resource("audit_table", "runtime", 10),
    log:
        "logs/audit/table.log",
    conda:
        "../../envs/locpriv.yaml"
    script:
        "../../scripts/audit_table.py"
