"""The runtime stand-in: the order's issued certificate per SNI name and none without one, tokens,
faults, the OpenAI routes.

Orders are registered on the stand-in by hand here; reading them (and their tokens) from the real
API server is covered by tests/integration/test_runtime_standin.py.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controller.live.probe import Prober
from standins.runtime import RunningRuntime, make_ca, make_server_pair, start_runtime
from standins.runtime.orders import is_guarded, needs_token

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "order-token-" + "x" * 43


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    cert, key = make_ca("platform CA (test)")
    d = tmp_path_factory.mktemp("ca")
    (d / "ca.crt").write_bytes(cert)
    (d / "ca.key").write_bytes(key)
    return d / "ca.crt", d / "ca.key"


@pytest.fixture(scope="module")
def runtime(ca: tuple[Path, Path]) -> Iterator[RunningRuntime]:
    """Three orders, each with the certificate the platform CA issued for its host (as
    cert-manager writes it into ``<order>-tls``), and one ("bare") not issued one yet."""

    def issued(host: str) -> tuple[bytes, bytes]:
        return make_server_pair(ca[0].read_bytes(), ca[1].read_bytes(), (host,))

    with start_runtime(decode_seconds=0.01) as rt:  # a chat completion holds its slot 10 ms
        rt.register(
            "team-a", "chat", model="Qwen/Qwen2.5-7B-Instruct", token=TOKEN, tls=issued("chat.team-a.svc")
        )
        rt.register(
            "team-a", "open", model="BAAI/bge-large-en-v1.5", token=None, tls=issued("open.team-a.svc")
        )
        rt.register(
            "team-b", "rank", model="BAAI/bge-reranker-v2-m3", token=None, tls=issued("rank.team-b.svc")
        )
        rt.register("team-b", "bare", model="BAAI/bge-reranker-v2-m3", token=None, tls=None)
        rt.register(
            "team-a",
            "guarded",
            model="Qwen/Qwen2.5-7B-Instruct",
            token=TOKEN,
            tls=issued("guarded.team-a.svc"),
            guarded=True,
        )
        yield rt


def request(
    rt: RunningRuntime,
    ca_file: Path,
    host: str,
    path: str = "/v1/models",
    *,
    token: str | None = None,
    json: Any = None,
) -> httpx.Response:
    """One request on a fresh connection to the stand-in's address, with ``host`` as SNI and Host."""
    ctx = ssl.create_default_context(cafile=str(ca_file))
    headers = {"Host": host}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    with httpx.Client(verify=ctx, trust_env=False) as client:
        method = "POST" if json is not None else "GET"
        return client.request(
            method, f"{rt.url}{path}", headers=headers, json=json, extensions={"sni_hostname": host}
        )


def peer_names(rt: RunningRuntime, ca_file: Path, host: str) -> list[str]:
    ctx = ssl.create_default_context(cafile=str(ca_file))
    addr, port = rt.address.rsplit(":", 1)
    with (
        socket.create_connection((addr, int(port))) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as tls,
    ):
        cert: dict[str, Any] = tls.getpeercert() or {}
    san: tuple[tuple[str, str], ...] = cert.get("subjectAltName", ())
    return [value for kind, value in san if kind == "DNS"]


def test_the_orders_issued_certificate_is_served_for_its_sni_name_and_verifies_against_the_platform_ca(
    runtime: RunningRuntime, ca: tuple[Path, Path]
) -> None:
    assert peer_names(runtime, ca[0], "chat.team-a.svc") == ["chat.team-a.svc"]
    assert peer_names(runtime, ca[0], "rank.team-b.svc") == ["rank.team-b.svc"]


@pytest.mark.parametrize(
    "host",
    ["bare.team-b.svc", "ghost.team-a.svc", "example.com"],
    ids=["an order not issued a certificate", "a host without an order", "a host of no order"],
)
def test_no_certificate_the_platform_did_not_issue_is_presented(
    runtime: RunningRuntime, ca: tuple[Path, Path], host: str
) -> None:
    """The stand-in mints nothing: without the order's issued certificate the handshake is refused,
    so a probe cannot pass before the order's Certificate is issued."""
    mark = len(runtime.handshakes())
    with pytest.raises(ssl.SSLError, match=r"UNRECOGNIZED_NAME|unrecognized name"):
        peer_names(runtime, ca[0], host)
    deadline = time.monotonic() + 10  # the stand-in records the refusal after its alert reached us
    while not (refused := [h for h in runtime.handshakes()[mark:] if h["host"] == host]):
        assert time.monotonic() < deadline, f"no handshake recorded for {host}"
        time.sleep(0.02)
    assert refused and not any(h["ok"] for h in refused)
    assert all(h["serial"] is None for h in refused)


def test_a_client_without_sni_gets_no_certificate(runtime: RunningRuntime, ca: tuple[Path, Path]) -> None:
    ctx = ssl.create_default_context(cafile=str(ca[0]))
    ctx.check_hostname = False
    addr, port = runtime.address.rsplit(":", 1)
    with socket.create_connection((addr, int(port))) as raw, pytest.raises(ssl.SSLError):
        ctx.wrap_socket(raw)


def test_a_client_trusting_another_ca_refuses_the_stand_in(runtime: RunningRuntime, tmp_path: Path) -> None:
    other, _ = make_ca("some other CA")
    (tmp_path / "other.crt").write_bytes(other)
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        request(runtime, tmp_path / "other.crt", "chat.team-a.svc", token=TOKEN)


def test_models_lists_the_orders_model_with_the_right_token(
    runtime: RunningRuntime, ca: tuple[Path, Path]
) -> None:
    resp = request(runtime, ca[0], "chat.team-a.svc", token=TOKEN)
    assert resp.status_code == 200
    assert [m["id"] for m in resp.json()["data"]] == ["Qwen/Qwen2.5-7B-Instruct"]


@pytest.mark.parametrize(
    "token", [None, "wrong", TOKEN + "x"], ids=["no token", "a wrong token", "a longer token"]
)
def test_an_order_with_a_token_refuses_requests_without_it(
    runtime: RunningRuntime, ca: tuple[Path, Path], token: str | None
) -> None:
    assert request(runtime, ca[0], "chat.team-a.svc", token=token).status_code == 401


@pytest.mark.parametrize("path", ["/health", "/invocations", "/tokenize", "/metrics"])
def test_without_the_guard_the_token_is_checked_only_where_vllm_checks_it(
    runtime: RunningRuntime, ca: tuple[Path, Path], path: str
) -> None:
    """Real vLLM checks the key only under /v1, /v2, /inference and /cohere: the stand-in is never
    stricter (these paths answer 200 or 404 there, never 401)."""
    assert request(runtime, ca[0], "chat.team-a.svc", path).status_code != 401
    assert request(runtime, ca[0], "chat.team-a.svc", "/v2/rerank", json={}).status_code == 401


@pytest.mark.parametrize("path", ["/invocations", "/tokenize", "/metrics", "/v1/models", "/health/x"])
def test_with_the_guard_every_path_but_get_health_needs_the_token(
    runtime: RunningRuntime, ca: tuple[Path, Path], path: str
) -> None:
    assert request(runtime, ca[0], "guarded.team-a.svc", path).status_code == 401
    assert request(runtime, ca[0], "guarded.team-a.svc", path, token=TOKEN).status_code != 401
    assert request(runtime, ca[0], "guarded.team-a.svc", "/health").status_code == 200


def test_the_path_rule() -> None:
    assert needs_token("POST", "/v1/chat/completions", guarded=False)
    assert needs_token("GET", "/cohere/v2/rerank", guarded=False)
    assert not needs_token("OPTIONS", "/v1/models", guarded=False)
    assert not needs_token("POST", "/invocations", guarded=False)
    assert needs_token("POST", "/invocations", guarded=True)
    assert needs_token("POST", "/health", guarded=True)
    assert not needs_token("OPTIONS", "/invocations", guarded=True)
    assert not needs_token("GET", "/health", guarded=True)
    assert is_guarded(["--port", "8000", "--middleware", "inference_token_guard.TokenGuard"])
    assert is_guarded(["--middleware=inference_token_guard.TokenGuard"])
    assert not is_guarded(["--middleware", "other.Thing"])
    assert not is_guarded(["--middleware"])


def test_an_order_without_a_token_secret_needs_no_token(
    runtime: RunningRuntime, ca: tuple[Path, Path]
) -> None:
    resp = request(runtime, ca[0], "open.team-a.svc")
    assert resp.status_code == 200
    assert resp.json()["data"][0]["id"] == "BAAI/bge-large-en-v1.5"


def test_a_connection_set_up_for_one_host_is_not_answered_for_another(
    runtime: RunningRuntime, ca: tuple[Path, Path]
) -> None:
    ctx = ssl.create_default_context(cafile=str(ca[0]))
    with httpx.Client(verify=ctx, trust_env=False) as client:
        first = client.get(
            f"{runtime.url}/v1/models",
            headers={"Host": "open.team-a.svc"},
            extensions={"sni_hostname": "open.team-a.svc"},
        )
        second = client.get(
            f"{runtime.url}/v1/models",
            headers={"Host": "rank.team-b.svc"},
            extensions={"sni_hostname": "rank.team-b.svc"},
        )
    assert (first.status_code, second.status_code) == (200, 421)


def test_an_injected_fault_fails_one_order_until_cleared(
    runtime: RunningRuntime, ca: tuple[Path, Path]
) -> None:
    with httpx.Client(base_url=runtime.control_url) as control:
        assert control.put("/_standin/faults/team-a/open", json={"status": 503}).status_code == 200
        assert request(runtime, ca[0], "open.team-a.svc").status_code == 503
        assert request(runtime, ca[0], "rank.team-b.svc").status_code == 200
        assert control.delete("/_standin/faults/team-a/open").status_code == 200
    assert request(runtime, ca[0], "open.team-a.svc").status_code == 200


def test_the_controllers_probe_reaches_orders_through_the_address_override(
    runtime: RunningRuntime, ca: tuple[Path, Path]
) -> None:
    prober = Prober(ca_file=str(ca[0]), address_override=runtime.address, timeout=10)
    try:
        ok = prober.probe("https://chat.team-a.svc", TOKEN)
        assert ok.ok, ok.detail
        runtime.set_fault("team-a", "chat", 503)
        failed = prober.probe("https://chat.team-a.svc", TOKEN)
        runtime.clear_fault("team-a", "chat")
        refused = prober.probe("https://chat.team-a.svc", "not-the-token")
    finally:
        prober.close()
    assert (failed.ok, failed.detail) == (False, "GET https://chat.team-a.svc/v1/models answered HTTP 503.")
    assert (refused.ok, refused.detail) == (False, "GET https://chat.team-a.svc/v1/models answered HTTP 401.")


def test_chat_embeddings_and_rerank_answer_in_the_openai_shape(
    runtime: RunningRuntime, ca: tuple[Path, Path]
) -> None:
    chat = request(
        runtime,
        ca[0],
        "chat.team-a.svc",
        "/v1/chat/completions",
        token=TOKEN,
        json={"model": "Qwen/Qwen2.5-7B-Instruct", "messages": [{"role": "user", "content": "hello"}]},
    ).json()
    assert chat["choices"][0]["message"]["role"] == "assistant"
    assert "hello" in chat["choices"][0]["message"]["content"]
    emb = request(runtime, ca[0], "open.team-a.svc", "/v1/embeddings", json={"input": ["a", "b"]}).json()
    assert [d["index"] for d in emb["data"]] == [0, 1]
    assert emb["data"][0]["embedding"] != emb["data"][1]["embedding"]
    ranked = request(
        runtime,
        ca[0],
        "rank.team-b.svc",
        "/v1/rerank",
        json={"query": "green tea", "documents": ["black coffee", "green tea leaves"]},
    ).json()
    assert [r["index"] for r in ranked["results"]] == [1, 0]


def test_the_command_line_prints_both_urls_first(ca: tuple[Path, Path]) -> None:
    cmd = [
        sys.executable,
        "-m",
        "standins.runtime",
        "--port",
        "0",
    ]
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env={"PATH": "/usr/bin"}) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            prefix, _, control = line.partition(" (control ")
            assert prefix.startswith("runtime stand-in listening on https://127.0.0.1:")
            assert control.startswith("http://127.0.0.1:")
            resp = httpx.put(control.rstrip(")") + "/_standin/faults/team-a/chat", json={"status": 500})
            assert resp.status_code == 200
        finally:
            proc.terminate()
            proc.wait(timeout=10)
