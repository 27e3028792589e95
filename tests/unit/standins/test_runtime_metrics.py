"""The runtime stand-in's per-pod vLLM metrics on its control port (``GET /_standin/metrics/{ns}/{pod}``):
load really sent to an in-process stand-in shows as running and waiting requests on the order's
pods; a pod a real runtime serves gets that process's own ``/metrics`` (here a small HTTPS server
standing in for vLLM's), or 503 when it cannot be read; the control API's new routes and bodies.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from standins.runtime import RunningRuntime, make_ca, make_server_pair, start_runtime

TOKEN = "order-token-" + "m" * 43
MODEL = "Qwen/Qwen2.5-7B-Instruct"
HOST = "chat.team-a.svc"
VLLM_TEXT = (
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    'vllm:num_requests_running{engine="0",model_name="tiny"} 7.0\n'
)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes, Path]:
    cert, key = make_ca("platform CA (metrics test)")
    path = tmp_path_factory.mktemp("ca") / "ca.crt"
    path.write_bytes(cert)
    return cert, key, path


@pytest.fixture
def runtime(ca: tuple[bytes, bytes, Path]) -> Iterator[RunningRuntime]:
    """A fresh stand-in answering for one order with a token, two slots a pod, 0.4 s a request."""
    with start_runtime(slots=2, decode_seconds=0.4) as rt:
        rt.register("team-a", "chat", model=MODEL, token=TOKEN, tls=make_server_pair(ca[0], ca[1], (HOST,)))
        yield rt


@pytest.fixture(scope="module")
def idle() -> Iterator[RunningRuntime]:
    """One stand-in for the tests that change nothing (refused control bodies)."""
    with start_runtime() as rt:
        yield rt


def chat(rt: RunningRuntime, ca_file: Path) -> httpx.Response:
    ctx = ssl.create_default_context(cafile=str(ca_file))
    body = {"model": MODEL, "messages": [{"role": "user", "content": "one two three"}]}
    with httpx.Client(verify=ctx, trust_env=False, timeout=30) as client:
        return client.post(
            f"{rt.url}/v1/chat/completions",
            headers={"Host": HOST, "Authorization": f"Bearer {TOKEN}"},
            json=body,
            extensions={"sni_hostname": HOST},
        )


def scrape(rt: RunningRuntime, pod: str, namespace: str = "team-a") -> httpx.Response:
    return httpx.get(f"{rt.control_url}/_standin/metrics/{namespace}/{pod}", timeout=10)


def values(rt: RunningRuntime, pod: str) -> dict[str, float]:
    """The pod's series by name (``vllm:request_success_total`` for finished_reason "stop"),
    after checking every series carries the order's model name and engine "0"."""
    resp = scrape(rt, pod)
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    got: dict[str, float] = {}
    for family in text_string_to_metric_families(resp.text):
        for s in family.samples:
            assert (s.labels["model_name"], s.labels["engine"]) == (MODEL, "0")
            if s.labels.get("finished_reason", "stop") == "stop":
                got[s.name] = s.value
    return got


def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the timeout"
        time.sleep(0.02)


def in_threads(n: int, call: Callable[[], httpx.Response]) -> tuple[list[threading.Thread], list[int]]:
    statuses: list[int] = []
    threads = [threading.Thread(target=lambda: statuses.append(call().status_code)) for _ in range(n)]
    for t in threads:
        t.start()
    return threads, statuses


def test_concurrent_requests_show_as_running_and_waiting_on_the_orders_pods(
    runtime: RunningRuntime, ca: tuple[bytes, bytes, Path]
) -> None:
    runtime.set_pods("team-a", "chat", ["chat-0", "chat-1"])
    assert values(runtime, "chat-0")["vllm:num_requests_running"] == 0  # a known pod, idle: zeros
    runtime.set_load(decode_seconds=60)  # nothing finishes while the load is read
    threads, statuses = in_threads(7, lambda: chat(runtime, ca[2]))

    def loaded() -> bool:
        pods = [values(runtime, p) for p in ("chat-0", "chat-1")]
        return (
            sum(p["vllm:num_requests_running"] for p in pods) == 4
            and sum(p["vllm:num_requests_waiting"] for p in pods) == 3
        )

    eventually(loaded)  # 2 pods x 2 slots run, the other 3 wait (the least loaded pod gets each)
    busy = [values(runtime, p) for p in ("chat-0", "chat-1")]
    assert [p["vllm:num_requests_running"] for p in busy] == [2, 2]
    assert sorted(p["vllm:num_requests_waiting"] for p in busy) == [1, 2]
    assert [p["vllm:kv_cache_usage_perc"] for p in busy] == [1.0, 1.0]
    runtime.set_load(decode_seconds=0.05)  # the running ones have held their slots that long: done
    for t in threads:
        t.join(timeout=10)
    assert statuses == [200] * 7
    done = [values(runtime, p) for p in ("chat-0", "chat-1")]
    assert [(p["vllm:num_requests_running"], p["vllm:num_requests_waiting"]) for p in done] == [
        (0, 0),
        (0, 0),
    ]
    assert sum(p["vllm:request_success_total"] for p in done) == 7
    assert sum(p["vllm:prompt_tokens_total"] for p in done) == 7 * 3  # "one two three"
    assert all(p["vllm:generation_tokens_total"] > 0 for p in done)
    served = [str(r["pod"]) for r in runtime.requests() if r["path"] == "/v1/chat/completions"]
    assert sorted([served.count("chat-0"), served.count("chat-1")]) == [3, 4]


def test_without_known_pods_the_order_still_answers_and_a_full_queue_answers_503(
    runtime: RunningRuntime, ca: tuple[bytes, bytes, Path]
) -> None:
    runtime.set_load(slots=1, queue_limit=0)
    assert httpx.get(f"{runtime.control_url}/_standin/load").json() == {
        "slots": 1,
        "decodeSeconds": 0.4,
        "queueLimit": 0,
    }
    threads, statuses = in_threads(2, lambda: chat(runtime, ca[2]))
    for t in threads:
        t.join(timeout=10)
    assert sorted(statuses) == [200, 503]  # one runs on the implicit replica, nothing may wait
    assert [r["pod"] for r in runtime.requests()] == [None, None]
    assert scrape(runtime, "chat-0").status_code == 404  # no pod of the order is known


@pytest.mark.parametrize(
    "body",
    [{"slots": 0}, {"decodeSeconds": "2"}, {"slots": True}, {"queueLimit": 1.5}, {"other": 1}, []],
)
def test_the_control_api_refuses_a_bad_load(idle: RunningRuntime, body: Any) -> None:
    assert httpx.put(f"{idle.control_url}/_standin/load", json=body).status_code == 400


@pytest.mark.parametrize("body", [{}, {"pods": "chat-0"}, {"pods": ["Chat_0"]}, {"pods": [1]}])
def test_the_control_api_refuses_a_bad_pod_list(idle: RunningRuntime, body: Any) -> None:
    assert httpx.put(f"{idle.control_url}/_standin/pods/team-a/chat", json=body).status_code == 400


def test_a_pod_the_stand_in_cannot_place_in_an_order_is_not_scraped_as_idle(runtime: RunningRuntime) -> None:
    runtime.set_pods("team-a", "ghost", ["ghost-0"])  # pods of an order the stand-in does not know
    assert scrape(runtime, "ghost-0").status_code == 404
    assert scrape(runtime, "chat-0", namespace="team-b").status_code == 404
    runtime.set_pods("team-a", "chat", ["chat-0"])
    assert scrape(runtime, "chat-0").status_code == 200
    runtime.clear_pods("team-a", "chat")
    assert scrape(runtime, "chat-0").status_code == 404
    assert scrape(runtime, "Bad_Pod").status_code == 404


class FakeVllm(ThreadingHTTPServer):
    """vLLM's ``/metrics`` over HTTPS with its own certificate, behind the order's token guard."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self, cert_file: Path, key_file: Path, *, status: int = 200, body: bytes = VLLM_TEXT.encode()
    ):
        super().__init__(("127.0.0.1", 0), FakeVllmHandler)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(str(cert_file), str(key_file))
        self.status, self.body = status, body
        self.seen: list[tuple[str, str | None]] = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = super().get_request()
        return self.tls.wrap_socket(sock, server_side=True), addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


class FakeVllmHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeVllm

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization")
        self.server.seen.append((self.path, auth))
        ok = auth == f"Bearer {TOKEN}" and self.path == "/metrics"
        raw = self.server.body if ok else b'{"error": "Unauthorized"}'
        self.send_response(self.server.status if ok else 401)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@contextlib.contextmanager
def fake_vllm(d: Path, ca: tuple[bytes, bytes, Path], **kwargs: Any) -> Iterator[FakeVllm]:
    cert, key = make_server_pair(ca[0], ca[1], (HOST,))
    (d / "tls.crt").write_bytes(cert)
    (d / "tls.key").write_bytes(key)
    server = FakeVllm(d / "tls.crt", d / "tls.key", **kwargs)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def dead_address() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_a_pod_a_real_runtime_serves_gets_that_processs_own_metrics(
    runtime: RunningRuntime, ca: tuple[bytes, bytes, Path], tmp_path: Path
) -> None:
    with fake_vllm(tmp_path, ca) as vllm:
        runtime.route("team-a", "chat", [], pods={"chat-0": vllm.address})
        resp = scrape(runtime, "chat-0")
        assert (resp.status_code, resp.text) == (200, VLLM_TEXT)  # unchanged
        assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert vllm.seen == [("/metrics", f"Bearer {TOKEN}")]
        routes = httpx.get(f"{runtime.control_url}/_standin/routes").json()["routes"]
        assert routes == [
            {
                "namespace": "team-a",
                "name": "chat",
                "backends": [vllm.address],
                "pods": {"chat-0": vllm.address},
            }
        ]
        runtime.set_pods("team-a", "chat", ["chat-0", "chat-1"])
        # a pod of the routed order with no process registered: nothing to ask, never zeros
        assert scrape(runtime, "chat-1").status_code == 503
    gone = scrape(runtime, "chat-0")  # the process went away: the target is down, no numbers
    assert gone.status_code == 503 and "gave no metrics" in gone.json()["error"]
    runtime.route("team-a", "chat", [], pods={"chat-0": dead_address()})
    assert scrape(runtime, "chat-0").status_code == 503
    runtime.unroute("team-a", "chat")
    assert scrape(runtime, "chat-0").status_code == 200  # the stand-in's own replica again


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [({"status": 500}, "HTTP Error 500"), ({"body": b"x" * 4096}, "more than 1024 bytes")],
    ids=["an error answer", "an answer over the bound"],
)
def test_a_real_runtimes_failed_or_oversized_answer_is_503(
    runtime: RunningRuntime,
    ca: tuple[bytes, bytes, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kwargs: dict[str, Any],
    why: str,
) -> None:
    monkeypatch.setattr("standins.runtime.server.METRICS_MAX_BYTES", 1024)
    with fake_vllm(tmp_path, ca, **kwargs) as vllm:
        runtime.route("team-a", "chat", [], pods={"chat-0": vllm.address})
        resp = scrape(runtime, "chat-0")
    assert resp.status_code == 503 and why in resp.json()["error"]


def test_the_old_route_body_and_the_named_one_are_both_accepted(runtime: RunningRuntime) -> None:
    url = f"{runtime.control_url}/_standin/routes/team-a/chat"
    body = {"backends": ["127.0.0.1:8001", {"address": "127.0.0.1:8002", "pod": "chat-1"}]}
    resp = httpx.put(url, json=body)
    assert resp.status_code == 200
    assert resp.json()["backends"] == ["127.0.0.1:8001", "127.0.0.1:8002"]
    assert resp.json()["pods"] == {"chat-1": "127.0.0.1:8002"}
    assert httpx.put(url, json={"backends": ["127.0.0.1:8001"]}).json()["pods"] == {}


@pytest.mark.parametrize(
    "backend",
    [
        {"address": "127.0.0.1:8001"},
        {"address": "127.0.0.1:8001", "pod": "Chat_1"},
        {"address": "127.0.0.1:99999", "pod": "chat-1"},
        {"address": "127.0.0.1:8001", "pod": "chat-1", "x": 1},
    ],
)
def test_a_bad_named_backend_is_refused(idle: RunningRuntime, backend: dict[str, Any]) -> None:
    resp = httpx.put(f"{idle.control_url}/_standin/routes/team-a/chat", json={"backends": [backend]})
    assert resp.status_code == 400
