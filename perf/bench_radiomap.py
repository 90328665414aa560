"""[GeoDP-Radio] reproduction: federated radio map, WCL attack, uniform vs geometry-aligned noise.

Sections (each well under 5 min at paper scale on this machine; --quick: all in < 1 min):
  table1  FedAvg: WCL RMSE at epochs 1, T/2, T for nu in {1, 2, 5, 10, inf} (paper Table I)
  table2  MAE vs epoch for FedAvg, uniform and geometry-aligned noise (rho = 50)   (paper Table II)
  fig4    WCL RMSE vs mu, uniform vs geometry-aligned (rho = 1), on epoch-1 uploads (paper Fig. 4)
  fig6    WCL RMSE (nu = 2) vs rho on epoch-1 uploads                               (paper Fig. 6)
  mae     FedAvg MAE by epoch under one changed setting per --set (docs/results/radiomap.md):
          --set LABEL='{"training": {"eta_h": 2000}}' (repeatable; "scheme"/"mu" pick the run)
  compare the workflow's run jobs (training + WCL attack, `study.run_stage`) of this code against the
          code of --reference (default: the commit before the radio map was vectorised), in one run:
          a subset of workflow/configs/radiomap.yaml's runs at its full size, --epochs epochs each
          (default 10), CPU seconds per job and per epoch, the full config's CPU extrapolated from
          them (job = its fixed part + 200 x its per-epoch part, the mean over the sampled runs of a
          scheme standing for every run of that scheme), and how the outputs compare: FedAvg (no
          noise) and every epoch-1 upload against the reference, the rest differ by the noise draws
          (the new calibration; unkept epochs drawn as one aggregate) and are printed side by side.
          Each job runs in its own subprocess (PYTHONPATH: its code's lib/), one BLAS thread, the codes
          in turn job by job (old, new, new with the paper calibration), so a change of load hits all.
Epoch-1 uploads (Fig. 4, 6) are exact for any run: no noise has yet changed the trajectory.
Paper scale: 100 users x 200 measurements, 200 stations, M = 10,000 cells, C = 1.

Run:  python perf/bench_radiomap.py [--quick] [--section all|table1|table2|fig4|fig6|mae|compare]
          [--epochs 200] [--geo-epochs 30] [--rho 1,10,50,100] [--set LABEL=JSON ...]
          [--reference COMMIT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from locpriv.radiomap import scenario, validate_config
from locpriv.radiomap.model import hard_gain
from locpriv.radiomap.study import settings
from locpriv.radiomap.training import train
from locpriv.radiomap.wcl import localisation_error
from locpriv.seeding import rng

NUS = [1.0, 2.0, 5.0, 10.0, np.inf]
SEED = 20261122
ROOT = Path(__file__).resolve().parents[1]
# the last commit before the radio map's training, noise and attack were vectorised (issue 32)
REFERENCE = "77b5dd119c24f911593b987c4acd0dfbbc7ff0cb"
# compare: the sampled runs of radiomap.yaml (Alg. 1's cost depends on mu and rho: both ends of each grid)
SAMPLE = [
    ("radio_fedavg", 0.0, 0.0),
    ("radio_uniform", 10.0, 0.0),
    ("radio_geo", 0.5, 1.0),
    ("radio_geo", 50.0, 1.0),
    ("radio_geo", 10.0, 50.0),
    ("radio_geo", 0.5, 100.0),
    ("radio_geo", 50.0, 100.0),
]


def rmse(G, pb, nu):
    return float(np.sqrt(np.nanmean(localisation_error(G, pb.centres, pb.users, nu) ** 2)))


def run(cfg, pb, scheme, mu=0.0, rho=0.0, epochs=None, keep=()):
    cfg = {**cfg, "training": {**cfg["training"], "epochs": epochs or cfg["training"]["epochs"]}}
    s = settings(cfg, {"scheme": scheme, "mu": mu, "rho": rho})
    t0 = time.perf_counter()
    hist = train(pb, s, rng(SEED, "radiomap", "bench", scheme, mu, rho), keep_epochs=keep)
    return hist, (time.perf_counter() - t0) / s.epochs


def table(header, rows):
    print(" | ".join(header))
    for r in rows:
        print(" | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in r))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="30 users, 60 measurements, M = 2,500, 20 epochs")
    ap.add_argument("--section", default="all", choices=["all", "table1", "table2", "fig4", "fig6", "mae", "compare"])
    ap.add_argument("--reference", default=REFERENCE, help="compare: the git commit whose lib/ is the reference")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # compare: one code's jobs, in a subprocess
    ap.add_argument("--rho", default="1,10,50,100", help="fig6 section: the rho values (this project's units)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="LABEL=JSON",
        help="mae section: one run per --set with this config override (model/training/scheme/mu)",
    )
    ap.add_argument("--epochs", type=int, default=200, help="epochs of the FedAvg / uniform runs")
    ap.add_argument("--geo-epochs", type=int, default=30, help="epochs of the geometry-aligned Table II runs")
    args = ap.parse_args()
    if args.worker:
        return worker(json.loads(args.worker))
    if args.section == "compare":
        return compare(args.reference, args.epochs if args.epochs != 200 else 10)
    section = {} if not args.quick else {"environment": {"cell": 6.0}, "n_users": 30, "n_measurements": 60}
    cfg = validate_config(section)
    T = 20 if args.quick else args.epochs
    Tg = min(T, 10 if args.quick else args.geo_epochs)
    t0 = time.perf_counter()
    env = scenario.make_environment(cfg, rng(SEED, "radiomap", "environment"))
    links, ev = scenario.link_geometry(cfg, env)
    y, los = scenario.measure(cfg, links, env["heights"], rng(SEED, "radiomap", "measurements"))
    pb = scenario.problem(cfg, env, links, ev, y)
    print(
        f"scenario: N={pb.n_users}, J_i={cfg['n_measurements']}, M={pb.centres.shape[0]}, "
        f"{links.matrix.nnz} link-cell entries, LOS fraction {los.mean():.2f}, "
        f"{len(ev.log10_distance)} evaluation links; built in {time.perf_counter() - t0:.1f} s\n"
    )
    want = lambda name: args.section in ("all", name)  # noqa: E731
    if args.section == "mae":
        mae_section(section, pb, args.set or ["default={}"])
        return

    if want("table1") or want("table2"):
        keep = sorted({1, T // 2, T})
        fed, tf = run(cfg, pb, "radio_fedavg", epochs=T, keep=keep)
        print(f"FedAvg: {tf:.3f} s/epoch ({T} epochs in {tf * T:.0f} s)")
        if want("table1"):
            print(
                "Table I: WCL RMSE (m), FedAvg uploads   [paper: 7.25 6.90 8.26 8.61 9.00 | "
                "20.69 23.42 17.67 17.23 18.41 | 27.44 28.93 30.27 30.00 31.44]"
            )
            table(
                ["epoch"] + [f"nu={n:g}" for n in NUS], [[e] + [rmse(fed.uploads[e], pb, n) for n in NUS] for e in keep]
            )
    if want("table2"):
        marks = sorted({1, Tg // 2, Tg} | ({T // 4, T // 2, T} if T > Tg else set()))
        rows = [["FedAvg", f"{tf:.3f}"] + [fed.mae[e - 1] for e in marks]]
        uni, tu = run(cfg, pb, "radio_uniform", mu=50.0, epochs=T)
        rows.append(["uniform mu=50", f"{tu:.3f}"] + [uni.mae[e - 1] for e in marks])
        for mu in (1.0, 10.0, 50.0):
            geo, tg = run(cfg, pb, "radio_geo", mu=mu, rho=50.0, epochs=Tg)
            rows.append([f"geo mu={mu:g} rho=50", f"{tg:.3f}"] + [geo.mae[e - 1] if e <= Tg else "-" for e in marks])
        print(
            f"Table II: MAE (dB) by epoch (geo runs stop at epoch {Tg})   "
            "[paper epochs 1/50/100/200: FedAvg 13.68 6.68 3.98 3.81; mu=1 13.68 6.72 4.01 3.92; "
            "mu=10 13.68 6.79 4.11 4.05; mu=50 13.68 6.85 4.21 4.25]"
        )
        table(["run", "s/epoch"] + [f"ep{e}" for e in marks], rows)
    if want("fig4"):
        rows = []
        for mu in (0.5, 1.0, 5.0, 10.0, 20.0, 50.0):
            for scheme, rho in (("radio_uniform", 0.0), ("radio_geo", 1.0)):
                h, _ = run(cfg, pb, scheme, mu=mu, rho=rho, epochs=1, keep=[1])
                rows.append([scheme, mu] + [rmse(h.uploads[1], pb, n) for n in NUS])
        print(
            "Fig. 4: WCL RMSE (m) vs mu on epoch-1 uploads (geo rho = 1)   "
            "[paper: geo > 180 m at large mu, uniform ~30 m]"
        )
        table(["scheme", "mu"] + [f"nu={n:g}" for n in NUS], rows)
    if want("fig6"):
        rhos = [float(r) for r in args.rho.split(",")]
        rows = []
        for mu in (10.0, 50.0):
            uni, _ = run(cfg, pb, "radio_uniform", mu=mu, epochs=1, keep=[1])
            row = [mu, rmse(uni.uploads[1], pb, 2.0)]
            for rho in rhos:
                h, _ = run(cfg, pb, "radio_geo", mu=mu, rho=rho, epochs=1, keep=[1])
                row.append(rmse(h.uploads[1], pb, 2.0))
            rows.append(row)
        print(
            "Fig. 6: WCL RMSE (m, nu = 2) vs rho on epoch-1 uploads   [paper: ~220 m at rho=1 -> ~150 m "
            "at rho=100, all above uniform]"
        )
        table(["mu", "uniform"] + [f"rho={r:g}" for r in rhos], rows)


def mae_section(section, pb, sets):
    """MAE by epoch of the model (2) and of the hard rule (1) on the learned h, one row per --set.

    Every run shares the scenario (the overrides may not touch it) and its random stream (FedAvg
    draws none), so two rows differ only by the changed setting."""
    print(
        "MAE (dB) by epoch: smooth model (2) | hard rule (1) on the same h, theta   "
        "[paper FedAvg epochs 1/50/100/200: 13.68 6.68 3.98 3.81]"
    )
    for item in sets:
        label, _, text = item.partition("=")
        over = json.loads(text or "{}")
        run_keys = {k: over.pop(k) for k in ("scheme", "mu") if k in over}
        cfg = validate_config({**section, **over})
        s = settings(cfg, {"scheme": run_keys.get("scheme", "radio_fedavg"), "mu": run_keys.get("mu", 0.0), "rho": 0.0})
        hist = train(pb, s, rng(SEED, "radiomap", "bench", s.scheme, s.mu, 0.0))
        marks = [e for e in (1, 50, 100, 200, 400) if e <= s.epochs]
        hard = [
            float(np.mean(np.abs(hard_gain(pb.eval_links, hist.heights[e - 1], hist.theta[e - 1])[0] - pb.eval_truth)))
            for e in marks
        ]
        scores = " ".join(f"ep{e} {hist.mae[e - 1]:.3f}|{hd:.3f}" for e, hd in zip(marks, hard, strict=True))
        print(
            f"{label}: "
            + scores
            + f"; h in [{hist.heights[-1].min():.1f}, {hist.heights[-1].max():.1f}] m; loss at the last epoch "
            f"{hist.loss[-1]:.2f}"
        )


def paper_section(epochs: int, **training) -> dict:
    """radiomap.yaml's study section with ``epochs`` epochs (attacked at 1, epochs / 2, epochs)."""
    cfg = yaml.safe_load((ROOT / "workflow/configs/radiomap.yaml").read_text())["studies"]["radiomap"]
    cfg["training"] = {**cfg["training"], "epochs": epochs, **training}
    cfg["attack"] = {**cfg["attack"], "epochs": sorted({1, max(1, epochs // 2), epochs})}
    return cfg


def worker(spec: dict) -> None:
    """Run ``spec``'s jobs with whatever locpriv is on the path; print one JSON line of CPU times and outputs.

    A job's CPU is split into its epochs (``study.train``), within them the exact per-user uploads
    (``training.upload``: every epoch in the old code, the kept epochs in the new), and the rest.
    """
    from locpriv.radiomap import study, training, validate_config  # the code under test (old or new)

    startup = time.process_time()  # interpreter and imports: what every job pays first
    cfg = validate_config(spec["section"])
    wd = Path(spec["workdir"])
    env = {
        k: wd / f"{k}.{ext}"
        for k, ext in [
            ("heights", "nc"),
            ("users", "parquet"),
            ("stations", "parquet"),
            ("pairs", "parquet"),
            ("eval_points", "parquet"),
            ("buildings", "parquet"),
            ("links", "parquet"),
            ("link_distance", "parquet"),
            ("eval_links", "parquet"),
            ("eval_distance", "parquet"),
            ("measurements", "parquet"),
        ]
    }
    t0 = time.process_time()
    study.setup_stage(cfg=cfg, seed=SEED, out=env)
    out = {"startup": startup, "setup": time.process_time() - t0, "runs": []}
    train, upload = study.train, training.upload
    for scheme, mu, rho in spec["runs"]:
        clock = {"train": 0.0, "upload": 0.0, "uploads": 0}

        def timed(fn, key):
            def wrapped(*a, **k):
                t = time.process_time()
                res = fn(*a, **k)
                clock[key] += time.process_time() - t
                clock["uploads"] += key == "upload"
                return res

            return wrapped

        study.train, training.upload = timed(train, "train"), timed(upload, "upload")
        files = {k: wd / f"{scheme}-{mu:g}-{rho:g}.{k}.parquet" for k in ("transcript", "model", "history", "attack")}
        t0 = time.process_time()
        study.run_stage(cfg=cfg, run={"scheme": scheme, "mu": mu, "rho": rho}, seed=SEED, paths=env, out=files)
        job = time.process_time() - t0
        hist, att = pd.read_parquet(files["history"]), pd.read_parquet(files["attack"])
        rmse = att.groupby(["epoch", "nu"])["error_m"].apply(lambda e: float(np.sqrt(np.nanmean(e**2))))
        out["runs"].append(
            {
                "run": [scheme, mu, rho],
                "job": job,
                **clock,
                "mae": hist["mae_db"].tolist(),
                "loss": hist["loss"].tolist(),
                "clipped": hist["clipped_fraction"].tolist(),
                "rmse": {f"{e}/{nu}": v for (e, nu), v in rmse.items()},
            }
        )
    print(json.dumps(out))


def at_200_epochs(r: dict, epochs: int, kept: int) -> float:
    """A job's CPU at 200 epochs: its fixed part, 200 x its per-epoch cost without the exact uploads,
    and the exact uploads at their cost per call, for every epoch (old code) or the kept ones (new)."""
    per_call = r["upload"] / max(r["uploads"], 1)
    calls = 200 if r["uploads"] == epochs else kept
    return (r["job"] - r["train"]) + 200 * (r["train"] - r["upload"]) / epochs + calls * per_call


def run_worker(lib: Path, spec: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(lib), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(spec)], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode:
        raise SystemExit(f"worker on {lib} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(reference: str, epochs: int) -> None:
    """Old vs new code on the same jobs, in one run (see the module doc)."""
    print(f"load average before: {os.getloadavg()[0]:.2f}; {epochs} epochs per job; reference {reference[:12]}")
    grid = yaml.safe_load((ROOT / "workflow/configs/radiomap.yaml").read_text())["studies"]["radiomap"]["runs"]
    counts = {
        "radio_fedavg": 1,
        "radio_uniform": len(grid["radio_uniform"]["mu"]),
        "radio_geo": len(grid["radio_geo"]["mu"]) * len(grid["radio_geo"]["rho"]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        old_root = Path(tmp) / "reference"
        old_root.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", reference, "lib", "workflow/schemas"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old_root)], input=archive, check=True)
        codes = [
            ("old", old_root / "lib", {}),
            ("new", ROOT / "lib", {}),
            ("new, paper calibration", ROOT / "lib", {"calibration": "paper"}),
        ]
        parts = {label: [] for label, _, _ in codes}
        for run in SAMPLE:  # job by job, the codes in turn: a change of the machine's load hits all
            for label, lib, training in codes:
                wd = Path(tmp) / label.replace(" ", "_").replace(",", "")
                wd.mkdir(exist_ok=True)
                parts[label].append(
                    run_worker(lib, {"section": paper_section(epochs, **training), "runs": [run], "workdir": str(wd)})
                )
    results = {
        label: {
            "startup": np.mean([w["startup"] for w in ws]),
            "setup": np.mean([w["setup"] for w in ws]),
            "runs": [w["runs"][0] for w in ws],
        }
        for label, ws in parts.items()
    }
    old, new, paper = results["old"], results["new"], results["new, paper calibration"]
    print(f"load average after: {os.getloadavg()[0]:.2f}\n")
    print(
        f"start-up (interpreter, imports) {old['startup']:.2f} s old, {new['startup']:.2f} s new; setup job "
        f"{old['setup']:.2f} s old, {new['setup']:.2f} s new (CPU, means over the workers)"
    )
    kept_epochs = yaml.safe_load((ROOT / "workflow/configs/radiomap.yaml").read_text())["studies"]["radiomap"][
        "attack"
    ]["epochs"]
    kept = len(kept_epochs)
    rows, per_scheme = [], {}
    for o, n in zip(old["runs"], new["runs"], strict=False):
        scheme, mu, rho = o["run"]
        rows.append(
            [
                f"{scheme} mu={mu:g} rho={rho:g}",
                o["job"],
                n["job"],
                o["job"] / n["job"],
                (o["train"] - o["upload"]) / epochs,
                o["upload"] / max(o["uploads"], 1),
                (n["train"] - n["upload"]) / epochs,
                n["upload"] / max(n["uploads"], 1),
                at_200_epochs(o, epochs, kept) / at_200_epochs(n, epochs, kept),
            ]
        )
        for label, r in (("old", o), ("new", n)):
            job = at_200_epochs(r, epochs, kept) + results[label]["startup"]
            per_scheme.setdefault((label, scheme), []).append(job)
    print(
        f"Per job, CPU seconds ({epochs} epochs; per epoch: without the exact uploads, and one exact upload "
        f"(every epoch in the old code, the {kept} kept epochs {kept_epochs} in the new))"
    )
    table(
        [
            "job",
            "old s",
            "new s",
            "old/new",
            "old s/epoch",
            "old upload s",
            "new s/epoch",
            "new upload s",
            "old/new at 200 epochs",
        ],
        rows,
    )
    full = {
        label: results[label]["setup"] + sum(counts[sch] * np.mean(per_scheme[(label, sch)]) for sch in counts)
        for label in ("old", "new")
    }
    print(
        f"workflow/configs/radiomap.yaml extrapolated (setup + {sum(counts.values())} run jobs of 200 epochs, each "
        f"with its start-up; summary and plots left out): old {full['old'] / 3600:.2f} CPU-h, "
        f"new {full['new'] / 3600:.3f} CPU-h, ratio {full['old'] / full['new']:.1f}\n"
    )
    print("Outputs: max |difference| against the reference code")
    for o, n, pp in zip(old["runs"], new["runs"], paper["runs"], strict=False):
        scheme, mu, rho = o["run"]
        name = f"{scheme} mu={mu:g} rho={rho:g}"
        ep1 = [k for k in o["rmse"] if k.startswith("1/")]
        d1 = max(abs(o["rmse"][k] - pp["rmse"][k]) for k in ep1)
        if scheme == "radio_fedavg":
            dm = max(abs(a - b) for a, b in zip(o["mae"], n["mae"], strict=False))
            dr = max(abs(o["rmse"][k] - n["rmse"][k]) for k in o["rmse"])
            print(f"  {name}: MAE every epoch {dm:.1e} dB, WCL RMSE every kept epoch and nu {dr:.1e} m")
        else:
            print(
                f"  {name}: epoch-1 WCL RMSE (paper calibration) {d1:.1e} m; MAE at epoch {epochs}: old "
                f"{o['mae'][-1]:.3f}, new-paper {pp['mae'][-1]:.3f}, new (clip) {n['mae'][-1]:.3f} dB; clipped "
                f"fraction at epoch {epochs}: {o['clipped'][-1]:.2f}"
            )


if __name__ == "__main__":
    main()
