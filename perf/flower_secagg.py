"""Flower's SecAgg+ round as perf/bench_secagg.py runs it, in-process (``--part flower``) and deployed
(``--part flower-service``): the same server workflow and client mod either way.

Deployed, this file is the module of a Flower App (``flwr run``; the benchmark writes its pyproject.toml
beside a copy of it): ``server_app`` runs one SecAgg+ round over the SuperLink's nodes and checks the
mean, ``client_app`` answers with node ``partition-id``'s vector.  Both write their CPU seconds to
``out`` (the run config's folder) for the benchmark to read.  Only flwr and numpy are imported: the
Flower processes run in an environment of their own, without locpriv.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import numpy as np
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.client.mod.secure_aggregation.secaggplus_mod import secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.compat.common import recorddict_compat as compat
from flwr.server.compat.grid_client_proxy import GridClientProxy
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.strategy import FedAvg
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey
from flwr.server.workflow.secure_aggregation.secaggplus_workflow import SecAggPlusWorkflow
from flwr.serverapp import ServerApp


def vectors(n: int, dim: int, seed: int) -> np.ndarray:
    """The n clients' inputs (floats in [-1, 1): Flower quantises them itself)."""
    return np.random.default_rng(seed).uniform(-1, 1, (n, dim)).astype(np.float32)


def fit_reply(msg: Message, vector: np.ndarray) -> Message:
    """A client's training reply carrying ``vector``: what the workflow sums."""
    fit = FitRes(Status(Code.OK, ""), ndarrays_to_parameters([vector]), 1, {})
    return Message(compat.fitres_to_recorddict(fit, False), reply_to=msg)


def secagg_round(grid, nodes, dim: int, k: int, t: int, bits: int) -> np.ndarray:
    """One SecAgg+ round of FedAvg over ``nodes`` (Harary degree k: ``num_shares`` = k + 1, threshold t,
    modulus 2^bits); returns the aggregated mean."""
    context = LegacyContext(
        Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}),
        strategy=FedAvg(fraction_fit=1.0, min_fit_clients=len(nodes), min_available_clients=len(nodes)),
    )
    for node in nodes:
        context.client_manager.register(GridClientProxy(node, grid, 1))
    context.state.config_records[MAIN_CONFIGS_RECORD] = ConfigRecord({WorkflowKey.CURRENT_ROUND: 1})
    context.state.array_records[MAIN_PARAMS_RECORD] = compat.parameters_to_arrayrecord(
        ndarrays_to_parameters([np.zeros(dim, np.float32)]), True
    )
    SecAggPlusWorkflow(num_shares=k + 1, reconstruction_threshold=t, modulus_range=1 << bits)(grid, context)
    return parameters_to_ndarrays(
        compat.arrayrecord_to_parameters(context.state.array_records[MAIN_PARAMS_RECORD], True)
    )[0]


def mean_error(mean: np.ndarray, x: np.ndarray) -> float:
    """Largest error of Flower's released mean (the mean of the stochastically quantised vectors)."""
    return float(np.abs(mean - x.mean(axis=0)).max())


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


# ---- the deployed Flower App (flwr run) -------------------------------------------------------------------------


def _timed_secaggplus(msg: Message, context: Context, call_next) -> Message:
    """secaggplus_mod, its CPU seconds (and this process's) appended to out/clientapp-<partition>.jsonl."""
    start = time.process_time()
    reply = secaggplus_mod(msg, context, call_next)
    line = {"protocol_cpu_s": time.process_time() - start, "process_cpu_s": _cpu(), "pid": os.getpid()}
    path = Path(context.run_config["out"], f"clientapp-{context.node_config['partition-id']}.jsonl")
    with path.open("a") as f:
        f.write(json.dumps(line) + "\n")
    return reply


server_app = ServerApp()
client_app = ClientApp(mods=[_timed_secaggplus])


@server_app.main()
def _server(grid, context: Context) -> None:
    cfg = context.run_config
    n, dim = int(cfg["n"]), int(cfg["dim"])
    nodes = list(grid.get_node_ids())
    while len(nodes) < n:  # every SuperNode registered before the round starts
        time.sleep(1)
        nodes = list(grid.get_node_ids())
    start = time.process_time()
    mean = secagg_round(grid, nodes, dim, int(cfg["k"]), int(cfg["t"]), int(cfg["bits"]))
    protocol = time.process_time() - start
    error = mean_error(mean, vectors(n, dim, int(cfg["seed"])))
    report = {"protocol_cpu_s": protocol, "process_cpu_s": _cpu(), "nodes": len(nodes), "mean_error": error}
    Path(cfg["out"], "serverapp.json").write_text(json.dumps(report))


@client_app.train()
def _train(msg: Message, context: Context) -> Message:
    cfg, part = context.run_config, int(context.node_config["partition-id"])
    return fit_reply(msg, vectors(int(cfg["n"]), int(cfg["dim"]), int(cfg["seed"]))[part])
