# audit: an empirical lower bound on epsilon beside every claimed guarantee (locpriv.audit).
# One cached job per mechanism x privacy-relevant parameter setting whose guarantee states an
# epsilon; settings without a formal guarantee get none.  The summary joins the bounds.
# (AUDITS, audit_targets and the input functions: workflow/rules/common.smk)


rule audit:
    input:
        grids=audit_grids,
    output:
        results("audit/{mechanism}/{params}.parquet"),
    log:
        logs("audit/{mechanism}/{params}.log"),
    benchmark:
        benchmarks("audit/{mechanism}/{params}.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        setting=lambda wc: AUDITS[(wc.mechanism, wc.params)]["params"],
        datasets=lambda wc: AUDITS[(wc.mechanism, wc.params)]["datasets"],
        seed=config["seed"],
        draws=AUDIT_DRAWS,
        code=audit_code,
    script:
        "../../scripts/audit.py"


rule audit_table:
    input:
        audit_targets(),
    output:
        # update(): a failed re-run restores the previous table instead of deleting it
        parquet=update(results("audit/audit.parquet")),
        # the report shows it as audit/audit.html (rule table_html)
        csv=update(results("audit/audit.csv")),
    log:
        logs("audit/table.log"),
    benchmark:
        benchmarks("audit/table.tsv")
    conda:
        "../../envs/locpriv.yaml"
    params:
        code=code_fingerprint("locpriv.audit.stage"),
    script:
        "../../scripts/audit_table.py"
