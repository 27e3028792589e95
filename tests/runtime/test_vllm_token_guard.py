"""The token guard on the real vLLM 0.32 (CPU build): a token order's runtime, launched exactly as
rendered (args, env, the guard written by its init container), refuses every route but ``GET
/health`` without the token, and serves a real chat completion with it.

vLLM alone checks the key only under /v1, /v2, /inference and /cohere (issue 20: /invocations and
/tokenize answered 200 without it). Slow: one vLLM start (80-230 s on 2 cores, ~3.8 GiB RSS).
The vLLM environment comes from ``vllm_env`` (conftest.py), the tiny model from the cache, built
with that environment's python when missing (``python -m devtools.tiny_models``, ~30 s)."""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controller import render
from controller.model_facts.facts import ModelFacts
from controller.planner.vllm import VllmLaunch, vllm_args
from controller.render import pod as pod_render
from devtools.cluster.components.vllm_cpu import VllmEnv
from devtools.tiny_models import CHAT, is_built, model_dir
from shared import names
from tests.runtime import vllm_server
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.test_render import SETTINGS, Plan

SERVED = CHAT.repo_id
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_model(vllm_env: VllmEnv) -> Path:
    """The tiny chat model, built into the cache first when it is not there."""
    if not is_built():
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([str(vllm_env.python), "-m", "devtools.tiny_models"], check=True, env=env, timeout=600)
    return model_dir(CHAT)


def rendered_pod() -> dict[str, Any]:
    """The Deployment's pod of a token order for tiny-llama-chat, with the planner's vLLM args."""
    facts = ModelFacts(source="HuggingFace", name=SERVED, parameter_count=1_700_000, torch_dtype="bfloat16")
    launch = VllmLaunch(
        facts=facts,
        endpoint_type="Chat",
        served_model_name=SERVED,
        tensor_parallel_size=1,
        max_model_len=2048,
        gpu_memory_utilization=0.9,
        quantization="none",
        compute_capability=None,
    )
    plan = Plan(image="vllm/vllm-openai:v0.32.0", args=vllm_args(launch))
    klass = make_class()
    assert render.requires_token(klass.spec)
    dep = render.deployment(make_order(), plan, klass.spec, SETTINGS, revision="abc")
    pod: dict[str, Any] = dep["spec"]["template"]["spec"]
    return pod


@pytest.fixture(scope="module")
def token() -> str:
    return secrets.token_urlsafe(32)


@pytest.fixture(scope="module")
def pod() -> dict[str, Any]:
    return rendered_pod()


@pytest.fixture(scope="module")
def server(
    vllm_env: VllmEnv,
    tiny_model: Path,
    pod: dict[str, Any],
    token: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[vllm_server.VllmServer]:
    auth = (names.auth_secret(make_order().metadata.name), names.AUTH_TOKEN_KEY)
    with vllm_server.running(
        vllm_env,
        pod,
        model_dir=tiny_model,
        workdir=tmp_path_factory.mktemp("vllm"),
        secrets={auth: token},
        start_timeout=600,
    ) as s:
        print(
            f"\nvLLM {vllm_env.version} started in {s.started_seconds:.0f} s, RSS {s.rss_bytes() / 2**30:.2f} GiB"
        )
        yield s


@pytest.fixture(scope="module")
def client(server: vllm_server.VllmServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, trust_env=False, timeout=60) as c:
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


def test_the_launch_is_the_rendered_one(pod: dict[str, Any], server: vllm_server.VllmServer) -> None:
    (runtime,) = pod["containers"]
    assert runtime["args"][-2:] == ["--middleware", "inference_token_guard.TokenGuard"]
    i = server.argv.index("--middleware")
    assert server.argv[i + 1] == "inference_token_guard.TokenGuard"
    guard = Path(server.env["PYTHONPATH"]) / "inference_token_guard.py"
    assert guard.read_text() == pod_render.token_guard_program()
    assert server.env["VLLM_API_KEY"] and server.env["PYTHONPATH"].endswith("/home/.token-guard")


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


def test_a_real_chat_completion(client: httpx.Client, token: str, server: vllm_server.VllmServer) -> None:
    began = time.monotonic()
    resp = client.post("/v1/chat/completions", json=CHAT_BODY, headers={"Authorization": f"Bearer {token}"})
    took = time.monotonic() - began
    assert resp.status_code == 200, resp.text
    doc = resp.json()
    assert doc["model"] == SERVED
    assert isinstance(doc["choices"][0]["message"]["content"], str)
    assert 0 < doc["usage"]["completion_tokens"] <= 8
    assert doc["usage"]["prompt_tokens"] > 0
    print(f"\nchat completion in {took:.2f} s; vLLM RSS {server.rss_bytes() / 2**30:.2f} GiB")
