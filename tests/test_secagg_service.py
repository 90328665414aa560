"""The secure-aggregation service (locpriv.secagg.service): a server process and client processes over TLS on
127.0.0.1, client processes killed mid-round and one restarted from its key store, the exact sum of the survivors."""

import json
import os
import signal
import subprocess

import numpy as np
import pytest

from locpriv.secagg import ProtocolError, ProtocolParams, aggregate, service, wire
from locpriv.secagg.store import KeyStore


def start_server(folder, n, dim, *options):
    return service.spawn_server(folder, n, dim, *options)


def start_clients(folder, port, ids, *options):
    return service.spawn_clients(folder, port, ids, *options, stderr=subprocess.DEVNULL)


def wait_for(proc, text):
    lines = []
    for line in proc.stdout:
        lines.append(line.strip())
        if text in line:
            return lines
    raise AssertionError(f"the server ended before {text!r}: {lines}")


def test_a_round_over_tls_with_killed_and_restarted_client_processes(tmp_path):
    # 60 clients in 6 processes; after the key shares, process 1 (clients 10-19) is killed: they never send a
    # masked input and drop; after the masked inputs, process 4 (40-49) is killed and restarted from its key
    # stores (it answers the unmasking request from its saved state), process 5 (50-59) is killed for good
    # (survivors that never answer).  The server's output is the exact sum of the 50 survivors.
    n, dim, bits = 60, 6, 20
    service.make_certificates(tmp_path / "certs")
    x = np.random.default_rng(0).integers(0, 1 << bits, (n, dim))
    np.save(tmp_path / "x.npy", x)
    server, port = start_server(
        tmp_path,
        n,
        dim,
        "--bits",
        str(bits),
        "--planned-dropout",
        "0.35",
        "--deadline",
        "300",  # per step; steps end as soon as every client asked has answered or gone
        "--grace",
        "0.5",
        "--pause",
        "shares",
        "--pause",
        "masked",
    )
    blocks = [range(10 * i, 10 * i + 10) for i in range(6)]
    clients = [start_clients(tmp_path, port, ids) for ids in blocks]
    try:
        wait_for(server, "paused after shares")
        clients[1].send_signal(signal.SIGKILL)
        clients[1].wait(60)
        server.stdin.write("\n")
        server.stdin.flush()
        log = wait_for(server, "paused after masked")
        # 50 masked inputs: asked 50, or 60 if the server had not yet seen the ten killed connections close
        assert any(line.startswith("step masked: 50 of") for line in log)
        for i in (4, 5):
            clients[i].send_signal(signal.SIGKILL)
            clients[i].wait(60)
        saved = KeyStore(tmp_path / "stores" / "42").load_round()
        assert saved is not None and "inbox" in saved[1]  # its masked input, as sent, kept across the kill
        clients[4] = start_clients(tmp_path, port, blocks[4])
        for _u in blocks[4]:
            wait_for(server, "back")  # all ten reconnected before the unmasking request goes out
        server.stdin.write("\n")
        server.stdin.flush()
        log = wait_for(server, "done")
        assert server.wait(120) == 0
        for i in (0, 2, 3, 4):
            assert clients[i].wait(120) == 0
        assert clients[1].returncode == clients[5].returncode == -signal.SIGKILL
    finally:
        for proc in [server, *clients]:
            if proc.poll() is None:
                proc.kill()
    result = json.loads((tmp_path / "result.json").read_text())
    alive = np.setdiff1d(np.arange(n), blocks[1])
    assert result["alive"] == alive.tolist()
    assert "step unmask: 40 of 50 answered" in log  # the restarted process answered, the killed one did not
    assert np.array_equal(result["sum"], x[alive].sum(axis=0) % (1 << bits))
    assert result["bytes_in"] > 0 and result["refused"] == []
    # the key stores: identities and used contexts kept; the server holds none of it
    assert (tmp_path / "stores" / "3" / "identity.key").stat().st_mode & 0o077 == 0


def test_the_wire_format_is_versioned():
    message = wire.encode("hello", [b"\x00\x01"], id=3, version=wire.VERSION)
    header, blobs = wire.decode(message[4:])
    assert header == {"type": "hello", "id": 3, "version": 1} and blobs == [b"\x00\x01"]
    with pytest.raises(ProtocolError, match="wire format b'LSA2'"):
        wire.decode(b"LSA2" + message[8:])


def test_a_restarted_client_refuses_a_context_it_used(tmp_path):
    store = KeyStore(tmp_path / "c")
    identity = store.identity()
    assert identity.begin(b"context-of-round-1")
    store.save_sessions(identity)
    again = KeyStore(tmp_path / "c").identity()  # a new process: the key store, not memory
    assert again.public == identity.public and not again.begin(b"context-of-round-1")


@pytest.mark.parametrize("variant", ["honest_but_curious", "active"])
def test_the_dag_can_run_a_shard_over_loopback_with_the_simulations_sum(variant):
    n, bits = 120, 16
    x = np.random.default_rng(2).integers(0, 1 << bits, (n, 9))
    senders = np.setdiff1d(np.arange(n), [5, 77])
    params = ProtocolParams(bits=bits, degree=8, variant=variant, planned_dropout=0.02)
    context = os.urandom(16)
    over_tls, log = service.loopback_aggregate(x[senders], senders, n, params, context, processes=3)
    simulated, _ = aggregate(x[senders], senders, n, params, None, os.urandom(16))
    assert np.array_equal(over_tls, simulated) and np.array_equal(simulated, x[senders].sum(axis=0) % (1 << bits))
    assert set(log.loc[log["step"] == "masked_input", "sender"]) == set(senders.tolist())


def test_the_dag_mechanism_over_loopback_publishes_the_simulations_map():
    """transport: loopback — each shard of aggregation secure through the service: the map of the ideal sum."""
    from locpriv import mechanisms
    from test_heatmap_mechanisms import _run

    _, _, _, ideal, _ = _run("heatmap_flat", n=400, depth=3, shard_size=200, aggregation="per_client")
    _, _, _, view, _ = _run("heatmap_flat", n=400, depth=3, shard_size=200, aggregation="secure", transport="loopback")
    assert view.attrs["release"]["count"] == ideal.attrs["release"]["count"]
    with pytest.raises(ValueError, match=r"transport.*aggregation secure only"):
        mechanisms.get("heatmap_flat")(epsilon=1.0, transport="loopback")
