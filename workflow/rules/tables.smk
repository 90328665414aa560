# The report shows HTML and only offers a CSV as a download: the tables of TABLES (common.smk)
# are also written as HTML pages (locpriv.report_tables), captioned and filed in their sections.


rule table_html:
    input:
        results("{table}.csv"),
    output:
        update(
            report(
                results("{table}.html"),
                caption="../report/tables.rst",
                category=lambda wc: TABLES[wc.table]["section"],
            )
        ),
    log:
        logs("tables/{table}.log"),
    benchmark:
        benchmarks("tables/{table}.tsv")
    wildcard_constraints:
        table="|".join(TABLES),
    conda:
        "../../envs/locpriv.yaml"
    params:
        title=lambda wc: TABLES[wc.table]["title"],
        options=lambda wc: TABLES[wc.table]["options"],
        code=code_fingerprint("locpriv.report_tables"),
    script:
        "../../scripts/table_html.py"
