"""Snakemake's linter and the snakefmt formatter on the workflow (both also run in .ci/run)."""

import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, run_snakemake

# At most this many `snakemake --lint` findings on the default config; each one allowed
# below says why it stays.
MAX_FINDINGS = 5
ALLOWED: dict[str, str] = {}


def findings(text: str) -> list[str]:
    """'<where>: <title>' per finding of Snakemake's text lint report."""
    where, found = None, []
    for line in text.splitlines():
        if line.startswith("Lints for "):
            where = line[len("Lints for ") :].rstrip(":")
        elif re.match(r"^    \* ", line):
            found.append(f"{where}: {line.strip()[2:]}")
    return found


def test_lint_on_the_default_config(tmp_path):
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    proc = run_snakemake(tmp_path, "--lint", check=False)
    found = findings(proc.stdout + proc.stderr)
    unexplained = [f for f in found if not any(key in f for key in ALLOWED)]
    assert len(found) <= MAX_FINDINGS and not unexplained, "\n".join(found[:40])
    assert proc.returncode == 0 or found, proc.stderr[-2000:]  # the linter itself ran


def unformatted(*files) -> bool:
    return (
        subprocess.run([sys.executable, "-m", "snakefmt", "--check", *map(str, files)], capture_output=True).returncode
        != 0
    )


def test_rule_files_are_snakefmt_formatted():
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").rglob("*.smk"))]
    if unformatted(*files):  # then name them (snakefmt --check only counts them)
        named = [str(f.relative_to(ROOT)) for f in files if unformatted(f)]
        pytest.fail(f"not snakefmt-formatted (run `snakefmt Snakefile workflow/rules`): {', '.join(named)}")


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            'Lints for snakefile a.smk:\n    * Absolute path "/x" in line 3:\n      text\n',
            ['snakefile a.smk: Absolute path "/x" in line 3:'],
        ),
        (
            "Lints for rule r (line 1, a.smk):\n    * No log directive defined:\n",
            ["rule r (line 1, a.smk): No log directive defined:"],
        ),
        ("Building DAG of jobs...\n", []),
    ],
)
def test_findings_parser(text, expected):
    assert findings(text) == expected


@pytest.mark.parametrize("profile", ["profiles/default/config.yaml", "workflow/profiles/slurm/config.yaml"])
def test_profile_job_sizes_name_existing_rules(profile):
    """A renamed rule would silently fall back to the default job size."""
    import yaml

    rules = {
        m
        for f in [ROOT / "Snakefile", *(ROOT / "workflow/rules").rglob("*.smk")]
        for m in re.findall(r"^(?:rule|checkpoint) (\w+):", f.read_text(), flags=re.M)
    }
    settings = yaml.safe_load((ROOT / profile).read_text())
    named = set(settings.get("set-resources", {})) | set(settings.get("set-threads", {}))
    assert named and named <= rules, sorted(named - rules)
