"""Secure aggregation as a service: one server process and client processes over TCP with TLS.

Stack: asyncio streams with the standard library's ``ssl`` (TLS 1.3 only) — no new dependency,
one event loop serves thousands of connections in one thread (the protocol's work is short CPU
bursts between messages), and the TLS library is the system OpenSSL.  gRPC would add a code
generator, a second crypto stack and its own threads for a protocol of six request/reply steps.

Only the loopback address 127.0.0.1 is used (``LOOPBACK``): the service is tested and measured on
one machine; a deployment would bind its public address and give each client a certificate.

Round (``RoundServer.run``): the server sends each connected client the message of the current
step (``wire`` types ``session``, ``keys``, ``inbox``, ``alive`` (active), ``request``, ``done``) and
waits for the replies (``advert``, ``shares``, ``masked``, ``signature``, ``unmask``) until every
client it asked has answered, every one that has not has disconnected (after ``grace`` seconds for
it to come back), or the step's deadline passes; then it closes the step (``server.Server``'s
checks: a late message is refused).  A client that disconnects — killed, crashed — simply does not
answer: the protocol's dropout handling takes over.  A client that reconnects (``hello`` with its
id) gets the current step's message again; its key store (``store``) holds its state, so it
answers each step at most once (a reply already sent is resent as it was).

What a client runs (``run_client``): it refuses a session context its identity has used before,
keeps its secrets in its key store only, and applies every check of ``client.Client``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import itertools
import json
import os
import ssl
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from . import wire
from .client import Client
from .protocol import SHARE_LIMBS, KeysMessage, ProtocolError, ProtocolParams, UnmaskingRequest
from .server import Server
from .store import KeyStore

LOOPBACK = "127.0.0.1"


# ---- TLS ------------------------------------------------------------------------------------------------------


def make_certificates(folder) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for 127.0.0.1 signed by it: (ca.pem, server.pem, server.key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)

    def cert(subject, issuer, public, signer, ca, san=None):
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = cert("locpriv-secagg test CA", "locpriv-secagg test CA", ca_key.public_key(), ca_key, True)
    server = cert(
        LOOPBACK,
        ca.subject.rfc4514_string()[3:],
        key.public_key(),
        ca_key,
        False,
        [x509.IPAddress(ipaddress.ip_address(LOOPBACK))],
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    paths[2].chmod(0o600)
    return paths


def server_tls(cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(cert, key)
    return ctx


def client_tls(ca: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    return ctx


# ---- the server ---------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Step:
    """One step in progress: whom the server asked and who has answered."""

    name: str
    asked: set
    answered: set = dataclasses.field(default_factory=set)
    messages: dict = dataclasses.field(default_factory=dict)  # cid -> the step's message to it
    done: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)


class RoundServer:
    """One round of one shard over the network; ``run`` returns (Σ of the survivors mod m, survivors, stats)."""

    def __init__(self, n, dim, params: ProtocolParams, context: bytes, deadline=30.0, grace=1.0, pause=(), log=None):
        self.proto = Server(n, params, context, dim)
        self.n, self.dim, self.params, self.context = n, dim, params, context
        self.deadline, self.grace, self.pause = deadline, grace, set(pause)
        self.log = log or (lambda line: None)
        self.writers: dict[int, asyncio.StreamWriter] = {}
        self.step = Step("advert", set(range(n)))
        self.bytes_in = self.bytes_out = 0
        self.refused: list[str] = []
        self.cpu = 0.0

    def _send(self, cid: int, message: bytes) -> None:
        writer = self.writers.get(cid)
        if writer is not None and not writer.is_closing():
            writer.write(message)
            self.bytes_out += len(message)

    def _check_done(self) -> None:
        if not self.step.asked - self.step.answered:
            self.step.done.set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        cid = None
        try:
            header, _, size = await wire.read(reader)
            self.bytes_in += size
            cid = header.get("id")
            if header.get("type") != "hello" or header.get("version") != wire.VERSION:
                raise ProtocolError(f"expected hello at wire version {wire.VERSION}, got {header}")
            if not isinstance(cid, int) or not 0 <= cid < self.n or cid in self.writers:
                raise ProtocolError(f"client id {cid!r} unknown or already connected")
            self.writers[cid] = writer
            params = dataclasses.asdict(self.params)
            self._send(cid, wire.encode("session", [self.context], n=self.n, dim=self.dim, params=params))
            if self.step.name == "advert":
                self.step.messages[cid] = wire.encode("advertise")
            if self.step.name != "advert" and cid in self.proto.adverts:
                self.log(f"client {cid} back")
            if cid in self.step.messages and cid not in self.step.answered:
                self._send(cid, self.step.messages[cid])  # a client back after a restart: the current step again
            while True:
                header, blobs, size = await wire.read(reader)
                self.bytes_in += size
                start = time.process_time()
                try:
                    self._receive(cid, header, blobs)
                except ProtocolError as exc:
                    self.refused.append(str(exc))
                    self.log(f"refused: {exc}")
                finally:
                    self.cpu += time.process_time() - start
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, ProtocolError, json.JSONDecodeError):
            pass  # a client that sends garbage or goes away drops out; the round goes on without it
        except asyncio.CancelledError:
            pass  # the round is over and the server shuts down
        finally:
            if cid is not None and self.writers.get(cid) is writer:
                del self.writers[cid]
                self._quiet_since = time.monotonic()
                self._check_done()
            writer.close()

    _quiet_since: float | None = None

    def _receive(self, cid: int, header: dict, blobs: list[bytes]) -> None:
        kind, p = header["type"], self.proto
        if kind != self.step.name:
            raise ProtocolError(f"client {cid} sent {kind!r} during step {self.step.name!r} (late or early); refused")
        if cid not in self.step.asked or cid in self.step.answered:
            raise ProtocolError(f"client {cid} sent {kind!r} unasked or twice; refused")
        if kind == "advert":
            p.receive_keys(cid, blobs[0])
        elif kind == "shares":
            p.receive_shares(cid, wire.id_map(header["ids"], blobs))
        elif kind == "masked":
            y = np.frombuffer(blobs[0], dtype=np.dtype(f"<u{_word(self.params.bits)}")).astype(np.int64)
            p.receive_masked(cid, y, blobs[1])
        elif kind == "signature":
            p.receive_signature(cid, blobs[0])
        elif kind == "unmask":
            shares = np.frombuffer(blobs[0], dtype="<i4").astype(np.int64).reshape(-1, SHARE_LIMBS)
            owners = zip(header["owners"], header["kinds"], strict=True)
            p.receive_unmasking(cid, {(int(o), k): s for (o, k), s in zip(owners, shares, strict=True)})
        self.step.answered.add(cid)
        self._check_done()

    async def _run_step(self, name: str, asked, message_for) -> None:
        start = time.process_time()
        self.step = Step(name, set(asked))
        for cid in sorted(self.step.asked):
            self.step.messages[cid] = message_for(cid)
            self._send(cid, self.step.messages[cid])
        self.cpu += time.process_time() - start
        await self._wait()
        self.log(f"step {name}: {len(self.step.answered)} of {len(self.step.asked)} answered")
        if name in self.pause:
            self.log(f"paused after {name}")
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

    async def _wait(self) -> None:
        end = time.monotonic() + self.deadline
        self._quiet_since = None
        self._check_done()
        while not self.step.done.is_set() and time.monotonic() < end:
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(self.step.done.wait(), timeout=min(self.grace, end - time.monotonic()))
            pending = self.step.asked - self.step.answered
            gone = pending and not pending & set(self.writers) and self._quiet_since is not None
            if gone and time.monotonic() - self._quiet_since >= self.grace:
                break  # everyone it still waits for has disconnected and not come back within the grace

    async def run(self, port: int, tls: ssl.SSLContext, ready=None) -> tuple[np.ndarray, np.ndarray, dict]:
        server = await asyncio.start_server(self.handle, LOOPBACK, port, ssl=tls, backlog=4096, limit=wire.MAX_FRAME)
        if ready is not None:
            ready(server.sockets[0].getsockname()[1])
        wall = time.perf_counter()
        async with server:
            await self._wait()
            self.log(f"step advert: {len(self.step.answered)} of {self.n} answered")
            p = self.proto
            await self._run_step("shares", [u for u in p.adverts if u in self.writers], lambda u: _keys(p.keys_for(u)))
            inboxes = {u: p.inbox(u) for u in p.bundles}
            await self._run_step("masked", [u for u in p.bundles if u in self.writers], lambda u: _inbox(inboxes[u]))
            start = time.process_time()
            try:
                request = p.unmasking_request()
            except ProtocolError as exc:
                for cid in list(self.writers):
                    self._send(cid, wire.encode("error", message=str(exc)))
                raise
            finally:
                self.cpu += time.process_time() - start
            alive = np.flatnonzero(request.alive)
            if self.params.active:
                await self._run_step("signature", alive, lambda u: wire.encode("alive", [_bits(request.alive)]))
            await self._run_step("unmask", alive, lambda u: _request(request, p, u))
            start = time.process_time()
            total = p.finish()
            self.cpu += time.process_time() - start
            for cid in list(self.writers):
                self._send(cid, wire.encode("done"))
            for writer in list(self.writers.values()):
                with contextlib.suppress(TimeoutError, ConnectionError):
                    await asyncio.wait_for(writer.drain(), 5)
                writer.close()
        stats = {
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "server_cpu_s": self.cpu,
            "wall_s": time.perf_counter() - wall,
            "refused": self.refused,
        }
        return total, alive, stats


def _word(bits: int) -> int:
    """Bytes per masked entry on the wire: ⌈bits / 8⌉ rounded up to a numpy word (1, 2, 4 or 8)."""
    return next(w for w in (1, 2, 4, 8) if 8 * w >= bits)


def _bits(mask: np.ndarray) -> bytes:
    return np.packbits(np.asarray(mask, dtype=bool)).tobytes()


def _unbits(raw: bytes, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(raw, np.uint8))[:n].astype(bool)


def _keys(keys: KeysMessage) -> bytes:
    ids = sorted(keys.adverts)
    blobs = [keys.root, *(keys.adverts[v] for v in ids)]
    fields = {"ids": ids}
    if keys.proofs is not None:
        fields["proof_ids"] = sorted(keys.proofs)
        blobs += [b"".join(keys.proofs[v]) for v in fields["proof_ids"]] + [keys.own]
    return wire.encode("keys", blobs, **fields)


def _inbox(sealed: dict[int, bytes]) -> bytes:
    ids = sorted(sealed)
    return wire.encode("inbox", [sealed[v] for v in ids], ids=ids)


def _request(request: UnmaskingRequest, server: Server, u: int) -> bytes:
    blobs, fields = [_bits(request.alive), _bits(request.dropped)], {}
    if server.params.active:
        signatures = server.signatures_for(u)
        fields["signers"] = sorted(signatures)
        blobs += [signatures[w] for w in fields["signers"]]
    return wire.encode("request", blobs, **fields)


# ---- a client -------------------------------------------------------------------------------------------------------


def _client_step(client: Client, x: np.ndarray, header: dict, blobs: list[bytes]) -> bytes:
    """The reply of ``client`` (input ``x``) to one step's message."""
    kind, n = header["type"], client.n
    if kind == "advertise":
        return wire.encode("advert", [client.advertise_keys()])
    if kind == "keys":
        adverts = wire.id_map(header["ids"], blobs[1 : 1 + len(header["ids"])])
        keys = KeysMessage(adverts, blobs[0])
        if "proof_ids" in header:
            rest = blobs[1 + len(header["ids"]) :]
            proofs = {
                int(v): [p[i : i + 32] for i in range(0, len(p), 32)]
                for v, p in zip(header["proof_ids"], rest[:-1], strict=True)
            }
            keys = KeysMessage(adverts, blobs[0], proofs, rest[-1])
        bundles = client.share_keys(keys)
        ids = sorted(bundles)
        return wire.encode("shares", [bundles[v] for v in ids], ids=ids)
    if kind == "inbox":
        y, bitmap = client.masked_input(x, wire.id_map(header["ids"], blobs))
        return wire.encode("masked", [y.astype(f"<u{_word(client.params.bits)}").tobytes(), bitmap])
    if kind == "alive":
        return wire.encode("signature", [client.consistency(_unbits(blobs[0], n))])
    if kind == "request":
        signatures = wire.id_map(header.get("signers", []), blobs[2:]) if client.params.active else None
        request = UnmaskingRequest(_unbits(blobs[0], n), _unbits(blobs[1], n))
        response = client.unmasking(request, signatures)
        keys = sorted(response)
        shares = b"".join(response[k].astype("<i4").tobytes() for k in keys)
        return wire.encode("unmask", [shares], owners=[o for o, _ in keys], kinds=[k for _, k in keys])
    raise ProtocolError(f"client {client.id}: unexpected message {kind!r} from the server")


async def _connect(port: int, tls: ssl.SSLContext, gate: asyncio.Semaphore | None, patience: float = 900.0):
    """A TLS connection to the server, retried with backoff for ``patience`` seconds (a busy server drops
    handshakes: 10^4 clients connecting at once to a starved server timed out after 60 s); ``gate`` bounds
    how many of this process's clients connect at once."""
    end, wait = time.monotonic() + patience, 0.5
    while True:
        try:
            async with gate or contextlib.nullcontext():
                return await asyncio.open_connection(
                    LOOPBACK, port, ssl=tls, server_hostname=LOOPBACK, ssl_handshake_timeout=patience / 3
                )
        except (OSError, TimeoutError):
            if time.monotonic() + wait > end:
                raise
            await asyncio.sleep(wait)
            wait = min(2 * wait, 30.0)


async def run_client(port: int, cid: int, x, store: KeyStore, tls: ssl.SSLContext, directory=None, gate=None):
    """Client ``cid`` with input ``x`` for one round (None: it drops before sending a masked input);
    returns (bytes sent, CPU seconds in protocol code).  ``gate``: a semaphore shared by the clients of
    one process, bounding their simultaneous connection attempts."""
    reader, writer = await _connect(port, tls, gate)
    sent = cpu = 0

    def send(message: bytes) -> None:
        nonlocal sent
        writer.write(message)
        sent += len(message)

    try:
        send(wire.encode("hello", id=cid, version=wire.VERSION))
        header, blobs, _ = await wire.read(reader)
        context, params = blobs[0], ProtocolParams(**header["params"])
        start = time.process_time()
        saved = store.load_round()
        if saved is not None and bytes.fromhex(saved[0]["context"]) == context:
            client = Client.from_state(saved[0], store.identity(), directory)
            replies = saved[1]
        else:
            identity = store.identity()
            client = Client(cid, header["n"], params, context, None, identity, directory)
            store.save_sessions(identity)
            replies = {}
        cpu += time.process_time() - start
        while True:
            header, blobs, _ = await wire.read(reader)
            if header["type"] in ("done", "error") or (header["type"] == "inbox" and x is None):
                store.end_round()
                break
            start = time.process_time()
            if header["type"] not in replies:
                replies[header["type"]] = _client_step(client, x, header, blobs).hex()
                store.save_round(client.export_state(), replies)
            cpu += time.process_time() - start
            send(bytes.fromhex(replies[header["type"]]))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the server went away: nothing more to answer
    except ProtocolError as exc:
        print(exc, file=sys.stderr)  # this client refuses the step: it drops out, the round goes on without it
    finally:
        writer.close()
    return sent, cpu


# ---- one shard through the service on this machine (the DAG's transport: loopback) ---------------------------------


CLI = [sys.executable, "-m", "locpriv.secagg.cli"]


def _env() -> dict:
    """The environment of a spawned process: this library first on its path."""
    lib = str(Path(__file__).parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join([lib, os.environ.get("PYTHONPATH", "")])}


def spawn_server(folder: Path, n: int, dim: int, *options: str):
    """``locpriv-secagg server`` as a process (certificates in folder/certs, result to folder/result.json,
    stdin and stdout piped): (the process, its port)."""
    import subprocess

    proc = subprocess.Popen(
        [
            *CLI,
            "server",
            "--clients",
            str(n),
            "--dim",
            str(dim),
            "--certs",
            str(folder / "certs"),
            "--out",
            str(folder / "result.json"),
            *options,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    return proc, int(proc.stdout.readline().split()[1])


def spawn_clients(folder: Path, port: int, ids: range, *options: str, stderr=None):
    """``locpriv-secagg client`` for clients ``ids`` as a process (inputs folder/x.npy, key stores
    folder/stores/<id>); its stdout (a JSON line of measurements) piped."""
    import subprocess

    return subprocess.Popen(
        [
            *CLI,
            "client",
            "--port",
            str(port),
            "--ids",
            f"{ids.start}:{ids.stop}",
            "--inputs",
            str(folder / "x.npy"),
            "--stores",
            str(folder / "stores"),
            "--certs",
            str(folder / "certs"),
            *options,
        ],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=_env(),
    )


def loopback_aggregate(
    vectors: np.ndarray,
    senders: np.ndarray,
    n_clients: int,
    params: ProtocolParams,
    context: bytes,
    processes: int = 4,
    deadline: float = 120.0,
):
    """``simulate.aggregate`` through the service: this process is the server, ``processes`` client processes
    run the n clients (each with its own key store and TLS connection; clients not in ``senders`` leave before
    step 2).  Returns (Σ of the senders' vectors mod m, the server's transcript); ``ProtocolError`` if the
    round fails or a client process does."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="locpriv-secagg-") as tmp:
        folder = Path(tmp)
        _ca, cert, key = make_certificates(folder / "certs")
        x = np.zeros((n_clients, np.asarray(vectors).shape[1]), dtype=np.int64)
        x[np.asarray(senders)] = vectors
        np.save(folder / "x.npy", x)
        options = []
        if params.active:
            table = {str(u): KeyStore(folder / "stores" / str(u)).public().hex() for u in range(n_clients)}
            (folder / "directory.json").write_text(json.dumps(table))
            options = ["--directory", str(folder / "directory.json")]
        drop = sorted(set(range(n_clients)) - set(np.asarray(senders).tolist()))
        if drop:
            options += ["--drop", ",".join(map(str, drop))]
        bounds = np.linspace(0, n_clients, processes + 1).astype(int)
        procs = []

        def spawn(port: int) -> None:
            for a, b in itertools.pairwise(bounds):
                procs.append(spawn_clients(folder, port, range(a, b), *options, stderr=subprocess.PIPE))

        rounds = RoundServer(n_clients, x.shape[1], params, context, deadline)
        try:
            total, _, _ = asyncio.run(rounds.run(0, server_tls(cert, key), spawn))
        finally:
            for proc in procs:
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
        failed = [proc.stderr.read() for proc in procs if proc.returncode]
        if failed:
            raise ProtocolError(f"a client process failed: {failed[0][-500:]}")
        return total, rounds.proto.transcript.frame()
