"""One heatmap sub-query in ``secure`` mode at population scale, as sharded jobs ([DDP-Heatmaps] §6).

The paper's setting: 10^6 users per sub-query, SecAgg shards of 10^4.  The sub-query is the
flat histogram over the 4^level cells of one quadtree level (K = 4^level entries; each user
adds 1 to its cell plus its Pólya share for a per-user ε, mod 2^bits), the kind of vector
each round of ``dp_heatmap`` sends.  Three stages:

* ``deal_stage``: ``users`` users drawn from the population image, dealt into shards in a
  random order with independent dropout (``clients.deal``): one small table, so every
  shard job reads its own rows only and memory is bounded by the shard, not the population.
* ``shard_stage`` (one job per batch of shards): each survivor's vector from the shard's own
  DP stream, summed by the masking protocol (``locpriv.secagg``, secrets from the OS, the
  public layout from the committed key set, as deployed) and, as a check, by plain addition mod 2^bits —
  the two must agree bit for bit or the job fails; records the protocol's client and server
  CPU seconds, the bytes one client sends, k and t, and the job's CPU seconds and peak resident
  memory (``getrusage``: the kernel's counts for the whole process, exact where Snakemake's
  benchmark samples).
* ``gather_stage``: the shards' centred sums added into the released histogram, and one row
  per shard: wall seconds of its job (Snakemake's benchmark file), CPU and peak memory.

Every random stream is keyed by the shard, so the released histogram does not depend on how
shards are batched into jobs, the core count or the executor (the timing table does).
"""

from __future__ import annotations

import dataclasses
import resource
import time

import numpy as np
import pandas as pd

from .. import io
from ..errors import InputError
from ..secagg import CpuClock, crypto
from ..seeding import rng as make_rng
from . import clients, polya
from .aggregation import SecAgg, UserPool
from .study import make_secagg, planned_dropout, read_population

DEAL_COLUMNS = {"cell": np.int64, "shard": np.int64, "member": np.int64}
TABLE_COLUMNS = [
    "shard",
    "clients",
    "survivors",
    "K",
    "k",
    "t",
    "client_cpu_s",
    "server_cpu_s",
    "client_kb_sent",
    "job_shards",
    "job_cpu_s",
    "job_wall_s",
    "benchmark_wall_s",
    "job_peak_rss_mb",
]
SUM_COLUMNS = {"shard": np.int64, "entry": np.int64, "sum": np.int64}


def level_cells(pixels: np.ndarray, depth: int, level: int) -> np.ndarray:
    """Flat cell of each flat pixel at quadtree level ``level`` (row-major over 2^level x 2^level)."""
    shift = depth - level
    x, y = pixels >> depth, pixels & ((1 << depth) - 1)
    return (x >> shift) * (1 << level) + (y >> shift)


def n_shards(scale: dict) -> int:
    return -(-scale["users"] // scale["shard_size"])


def shard_batches(scale: dict) -> list[list[int]]:
    """The shards each job runs, ``shards_per_job`` at a time."""
    shards, per = list(range(n_shards(scale))), scale["shards_per_job"]
    return [shards[i : i + per] for i in range(0, len(shards), per)]


def _secagg(scale: dict, secagg: dict | None) -> SecAgg:
    run = {"shard_size": scale["shard_size"], "dropout": scale["dropout"]}
    return make_secagg(run, "secure", secagg)


def deal_stage(*, population_path: str, scale: dict, seed: int, out: str) -> None:
    image = read_population(population_path)
    depth = int(image.shape[0]).bit_length() - 1
    if scale["level"] > depth or scale["users"] > image.sum():
        raise InputError(
            population_path,
            "image",
            f"{int(image.sum())} people at depth {depth} cannot give {scale['users']} users at level {scale['level']}",
            "lower studies.heatmaps.secagg_scale.users or level",
        )
    rng = make_rng(seed, "heatmaps-secagg-scale-deal")
    dealt = clients.deal(UserPool(image).draw(scale["users"], rng), scale["shard_size"], scale["dropout"], rng)
    frame = pd.DataFrame(
        {"cell": level_cells(dealt.pixel, depth, scale["level"]), "shard": dealt.shard, "member": dealt.member}
    ).astype(DEAL_COLUMNS)
    io.write_parquet(frame, out, metadata={"shard_clients": dealt.shard_clients.tolist(), "depth": depth})


def shard_stage(
    *, deal_path: str, shards: list[int], scale: dict, epsilon: float, secagg: dict | None, seed: int, out: str
) -> None:
    """The batch's shards one by one (their memory is freed in between): sums and measurements."""
    start = time.perf_counter()
    shard_clients = io.read_parquet_metadata(deal_path)["shard_clients"]
    dealt = pd.read_parquet(deal_path, filters=[("shard", "in", list(shards))])
    dim = 4 ** scale["level"]
    plan = planned_dropout(scale["dropout"], scale["shard_size"])
    rows, sums = [], []
    for j in shards:
        mine = dealt[dealt["shard"] == j]
        n_clients = int(shard_clients[j])
        config = _secagg(scale, secagg)
        bits = config.protocol.bits
        vectors = clients.client_vectors(
            mine["cell"].to_numpy(),
            dim,
            epsilon,
            1,
            polya.dp_shard_size(n_clients, plan),
            bits,
            make_rng(seed, "heatmaps-secagg-scale-dp", j),
        )
        member = mine["member"].to_numpy()
        clock = CpuClock()
        context = crypto.random_bytes(None, 1, 16).tobytes() + b"|scale-shard|" + int(j).to_bytes(4, "little")
        secure, transcript = clients.modular_sum(vectors, member, n_clients, config, context, clock)
        ideal, _ = clients.modular_sum(
            vectors, member, n_clients, dataclasses.replace(config, mode="per_client"), context
        )
        if not np.array_equal(secure, ideal):
            raise RuntimeError(f"shard {j}: the secure sum differs from the plain sum mod 2^{bits}")
        params = clients.protocol_params(config)
        rows.append(
            {
                "shard": j,
                "clients": n_clients,
                "survivors": len(member),
                "K": dim,
                "k": params.degree_for(n_clients),
                "t": params.t_for(n_clients),
                "client_cpu_s": clock.client,
                "server_cpu_s": clock.server,
                "client_kb_sent": float(transcript.groupby("sender")["bytes"].sum().mean()) / 1e3,
            }
        )
        sums.append(pd.DataFrame({"shard": j, "entry": np.arange(dim), "sum": clients.centred(secure, bits)}))
        del vectors, transcript
    usage = resource.getrusage(resource.RUSAGE_SELF)  # the whole job's process, start-up included
    for row in rows:
        row.update(
            job_shards=len(shards),
            job_peak_rss_mb=usage.ru_maxrss / 1024,  # kilobytes on Linux
            job_cpu_s=usage.ru_utime + usage.ru_stime,
            job_wall_s=time.perf_counter() - start,
        )
    io.write_parquet(pd.concat(sums, ignore_index=True).astype(SUM_COLUMNS), out, metadata={"shards": rows})


def gather_stage(*, paths: list[str], benchmarks: list[str], out_histogram: str, out_table: str) -> None:
    """Σ over shards of their centred sums (the released noisy histogram) and one row per shard with its job's
    wall seconds as Snakemake measured them (``benchmark_wall_s``)."""
    total, rows = None, []
    for path, bench in zip(paths, benchmarks, strict=True):
        sums = pd.read_parquet(path)
        part = sums.groupby("entry")["sum"].sum().to_numpy()
        total = part if total is None else total + part
        wall = float(pd.read_csv(bench, sep="\t")["s"].iloc[0])
        rows += [{**row, "benchmark_wall_s": wall} for row in io.read_parquet_metadata(path)["shards"]]
    io.write_parquet(pd.DataFrame({"entry": np.arange(len(total)), "noisy": total}), out_histogram)
    with io.atomic_path(out_table) as tmp:
        pd.DataFrame(rows)[TABLE_COLUMNS].to_csv(tmp, index=False)
