"""The real datasets the workflow/configs/*.yaml instances read: source, licence, checksum.

None of them ships with the repository (their licences do not all allow it, and
the default config needs none).  Config validation calls
:func:`check_real_files`: a config path whose file name is one of these must exist
and have the recorded SHA-256, else the run stops before any job with one line
saying where to get the file.  A file you prepared yourself is not checked when
it has another name.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RealFile:
    sha256: str
    what: str
    source: str
    licence: str


_GEOLIFE = RealFile(
    "a8b52fbbcb1ba19e19a68ae85f9815deb6adc53dda30c633d98bd373431745eb",
    "Microsoft Geolife 1.3 GPS traces, one point per user per minute, Beijing box "
    "lon 116.15-116.60, lat 39.75-40.10, CSV columns user,timestamp_utc,lat,lon",
    "https://www.microsoft.com/en-us/download/details.aspx?id=52367 (Zheng et al.), reduced to the "
    "first point of each user in each minute inside the box",
    "Microsoft Research licence, non-commercial research use",
)
_ADULT = "https://archive.ics.uci.edu/dataset/2/adult"

KNOWN: dict[str, RealFile] = {
    "geolife_beijing_1min.csv.gz": _GEOLIFE,
    "housing.csv": RealFile(
        "8a3727f4cf54ac1a327f69b1d5b4db54c5834ea81c6e4efc0d163300022a685e",
        "California housing (Pace & Barry 1997), 20,640 block groups with ocean_proximity",
        "https://github.com/ageron/handson-ml2/raw/master/datasets/housing/housing.csv",
        "StatLib data; repository Apache-2.0",
    ),
    "loan_data.csv": RealFile(
        "1471c1bdc5ce3b48cfacb44a824d4739c252493196e7e1874668c6139c248af0",
        "LendingClub loans 2007-2010 (9,578 rows; fico, int.rate)",
        "https://github.com/Marcelunilsson/Udemy, file Py_DS_ML_Bootcamp/15-Decision-Trees-and-"
        "Random-Forests/loan_data.csv (CR line endings converted to LF)",
        "LendingClub public data, no explicit open licence",
    ),
    "adult.data": RealFile(
        "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
        "UCI Adult census extract, training part",
        _ADULT,
        "CC BY 4.0",
    ),
    "adult.test": RealFile(
        "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
        "UCI Adult census extract, test part",
        _ADULT,
        "CC BY 4.0",
    ),
    "nyt_manhattan_crop_1024.npy": RealFile(
        "6cbc93a1d4d0f813a6ffe439b82c37d61ac90673b6ca5cfe9a7f57f0118f0009",
        "NYT Manhattan phone-location heatmap, 1024x1024 crop (Bagdasaryan et al. 2022)",
        "https://github.com/ebagdasa/location-heatmaps (experiments notebook, crop 512,100,1536,1124)",
        "image (c) The New York Times, research use only",
    ),
}

# a configured directory (the Adult study reads a folder) is checked for these files
KNOWN_DIRS = {"uci_adult": ("adult.data", "adult.test")}

_digests: dict[tuple, str] = {}


def sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _digests:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _digests[key] = digest.hexdigest()
    return _digests[key]


def _paths(node, key=()):
    """(config key, value) of every string under a key named 'path'."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "path" and isinstance(v, str):
                yield ".".join(map(str, (*key, k))), v
            else:
                yield from _paths(v, (*key, k))


def problem(path: Path) -> str | None:
    """Why a known real file at ``path`` cannot be used (missing or other bytes), or None."""
    known = KNOWN[path.name]
    how = f"get it from {known.source} ({known.what}; licence: {known.licence})"
    if not path.is_file():
        return f"file {str(path)!r} does not exist; {how}"
    digest = sha256(path)
    if digest != known.sha256:
        return (
            f"file {str(path)!r} is not the expected data (sha256 {digest[:12]}..., expected "
            f"{known.sha256[:12]}...); {how}, or give a file you prepared yourself another name"
        )
    return None


def check_real_files(config: dict, base: Path) -> list[tuple[str, str]]:
    """(config key, problem) for every configured path naming a known real file that is missing or differs.

    A path to one of ``KNOWN_DIRS`` (the Adult data) is checked for the files it must hold.
    """
    found = []
    for key, value in _paths(config):
        path = base / value
        names = [path] if path.name in KNOWN else [path / n for n in KNOWN_DIRS.get(path.name, ())]
        for p in names:
            why = problem(p)
            if why:
                found.append((key, why))
    return found
