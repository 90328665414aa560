"""Every shipped config (workflow/configs/*.yaml) lints and dry-runs without the real data.

A config that reads real data is checked through its data-free variant in .test/config/ (the
rna-seq-star-deseq2 layout: small synthetic stand-ins in the real files' formats in .test/data/,
written by .test/make_data.py); the others as they are.  Each variant keeps its config's experiments,
mechanisms, datasets' sources and study sections, so no branch goes unchecked.
"""

import re
import shutil

import pytest
import yaml

from conftest import ROOT, run_snakemake
from test_lint import ALLOWED, MAX_FINDINGS, findings

pytestmark = pytest.mark.workflow

SHIPPED = sorted((ROOT / "workflow/configs").glob("*.yaml"))
TEST_DIR = ROOT / ".test"


def reads_data(config: dict) -> bool:
    """Whether any key named 'path' is set (the real files' keys; the synthetic sources have none)."""
    if isinstance(config, dict):
        return any((k == "path" and v) or reads_data(v) for k, v in config.items())
    return False


def checked_config(shipped):
    variant = TEST_DIR / "config" / shipped.name
    config = yaml.safe_load(shipped.read_text())
    return variant if reads_data(config) else shipped


def outline(config: dict) -> dict:
    """What a variant must keep: experiments with their datasets and mechanisms, every dataset's
    source, the studies with their sections' keys and their datasets' sources."""
    studies = config.get("studies", {})
    return {
        "experiments": {
            name: (sorted(e["datasets"]), sorted(e["mechanisms"])) for name, e in config.get("experiments", {}).items()
        },
        "datasets": {name: d["source"] for name, d in config.get("datasets", {}).items()},
        "studies": {name: sorted(section) for name, section in studies.items()},
        "study_sources": {
            name: sorted({d["source"] for d in section.get("datasets", {}).values()})
            for name, section in studies.items()
        },
    }


def test_every_config_that_reads_data_has_a_data_free_variant():
    need = [p.name for p in SHIPPED if reads_data(yaml.safe_load(p.read_text()))]
    assert len(need) >= 5  # deconv, geolife, heatmaps, paper_rff, sldp
    variants = sorted(p.name for p in (TEST_DIR / "config").glob("*.yaml"))
    assert variants == sorted(need)
    for name in need:
        shipped = yaml.safe_load((ROOT / "workflow/configs" / name).read_text())
        variant = yaml.safe_load((TEST_DIR / "config" / name).read_text())
        assert outline(variant) == outline(shipped), name


def test_every_density_experiment_releases_each_setting_at_least_three_times():
    """A recommendation rests on R >= 3 independent releases of every setting (issue 38): the default
    config and every shipped config with a density experiment."""
    for path in [ROOT / "config.yaml", *SHIPPED]:
        for name, experiment in yaml.safe_load(path.read_text()).get("experiments", {}).items():
            assert experiment.get("reps", 1) >= 3, f"{path.name}: experiments.{name}.reps"


def test_the_default_config_gives_every_trust_model_a_curve():
    """At least three privacy settings per trust model in the default run, and three epsilons for each
    central and distributed mechanism, so no trust model's frontier is a single point."""
    from locpriv import mechanisms

    levels = {}
    for experiment in yaml.safe_load((ROOT / "config.yaml").read_text())["experiments"].values():
        for name, params in experiment["mechanisms"].items():
            trust = mechanisms.get(name).trust_model
            values = {k: v if isinstance(v, list) else [v] for k, v in params.items() if k in ("epsilon", "B")}
            settings = {(name, k, v) for k, vs in values.items() for v in vs} or {(name,)}
            levels.setdefault(trust, set()).update(settings)
            if trust in ("central", "distributed"):
                assert len(settings) >= 3, name
    assert sorted(levels) == ["central", "distributed", "local", "none"]
    assert all(len(found) >= 3 for found in levels.values()), levels


def test_the_stand_in_data_is_what_make_data_writes(tmp_path):
    """The committed stand-ins are reproducible from .test/make_data.py (and nothing else is in .test/data)."""
    shutil.copy(TEST_DIR / "make_data.py", tmp_path / "make_data.py")
    import runpy

    runpy.run_path(str(tmp_path / "make_data.py"), run_name="__main__")
    ours = sorted(p.relative_to(tmp_path / "data") for p in (tmp_path / "data").rglob("*") if p.is_file())
    committed = sorted(p.relative_to(TEST_DIR / "data") for p in (TEST_DIR / "data").rglob("*") if p.is_file())
    assert ours == committed
    for rel in ours:
        assert (tmp_path / "data" / rel).read_bytes() == (TEST_DIR / "data" / rel).read_bytes(), rel


@pytest.mark.parametrize("shipped", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_config_lints_and_dry_runs(tmp_path, shipped):
    config = checked_config(shipped)
    shutil.copy(config, tmp_path / "config.yaml")
    shutil.copytree(TEST_DIR / "data", tmp_path / "data")
    proc = run_snakemake(tmp_path, "--lint", check=False)
    found = findings(proc.stdout + proc.stderr)
    unexplained = [f for f in found if not any(key in f for key in ALLOWED)]
    assert len(found) <= MAX_FINDINGS and not unexplained, "\n".join(found[:40])
    assert proc.returncode == 0 or found, proc.stderr[-3000:]
    proc = run_snakemake(tmp_path, "--dry-run", "--quiet", "rules", check=False)
    assert proc.returncode == 0, f"{config.relative_to(ROOT)}:\n{proc.stderr[-3000:]}"


def test_slurm_profile_names_no_site_and_takes_it_from_the_environment(tmp_path, make_workdir):
    """No partition or account is written in the profile; LOCPRIV_SLURM_PARTITION / _ACCOUNT reach every
    job's resources, and unset they are empty (the plugin then uses the cluster's defaults)."""
    profile = yaml.safe_load((ROOT / "workflow/profiles/slurm/config.yaml").read_text())
    settings = "\n".join(line.split("#")[0] for line in (ROOT / "workflow/profiles/slurm/config.yaml").open())
    # tools/slurm-localhost.sh's partition and account: a site's names, not the profile's
    assert not {"debug", "ci"} & set(re.findall(r"\w+", settings))
    # Snakemake itself evaluates the profile's default-resources (a local dry-run: no cluster needed)
    local = tmp_path / "profile"
    local.mkdir()
    (local / "config.yaml").write_text(yaml.safe_dump({"default-resources": profile["default-resources"]}))
    wd = make_workdir()
    for env in (
        {"LOCPRIV_SLURM_PARTITION": "gpu", "LOCPRIV_SLURM_ACCOUNT": "proj42"},
        {"LOCPRIV_SLURM_PARTITION": "", "LOCPRIV_SLURM_ACCOUNT": ""},
    ):
        proc = run_snakemake(wd, "--workflow-profile", str(local), "--dry-run", env=env)
        jobs = [
            dict(item.split("=", 1) for item in line.split("resources:", 1)[1].strip().split(", "))
            for line in proc.stdout.splitlines()
            if line.strip().startswith("resources:")
        ]
        assert jobs and all(
            job["slurm_partition"] == env["LOCPRIV_SLURM_PARTITION"]
            and job["slurm_account"] == env["LOCPRIV_SLURM_ACCOUNT"]
            for job in jobs
        ), jobs[:2]


def test_slurm_profile_time_limit_grows_with_the_input(tmp_path):
    """A job that reads a large points file gets more than the 30-minute default: at 10^9 users
    laplace_ldp's estimate job reads 25.6 GB and took 25 CPU-min (32 min wall on a shared node),
    past 30.  Snakemake itself evaluates the profile's runtime for a job with a 25,600 MB input (a
    sparse file) and one with a small input."""
    profile = yaml.safe_load((ROOT / "workflow/profiles/slurm/config.yaml").read_text())
    local = tmp_path / "profile"
    local.mkdir()
    (local / "config.yaml").write_text(yaml.safe_dump({"default-resources": profile["default-resources"]}))
    (tmp_path / "Snakefile").write_text(
        'rule all:\n    input: "big.out", "small.out"\n'
        'rule read:\n    input: "{name}.bin"\n    output: "{name}.out"\n    shell: "touch {output}"\n'
    )
    with (tmp_path / "big.bin").open("wb") as big:
        big.truncate(25_600 * 1024 * 1024)  # sparse: no disk used
    (tmp_path / "small.bin").write_bytes(b"x")
    proc = run_snakemake(
        tmp_path, "--workflow-profile", str(local), "--dry-run", "--cores", "1", snakefile=tmp_path / "Snakefile"
    )
    runtimes = {
        re.search(r"output: (\w+)\.out", block).group(1): int(re.search(r"runtime=(\d+)", block).group(1))
        for block in proc.stdout.split("rule read:")[1:]
    }
    assert runtimes == {"big": 128, "small": 30}, proc.stdout[-2000:]
    # a dry run has no second attempt: the retry's doubling is read from the expression itself
    assert profile["default-resources"]["runtime"].endswith("* attempt")
