import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# every figure a test draws, directly or in a workflow job, must pass locpriv.figures.problems
os.environ.setdefault("LOCPRIV_STRICT_FIGURES", "1")
# the real datasets (not shipped; see locpriv.datasets.registry); tests that need them skip without
DATA = Path(os.environ.get("LOCPRIV_DATA", ROOT.parent / "shared/data"))


def pytest_collection_modifyitems(config, items):
    """Deselect heavy tests unless asked for, and the SLURM test unless LOCPRIV_TEST_SLURM=1.

    Done here rather than with `-m 'not heavy'` in addopts: a user's own `-m "not cluster"`
    would replace that and silently turn the heavy tests back on.
    """
    markexpr = config.getoption("markexpr") or ""
    want_heavy = "heavy" in markexpr or os.environ.get("LOCPRIV_TEST_HEAVY") == "1"
    want_slurm = os.environ.get("LOCPRIV_TEST_SLURM") == "1"
    keep, drop = [], []
    for item in items:
        if (item.get_closest_marker("heavy") and not want_heavy) or (
            item.get_closest_marker("cluster") and not want_slurm
        ):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


TINY = {
    "seed": 1,
    "users_per_shard": 200,
    "grid": {"P": 24, "Q": 20},
    "attack": {"users": 30, "ratio": 1.1},
    "plots": {"dpi": 40},
    "datasets": {
        "gauss9": {"source": "synthetic", "pattern": "gauss9", "n_users": 600, "bbox": [-3, 3, -3, 3], "knn_k": 50},
    },
    "experiments": {
        "density": {
            "datasets": ["gauss9"],
            "reps": 1,
            "mechanisms": {"fedkde": {"n": [300, 600], "h": [0.55, "knn"]}, "zero": {"n": [300, 600]}},
        },
    },
}


def run_snakemake(
    workdir: Path, *args: str, check: bool = True, snakefile: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(snakefile or ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        *args,
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=workdir, env={**os.environ, "PYTHONHASHSEED": "0", **(env or {})}
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


@pytest.fixture
def make_workdir(tmp_path):
    """A fresh working directory holding config.yaml (TINY, optionally modified)."""

    def make(config: dict | None = None, name: str = "wd") -> Path:
        wd = tmp_path / name
        wd.mkdir()
        (wd / "config.yaml").write_text(yaml.safe_dump(config or TINY, sort_keys=False))
        return wd

    return make


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def copy_results(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)


def assert_figure(
    path, panels: tuple[int, int] = (1, 1), min_colours: int = 8, min_data: int = 12, skip: tuple = ()
) -> None:
    """A PNG that shows data: enough distinct colours and, in every cell of a ``panels`` (rows,
    columns) layout, at least ``min_data`` chromatic pixels (lines, markers, colour maps: axes,
    ticks and text are grey, so empty axes have none and fail).

    A blank figure, or one whose data went missing, fails; ``st_size > 0`` does not.  ``skip``
    lists (row, column) cells not checked: drawn in greys by design, or left empty by the layout.
    """
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(path).convert("RGB")).astype(int)
    colours = len(np.unique(pixels.reshape(-1, 3), axis=0))
    assert colours >= min_colours, f"{path}: {colours} distinct colours (blank figure?)"
    data = pixels.max(axis=2) - pixels.min(axis=2) > 40
    rows, cols = panels
    for r, band in enumerate(np.array_split(data, rows, axis=0)):
        for c, tile in enumerate(np.array_split(band, cols, axis=1)):
            assert (r, c) in skip or tile.sum() >= min_data, (
                f"{path}: panel ({r}, {c}) has {tile.sum()} data pixels (empty?)"
            )


class CountingRng:
    """A numpy Generator stand-in that counts what a sampler draws: 64-bit words from ``integers``
    and doubles from ``random`` (the work of one call, deterministic, not a timing)."""

    def __init__(self, seed):
        import numpy as np

        self.rng, self.words, self.doubles = np.random.default_rng(seed), 0, 0

    def integers(self, *args, size=None, **kwargs):
        import numpy as np

        self.words += int(np.prod(size))
        return self.rng.integers(*args, size=size, **kwargs)

    def random(self, size=None):
        import numpy as np

        self.doubles += int(np.prod(size))
        return self.rng.random(size)
