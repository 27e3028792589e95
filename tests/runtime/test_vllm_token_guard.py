"""The token guard on the real vLLM 0.32 (CPU build): a token order's runtime, run by the pod runner
exactly as rendered (args, env, the guard written by its init container, TLS with the order's
certificate), refuses every route but ``GET /health`` without the token, and serves a real chat
completion with it. Every request goes through TLS to the runner's address with the endpoint host
as SNI, as the probe and the demo's curl do.

vLLM alone checks the key only under /v1, /v2, /inference and /cohere (issue 20: /invocations and
/tokenize answered 200 without it). Slow: the vLLM start of the session's ``served`` pod
(conftest.py), shared with test_pod_runner.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controller.render import pod as pod_render
from tests.runtime.served_pod import SERVED, ServedPod


@pytest.fixture(scope="module")
def token(served: ServedPod) -> str:
    return served.token


@pytest.fixture(scope="module")
def pod(served: ServedPod) -> dict[str, Any]:
    return served.pod


@pytest.fixture(scope="module")
def client(served: ServedPod) -> Iterator[httpx.Client]:
    with served.client() as c:
        yield c


CHAT_BODY = {"model": SERVED, "messages": [{"role": "user", "content": "hello model"}], "max_tokens": 8}
ROUTES = [
    ("POST", "/invocations", CHAT_BODY),
    ("POST", "/tokenize", {"model": SERVED, "prompt": "hello world"}),
    ("GET", "/metrics", None),
    ("GET", "/v1/models", None),
    ("POST", "/v1/chat/completions", CHAT_BODY),
]
IDS = [path for _, path, _ in ROUTES]


def test_the_launch_is_the_rendered_one(pod: dict[str, Any], served: ServedPod) -> None:
    (runtime,) = pod["containers"]
    assert runtime["args"][-2:] == ["--middleware", "inference_token_guard.TokenGuard"]
    launch = served.runner.launches["runtime"]
    i = launch.argv.index("--middleware")
    assert launch.argv[i + 1] == "inference_token_guard.TokenGuard"
    assert launch.env["PYTHONPATH"] == f"{pod_render.HOME_PATH}/.token-guard"  # inside the pod's mounts
    home = served.runner.volumes["home"]  # the ``home`` volume, mounted at HOME_PATH
    guard = (
        home / Path(launch.env["PYTHONPATH"]).relative_to(pod_render.HOME_PATH) / "inference_token_guard.py"
    )
    assert guard.read_text() == pod_render.token_guard_program()
    assert launch.env["VLLM_API_KEY"] == served.token


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=IDS)
def test_without_the_token_every_route_answers_401(
    client: httpx.Client, method: str, path: str, body: Any
) -> None:
    resp = client.request(method, path, json=body)
    assert resp.status_code == 401
    assert resp.headers.get("www-authenticate") == "Bearer"  # the guard answered, not vLLM's own check
    bad = {"Authorization": "Bearer not-the-token"}
    assert client.request(method, path, json=body, headers=bad).status_code == 401


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=IDS)
def test_with_the_token_every_route_answers(
    client: httpx.Client, token: str, method: str, path: str, body: Any
) -> None:
    resp = client.request(method, path, json=body, headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 200, resp.text


def test_health_answers_without_the_token(client: httpx.Client) -> None:
    assert client.get("/health").status_code == 200
    assert client.post("/health").status_code == 401  # only GET /health is open


def test_models_is_vllms_own(client: httpx.Client, token: str) -> None:
    resp = client.get("/v1/models", headers={"Authorization": f"Bearer {token}"})
    (model,) = resp.json()["data"]
    assert (model["id"], model["owned_by"]) == (SERVED, "vllm")


def test_a_real_chat_completion(client: httpx.Client, token: str, served: ServedPod) -> None:
    began = time.monotonic()
    resp = client.post("/v1/chat/completions", json=CHAT_BODY, headers={"Authorization": f"Bearer {token}"})
    took = time.monotonic() - began
    assert resp.status_code == 200, resp.text
    doc = resp.json()
    assert doc["model"] == SERVED
    assert isinstance(doc["choices"][0]["message"]["content"], str)
    assert 0 < doc["usage"]["completion_tokens"] <= 8
    assert doc["usage"]["prompt_tokens"] > 0
    print(f"\nchat completion in {took:.2f} s; vLLM RSS {served.runner.rss_bytes('runtime') / 2**30:.2f} GiB")


def test_options_passes_the_guard_and_reaches_no_model(client: httpx.Client) -> None:
    """A CORS preflight never carries credentials: the guard lets OPTIONS through, as vLLM's own check
    does, and it reaches vLLM's CORS handling or a 405, never a model."""
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    for headers in (preflight, {}):
        resp = client.options("/v1/chat/completions", headers=headers)
        # vLLM 0.32 answers the preflight 400 "Disallowed CORS origin" (no --allowed-origins), the plain
        # OPTIONS 405: both past the guard, neither a model
        assert resp.status_code in (200, 204, 400, 405), (headers, resp.status_code, resp.text)
        assert resp.headers.get("www-authenticate") is None
        assert "choices" not in resp.text
