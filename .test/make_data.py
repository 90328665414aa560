"""Writes .test/data/: small synthetic stand-ins, in the real files' formats, for the data the shipped
configs (workflow/configs/*.yaml) read, so their .test variants (.test/config/) lint and dry-run anywhere.

Deterministic (seeded): `python .test/make_data.py` rewrites the same bytes.  The names differ from the
real files' on purpose: locpriv.datasets.registry checks a file with a real file's name against its checksum.
"""

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "data"
rng = np.random.default_rng(20261122)


def geolife(n=1200):
    """user,timestamp_utc,lat,lon in the Beijing box; a third of the points in central Beijing (paper_rff.yaml)."""
    lon = np.where(np.arange(n) % 3 == 0, rng.uniform(116.36, 116.46, n), rng.uniform(116.15, 116.60, n))
    lat = np.where(np.arange(n) % 3 == 0, rng.uniform(39.88, 39.95, n), rng.uniform(39.75, 40.10, n))
    user = rng.integers(0, 40, n)
    rows = [
        f"{u:03d},2008-10-23 {i // 60 % 24:02d}:{i % 60:02d}:00,{a:.6f},{o:.6f}"
        for i, (u, a, o) in enumerate(zip(user, lat, lon, strict=True))
    ]
    (OUT / "geolife_sample.csv").write_text("user,timestamp_utc,lat,lon\n" + "\n".join(rows) + "\n")


def housing(n=300):
    """California housing's columns the SLDP classification reads (and a few it does not)."""
    lon, lat = rng.uniform(-124.0, -114.5, n), rng.uniform(32.6, 41.9, n)
    value = rng.uniform(20_000, 500_000, n).round()
    rows = [
        f"{o:.2f},{a:.2f},{int(rng.integers(1, 52))},{v:.1f},NEAR BAY" for o, a, v in zip(lon, lat, value, strict=True)
    ]
    header = "longitude,latitude,housing_median_age,median_house_value,ocean_proximity\n"
    (OUT / "housing_sample.csv").write_text(header + "\n".join(rows) + "\n")


def lendingclub(n=300):
    fico = rng.integers(612, 828, n)
    rate = (0.06 + 0.0004 * (828 - fico) + rng.normal(0, 0.01, n)).clip(0.05, 0.22)
    rows = [f"1,debt_consolidation,{r:.4f},{f}" for r, f in zip(rate, fico, strict=True)]
    (OUT / "loan_sample.csv").write_text("credit.policy,purpose,int.rate,fico\n" + "\n".join(rows) + "\n")


def adult(n=200):
    """UCI Adult's 15 columns without a header; adult.test starts with its cross-validator line, labels end in '.'."""
    (OUT / "adult_sample").mkdir(exist_ok=True)
    for name, test in (("adult.data", False), ("adult.test", True)):
        edu = rng.integers(1, 17, n)
        label = np.where(rng.random(n) < 0.1 + 0.04 * edu, ">50K", "<=50K")
        rows = [
            f"39, Private, 77516, Bachelors, {e}, Never-married, Adm-clerical, Not-in-family, White, Male, "
            f"0, 0, 40, United-States, {lab}{'.' if test else ''}"
            for e, lab in zip(edu, label, strict=True)
        ]
        head = "|1x3 Cross validator\n" if test else ""
        (OUT / "adult_sample" / name).write_text(head + "\n".join(rows) + "\n")


def population(side=32):
    """A population image (users per pixel), a power-of-two square as the heatmaps study reads."""
    y, x = np.mgrid[0:side, 0:side]
    image = 40 * np.exp(-((x - 10) ** 2 + (y - 20) ** 2) / 30) + 15 * np.exp(-((x - 24) ** 2 + (y - 8) ** 2) / 60)
    np.save(OUT / "population_sample.npy", rng.poisson(image + 1).astype(np.int32))


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    geolife()
    housing()
    lendingclub()
    adult()
    population()
