"""The runtime stand-in as an SNI router: an order routed to a real runtime is passed through
(TLS passthrough: the client sees the backend's certificate and answer), a claimed order with no
backend ready is closed unanswered, everything else is the stand-in's as before.

The "real runtime" here is a small TLS server in a thread with its own certificate for the host.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509

from standins.runtime import RunningRuntime, make_ca, make_server_pair, start_runtime
from standins.runtime.orders import OrderKey
from standins.runtime.router import peek_sni, splice
from standins.runtime.server import FORWARDED_KEPT
from tests.unit.standins.test_sni import real_hello

HOST = "chat.team-a.svc"
OTHER = "open.team-a.svc"


def serial_of(cert_pem: bytes) -> int:
    return x509.load_pem_x509_certificate(cert_pem).serial_number


class Backend(ThreadingHTTPServer):
    """A "real runtime": TLS with its own certificate; answers every GET with a fixed body."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        super().__init__(("127.0.0.1", 0), BackendHandler)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(str(cert_file), str(key_file))

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = super().get_request()
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that went away mid-handshake


class BackendHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        raw = json.dumps({"served_by": "real runtime", "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes, Path]:
    cert, key = make_ca("platform CA (router test)")
    path = tmp_path_factory.mktemp("ca") / "ca.crt"
    path.write_bytes(cert)
    return cert, key, path


@pytest.fixture(scope="module")
def backend_pair(ca: tuple[bytes, bytes, Path]) -> tuple[bytes, bytes]:
    """The certificate the real runtime serves (another serial than the stand-in's)."""
    return make_server_pair(ca[0], ca[1], (HOST,))


@pytest.fixture(scope="module")
def standin_pair(ca: tuple[bytes, bytes, Path]) -> tuple[bytes, bytes]:
    return make_server_pair(ca[0], ca[1], (HOST,))


@contextlib.contextmanager
def serving_backend(d: Path, pair: tuple[bytes, bytes]) -> Iterator[Backend]:
    (d / "tls.crt").write_bytes(pair[0])
    (d / "tls.key").write_bytes(pair[1])
    server = Backend(d / "tls.crt", d / "tls.key")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory, backend_pair: tuple[bytes, bytes]) -> Iterator[Backend]:
    with serving_backend(tmp_path_factory.mktemp("backend"), backend_pair) as server:
        yield server


@pytest.fixture
def runtime(ca: tuple[bytes, bytes, Path], standin_pair: tuple[bytes, bytes]) -> Iterator[RunningRuntime]:
    """A fresh stand-in with two orders it can answer for itself (its own issued certificates)."""
    with start_runtime() as rt:
        rt.register("team-a", "chat", model="Qwen/Qwen2.5-7B-Instruct", token=None, tls=standin_pair)
        rt.register(
            "team-a",
            "open",
            model="BAAI/bge-large-en-v1.5",
            token=None,
            tls=make_server_pair(ca[0], ca[1], (OTHER,)),
        )
        yield rt


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fetch(rt: RunningRuntime, ca_file: Path, host: str, path: str = "/v1/models") -> tuple[int, bytes]:
    """GET ``path`` on a fresh connection to the stand-in's address with ``host`` as SNI and Host:
    (the serial of the certificate the peer presented, the whole raw answer)."""
    ctx = ssl.create_default_context(cafile=str(ca_file))
    addr, port = rt.address.rsplit(":", 1)
    with (
        socket.create_connection((addr, int(port)), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as tls,
    ):
        serial = int(str((tls.getpeercert() or {})["serialNumber"]), 16)
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
    return serial, answer


def eventually(what: Callable[[], list[dict[str, object]]], timeout: float = 10) -> list[dict[str, object]]:
    """``what()`` once it is not empty (a forwarded connection is recorded when it ends)."""
    deadline = time.monotonic() + timeout
    while not (found := what()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def forwarded_for(rt: RunningRuntime, host: str) -> Callable[[], list[dict[str, object]]]:
    return lambda: [f for f in rt.forwarded() if f["host"] == host]


def test_a_routed_order_is_served_by_its_real_runtime_through_tls_passthrough(
    runtime: RunningRuntime,
    ca: tuple[bytes, bytes, Path],
    backend: Backend,
    backend_pair: tuple[bytes, bytes],
) -> None:
    runtime.route("team-a", "chat", [backend.address])
    serial, answer = fetch(runtime, ca[2], HOST)
    assert serial == serial_of(backend_pair[0])
    assert answer.startswith(b"HTTP/1.1 200")
    assert answer.endswith(b'{"served_by": "real runtime", "path": "/v1/models"}')
    [entry] = eventually(forwarded_for(runtime, HOST))
    assert entry["backend"] == backend.address
    assert entry["error"] is None
    assert isinstance(entry["up"], int) and entry["up"] > 100  # the ClientHello and the request
    assert isinstance(entry["down"], int) and entry["down"] > len(answer)  # TLS adds to the answer
    assert not [r for r in runtime.requests() if r["host"] == HOST]
    assert not [h for h in runtime.handshakes() if h["host"] == HOST]
    # the stand-in still answers the orders not routed, with its own certificate
    other_serial, other = fetch(runtime, ca[2], OTHER)
    assert other_serial != serial
    assert b"BAAI/bge-large-en-v1.5" in other


def test_unrouting_gives_the_order_back_to_the_stand_in(
    runtime: RunningRuntime,
    ca: tuple[bytes, bytes, Path],
    backend: Backend,
    standin_pair: tuple[bytes, bytes],
) -> None:
    runtime.route("team-a", "chat", [backend.address])
    assert b"real runtime" in fetch(runtime, ca[2], HOST)[1]
    runtime.unroute("team-a", "chat")
    serial, answer = fetch(runtime, ca[2], HOST)
    assert serial == serial_of(standin_pair[0])
    assert b"Qwen/Qwen2.5-7B-Instruct" in answer
    assert httpx.get(f"{runtime.control_url}/_standin/routes").json() == {"routes": []}


def test_a_dead_backend_is_skipped_for_the_next(
    runtime: RunningRuntime, ca: tuple[bytes, bytes, Path], backend: Backend
) -> None:
    dead = f"127.0.0.1:{closed_port()}"
    runtime.route("team-a", "chat", [dead, backend.address])
    answers = [fetch(runtime, ca[2], HOST)[1] for _ in range(2)]  # round robin starts at each in turn
    assert all(b"real runtime" in a for a in answers)
    assert {f["backend"] for f in eventually(forwarded_for(runtime, HOST))} == {backend.address}


def test_a_claimed_order_with_no_backend_ready_is_closed_unanswered(
    runtime: RunningRuntime, ca: tuple[bytes, bytes, Path]
) -> None:
    runtime.route("team-a", "chat", [])
    with pytest.raises((ssl.SSLError, ConnectionError)):  # reset or EOF in the handshake
        fetch(runtime, ca[2], HOST)
    assert not [r for r in runtime.requests() if r["host"] == HOST]
    assert not [h for h in runtime.handshakes() if h["host"] == HOST]
    [entry] = eventually(forwarded_for(runtime, HOST))
    assert entry["backend"] is None
    assert "none is ready" in str(entry["error"])


def test_a_backend_that_is_down_closes_the_connection_without_a_hang(
    runtime: RunningRuntime, ca: tuple[bytes, bytes, Path]
) -> None:
    dead = f"127.0.0.1:{closed_port()}"
    runtime.route("team-a", "chat", [dead])
    started = time.monotonic()
    with pytest.raises((ssl.SSLError, ConnectionError)):
        fetch(runtime, ca[2], HOST)
    assert time.monotonic() - started < 5
    [entry] = eventually(forwarded_for(runtime, HOST))
    assert entry["backend"] is None
    assert dead in str(entry["error"])
    assert not [r for r in runtime.requests() if r["host"] == HOST]


def test_a_silent_client_does_not_hold_up_others(
    runtime: RunningRuntime, ca: tuple[bytes, bytes, Path], backend: Backend
) -> None:
    runtime.route("team-a", "chat", [backend.address])
    addr, port = runtime.address.rsplit(":", 1)
    with socket.create_connection((addr, int(port))) as silent:
        started = time.monotonic()
        assert b"real runtime" in fetch(runtime, ca[2], HOST)[1]
        assert b"BAAI/bge-large-en-v1.5" in fetch(runtime, ca[2], OTHER)[1]
        assert time.monotonic() - started < 5
        silent.settimeout(0.2)
        with pytest.raises(TimeoutError):
            silent.recv(1)  # still waiting for its hello: not closed, not answered


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"backends": "127.0.0.1:8000"}, "a list"),
        ({}, "a list"),
        ({"backends": ["127.0.0.1"]}, "HOST:PORT"),
        ({"backends": ["127.0.0.1:http"]}, "1..65535"),
        ({"backends": ["127.0.0.1:0"]}, "1..65535"),
        ({"backends": ["127.0.0.1:65536"]}, "1..65535"),
        ({"backends": [":8000"]}, "HOST:PORT"),
        ({"backends": [8000]}, "string"),
    ],
)
def test_the_control_api_refuses_a_bad_backend_list(runtime: RunningRuntime, body: Any, message: str) -> None:
    resp = httpx.put(f"{runtime.control_url}/_standin/routes/team-a/chat", json=body)
    assert resp.status_code == 400
    assert message in resp.json()["error"]
    assert httpx.get(f"{runtime.control_url}/_standin/routes").json() == {"routes": []}


def test_the_control_api_lists_routes_and_route_raises_on_a_bad_backend(runtime: RunningRuntime) -> None:
    runtime.route("team-a", "chat", ["127.0.0.1:8000", "[::1]:8001"])
    runtime.route("team-b", "rank", [])
    assert httpx.get(f"{runtime.control_url}/_standin/routes").json() == {
        "routes": [
            {"namespace": "team-a", "name": "chat", "backends": ["127.0.0.1:8000", "[::1]:8001"]},
            {"namespace": "team-b", "name": "rank", "backends": []},
        ]
    }
    with pytest.raises(ValueError, match=r"1\.\.65535"):
        runtime.route("team-a", "chat", ["127.0.0.1:99999"])
    assert runtime.state.routes[OrderKey("team-a", "chat")] == ["127.0.0.1:8000", "[::1]:8001"]


def test_round_robin_spreads_connections_over_the_backends(
    runtime: RunningRuntime,
    ca: tuple[bytes, bytes, Path],
    backend: Backend,
    tmp_path: Path,
) -> None:
    second_pair = make_server_pair(ca[0], ca[1], (HOST,))
    with serving_backend(tmp_path, second_pair) as second:
        runtime.route("team-a", "chat", [backend.address, second.address])
        serials = [fetch(runtime, ca[2], HOST)[0] for _ in range(4)]
    assert serials.count(serial_of(second_pair[0])) == 2
    assert len(set(serials)) == 2


def test_the_forwarded_list_keeps_the_last_entries(runtime: RunningRuntime) -> None:
    for i in range(FORWARDED_KEPT + 5):
        runtime.state.record_forwarded({"host": f"h{i}", "backend": None, "up": 0, "down": 0, "error": None})
    kept = runtime.forwarded()
    assert len(kept) == FORWARDED_KEPT
    assert (kept[0]["host"], kept[-1]["host"]) == ("h5", f"h{FORWARDED_KEPT + 4}")


def test_peek_reads_a_hello_sent_in_pieces_and_leaves_it_in_the_socket() -> None:
    hello = real_hello(HOST)
    client, server = socket.socketpair()
    with client, server:
        client.sendall(hello[:7])
        later = threading.Timer(0.2, client.sendall, (hello[7:],))
        later.start()
        assert peek_sni(server, timeout=5) == HOST
        later.join()
        server.settimeout(1)
        assert server.recv(len(hello) + 10, socket.MSG_WAITALL) == hello


@pytest.mark.parametrize(
    ("sent", "close"),
    [(b"", False), (b"", True), (b"GET / HTTP/1.1\r\n", False)],
    ids=["silent", "closed", "http"],
)
def test_peek_gives_none_without_a_hello_within_the_timeout(sent: bytes, close: bool) -> None:
    client, server = socket.socketpair()
    with client, server:
        client.sendall(sent)
        if close:
            client.shutdown(socket.SHUT_WR)
        started = time.monotonic()
        assert peek_sni(server, timeout=0.3) is None
        assert time.monotonic() - started < 2


def test_splice_passes_a_half_close_through_and_counts_bytes() -> None:
    """The client sends its request and EOF; the backend still answers after seeing the EOF."""
    client, front = socket.socketpair()
    back, backend = socket.socketpair()
    result: list[tuple[int, int, str | None]] = []
    thread = threading.Thread(target=lambda: result.append(splice(front, back, idle=5)))
    thread.start()
    with client, front, back, backend:
        client.sendall(b"request")
        client.shutdown(socket.SHUT_WR)
        backend.settimeout(5)
        got = b""
        while chunk := backend.recv(100):
            got += chunk
        assert got == b"request"  # then EOF: the half-close arrived
        backend.sendall(b"the answer")
        backend.shutdown(socket.SHUT_WR)
        client.settimeout(5)
        answer = b""
        while chunk := client.recv(100):
            answer += chunk
        thread.join(timeout=5)
    assert answer == b"the answer"
    assert result == [(7, 10, None)]


def test_splice_ends_a_connection_idle_both_ways() -> None:
    client, front = socket.socketpair()
    back, backend = socket.socketpair()
    with client, front, back, backend:
        started = time.monotonic()
        up, down, error = splice(front, back, idle=0.3)
        assert time.monotonic() - started < 3
        client.settimeout(1)
        assert client.recv(1) == b""  # shut down: the client sees the end
    assert (up, down) == (0, 0)
    assert error is not None and "no byte either way" in error


class Adopter(ThreadingHTTPServer):
    """A plane runner's question port: claims the orders it adopts at the stand-in, then says so."""

    daemon_threads = True

    def __init__(self, rt: RunningRuntime, adopts: set[str], undecided: set[str] | None = None) -> None:
        super().__init__(("127.0.0.1", 0), AdopterHandler)
        self.rt, self.adopts, self.undecided = rt, adopts, undecided or set()
        self.asked: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class AdopterHandler(BaseHTTPRequestHandler):
    server: Adopter

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        _, _, ns, name = self.path.split("/")
        self.server.asked.append(f"{ns}/{name}")
        adopted: bool | None = name in self.server.adopts
        if adopted:
            self.server.rt.route(ns, name, [])
        elif name in self.server.undecided:
            adopted = None
        raw = json.dumps({"adopted": adopted}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def set_adopter(rt: RunningRuntime, url: str | None) -> httpx.Response:
    if url is None:
        return httpx.delete(f"{rt.control_url}/_standin/adopter", timeout=10)
    return httpx.put(f"{rt.control_url}/_standin/adopter", json={"url": url}, timeout=10)


def test_the_plane_runner_is_asked_before_the_stand_in_answers_an_order_nobody_routed(
    runtime: RunningRuntime, ca: tuple[bytes, bytes, Path]
) -> None:
    """An order whose pods a real runtime will serve is never answered by the stand-in, not even
    before its runner routed it: the stand-in asks the runner first (the race e2e found: the
    controller probed a tiny order's pod, Ready by KWOK, before the runner had claimed it)."""
    adopter = Adopter(runtime, {"chat"})
    threading.Thread(target=adopter.serve_forever, daemon=True).start()
    try:
        assert set_adopter(runtime, adopter.url).status_code == 200
        with pytest.raises((ssl.SSLError, OSError)):
            fetch(runtime, ca[2], HOST)  # adopted: claimed, nothing ready, closed
        assert not [r for r in runtime.requests() if r["host"] == HOST]
        assert b"BAAI/bge-large-en-v1.5" in fetch(runtime, ca[2], OTHER)[1]  # not adopted: the stand-in's
        assert adopter.asked == ["team-a/chat", "team-a/open"]
        fetch(runtime, ca[2], OTHER)
        with pytest.raises((ssl.SSLError, OSError)):
            fetch(runtime, ca[2], HOST)
        assert adopter.asked == ["team-a/chat", "team-a/open", "team-a/open"]  # routed: not asked again
    finally:
        adopter.shutdown()
        adopter.server_close()
    # a runner that does not answer: the stand-in answers, as without one
    assert b"BAAI/bge-large-en-v1.5" in fetch(runtime, ca[2], OTHER)[1]
    assert set_adopter(runtime, None).status_code == 200


def test_an_order_the_runner_has_not_decided_yet_is_not_answered_by_the_stand_in(
    runtime: RunningRuntime, ca: tuple[bytes, bytes, Path]
) -> None:
    """The runner has not read a new pod's Secrets or sizes yet: the stand-in closes the connection
    rather than answer for an order a real vLLM may be about to serve (a KWOK pod is Ready at once,
    and the controller's first probe answered by the stand-in once made a tiny order Ready before
    its vLLM ran)."""
    adopter = Adopter(runtime, set(), undecided={"chat"})
    threading.Thread(target=adopter.serve_forever, daemon=True).start()
    try:
        assert set_adopter(runtime, adopter.url).status_code == 200
        with pytest.raises((ssl.SSLError, OSError)):
            fetch(runtime, ca[2], HOST)
        assert not [r for r in runtime.requests() if r["host"] == HOST]
        adopter.undecided.clear()  # decided: not the runner's
        assert b"runtime-standin" in fetch(runtime, ca[2], HOST)[1]  # answered by the stand-in now
    finally:
        adopter.shutdown()
        adopter.server_close()
        set_adopter(runtime, None)


@pytest.mark.parametrize("body", [{}, {"url": 3}, {"url": "https://x:1"}, {"url": "http://a b"}, []])
def test_the_control_api_refuses_a_bad_adopter(runtime: RunningRuntime, body: Any) -> None:
    resp = httpx.put(f"{runtime.control_url}/_standin/adopter", json=body, timeout=10)
    assert resp.status_code == 400 and "url" in resp.json()["error"]
