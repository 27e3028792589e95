"""The token guard (controller/render/token_guard.py) and how a token order's pod carries it.

The guard runs inside vLLM; here it is driven as a plain ASGI app, both imported from the package and
as the file the ``token-guard`` init container writes (running that container's command)."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from controller.config.settings import Settings
from controller.render import pod as pod_render
from controller.render import token_guard
from controller.render.token_guard import TokenGuard, allowed, scrape_digest_of
from shared import names
from tests.unit.controller.test_render import SETTINGS
from tests.unit.controller.test_render_pod import container, pod_of

KEY = "s3cret-token"


class Inner:
    """The app behind the guard: answers 200 and counts calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})


def call(
    guard: Any, method: str, path: str, authorization: str | None = None, **scope: Any
) -> list[dict[str, Any]]:
    headers = [(b"host", b"x")] + ([(b"authorization", authorization.encode())] if authorization else [])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    full = {"type": "http", "method": method, "path": path, "headers": headers, **scope}
    asyncio.run(guard(full, receive, send))
    return sent


def status(guard: Any, method: str, path: str, authorization: str | None = None, **scope: Any) -> int:
    return int(call(guard, method, path, authorization, **scope)[0].get("status", 0))


PATHS = [
    "/invocations",
    "/tokenize",
    "/detokenize",
    "/metrics",
    "/v1/models",
    "/v1/chat/completions",
    "/pooling",
    "/score",
    "/rerank",
    "/classify",
    "/version",
    "/",
]


@pytest.mark.parametrize("path", PATHS)
def test_every_route_but_health_needs_the_token(path: str) -> None:
    guard = TokenGuard(Inner(), key=KEY)
    assert status(guard, "POST", path) == 401
    assert status(guard, "GET", path, "Bearer wrong") == 401
    assert status(guard, "GET", path, f"Basic {KEY}") == 401
    assert status(guard, "POST", path, f"Bearer {KEY}") == 200
    assert status(guard, "GET", path, f"bearer {KEY}") == 200


def test_get_health_is_open_and_nothing_else_about_it_is() -> None:
    guard = TokenGuard(Inner(), key=KEY)
    assert status(guard, "GET", "/health") == 200
    assert status(guard, "POST", "/health") == 401
    assert status(guard, "GET", "/health/x") == 401
    assert status(guard, "OPTIONS", "/v1/models") == 200  # CORS preflight carries no credentials; as vLLM


def test_fail_closed_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    guard = TokenGuard(Inner())
    assert guard.key_digest is None
    assert status(guard, "GET", "/health") == 200
    assert status(guard, "GET", "/v1/models", "Bearer ") == 401
    assert status(guard, "GET", "/v1/models", "Bearer anything") == 401
    monkeypatch.setenv("VLLM_API_KEY", "")
    assert status(TokenGuard(Inner()), "GET", "/metrics", "Bearer ") == 401


def test_the_key_comes_from_vllm_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    guard = TokenGuard(Inner())
    assert status(guard, "GET", "/metrics", f"Bearer {KEY}") == 200
    assert status(guard, "GET", "/metrics", f"Bearer {KEY}x") == 401


def test_a_refusal_is_a_401_json_and_never_reaches_the_app() -> None:
    inner = Inner()
    start, body = call(TokenGuard(inner, key=KEY), "POST", "/invocations")
    assert start["status"] == 401
    assert (b"www-authenticate", b"Bearer") in start["headers"]
    assert body["body"] == b'{"error": "Unauthorized"}'
    assert inner.calls == 0


def test_root_path_is_taken_off_as_vllm_does() -> None:
    guard = TokenGuard(Inner(), key=KEY)
    assert status(guard, "GET", "/api/health", root_path="/api") == 200
    assert status(guard, "GET", "/api/tokenize", root_path="/api") == 401


def test_websockets_are_closed_without_the_token_and_lifespan_passes() -> None:
    inner = Inner()
    guard = TokenGuard(inner, key=KEY)
    sent = call(guard, "GET", "/v1/realtime", type="websocket")
    assert sent == [{"type": "websocket.close", "code": 1008}]
    call(guard, "GET", "/v1/realtime", f"Bearer {KEY}", type="websocket")
    call(guard, "", "", type="lifespan")
    assert inner.calls == 2


def test_allowed_is_pure() -> None:
    import hashlib

    digest = hashlib.sha256(KEY.encode()).digest()
    assert allowed("GET", "/health", None, None)
    assert not allowed("GET", "/tokenize", f"Bearer {KEY}", None)
    assert allowed("GET", "/tokenize", f"Bearer {KEY}", digest)
    assert not allowed("GET", "/tokenize", f"Bearer {KEY[:-1]}", digest)


# ---------------------------------------------------------------- the pod


def test_a_token_order_writes_the_guard_and_loads_it_as_middleware() -> None:
    pod = pod_of()
    guard_init = container(pod, pod_render.TOKEN_GUARD_CONTAINER)
    assert [c["name"] for c in pod["initContainers"]] == ["token-guard", names.FETCHER_CONTAINER]
    assert guard_init["volumeMounts"] == [{"name": "home", "mountPath": pod_render.HOME_PATH}]
    runtime = container(pod, "runtime")
    env = {e["name"]: e.get("value") for e in runtime["env"]}
    assert env["PYTHONPATH"] == "/home/inference/.token-guard"
    assert env["HOME"] == "/home/inference"
    i = runtime["args"].index("--middleware")
    assert runtime["args"][i + 1] == "inference_token_guard.TokenGuard"
    assert {"name": "home", "mountPath": "/home/inference"} in runtime["volumeMounts"]


def test_an_order_without_a_token_has_no_guard() -> None:
    pod = pod_of(exposure={"type": "ClusterLocal", "authentication": "None"})
    assert [c["name"] for c in pod["initContainers"]] == [names.FETCHER_CONTAINER]
    runtime = container(pod, "runtime")
    assert "--middleware" not in runtime["args"]
    assert "PYTHONPATH" not in {e["name"] for e in runtime["env"]}


def _run_init_container(init: dict[str, Any], home: Path) -> Path:
    """Run the rendered command, the home volume at ``home`` instead of /home/inference."""
    args = [a.replace(pod_render.HOME_PATH, str(home)) for a in init["args"]]
    assert init["command"][0] == "python3"
    subprocess.run([sys.executable, *init["command"][1:], *args], check=True, timeout=30)
    return home / ".token-guard" / "inference_token_guard.py"


def test_the_written_file_is_the_guard_and_imports_by_its_dotted_path(tmp_path: Path) -> None:
    written = _run_init_container(container(pod_of(), "token-guard"), tmp_path)
    assert written.read_text() == Path(pod_render.__file__).with_name("token_guard.py").read_text()
    spec = importlib.util.spec_from_file_location("inference_token_guard", written)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    guard = module.TokenGuard(Inner(), key=KEY)
    assert status(guard, "POST", "/invocations") == 401
    assert status(guard, "POST", "/invocations", f"Bearer {KEY}") == 200
    assert status(guard, "GET", "/health") == 200


def test_the_guard_imports_only_the_standard_library() -> None:
    source = Path(pod_render.__file__).with_name("token_guard.py").read_text()
    imported = {
        line.split()[1].split(".")[0] for line in source.splitlines() if line.startswith(("import ", "from "))
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


# ---------------------------------------------------------------- the scrape credential

SCRAPE = "prometheus-scrape-token"
SCRAPE_HEX = hashlib.sha256(SCRAPE.encode()).hexdigest()
KEY_DIGEST = hashlib.sha256(KEY.encode()).digest()
SCRAPE_DIGEST = bytes.fromhex(SCRAPE_HEX)


def test_the_scrape_token_opens_get_metrics_and_nothing_else() -> None:
    assert allowed("GET", "/metrics", f"Bearer {SCRAPE}", KEY_DIGEST, SCRAPE_DIGEST)
    assert allowed("GET", "/metrics", f"bearer {SCRAPE}", KEY_DIGEST, SCRAPE_DIGEST)
    for method, path in [
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/completions"),
        ("POST", "/metrics"),
        ("GET", "/metrics/"),
        ("GET", "/metricsx"),
        ("GET", "/tokenize"),
        ("WEBSOCKET", "/metrics"),
    ]:
        assert not allowed(method, path, f"Bearer {SCRAPE}", KEY_DIGEST, SCRAPE_DIGEST), (method, path)


def test_the_orders_token_still_opens_metrics_and_a_wrong_token_opens_nothing() -> None:
    assert allowed("GET", "/metrics", f"Bearer {KEY}", KEY_DIGEST, SCRAPE_DIGEST)
    assert allowed("GET", "/v1/models", f"Bearer {KEY}", KEY_DIGEST, SCRAPE_DIGEST)
    for token in [SCRAPE[:-1], SCRAPE + "x", SCRAPE_HEX, "", KEY[:-1]]:
        assert not allowed("GET", "/metrics", f"Bearer {token}", KEY_DIGEST, SCRAPE_DIGEST), token
    assert not allowed("GET", "/metrics", f"Basic {SCRAPE}", KEY_DIGEST, SCRAPE_DIGEST)
    assert not allowed("GET", "/metrics", None, KEY_DIGEST, SCRAPE_DIGEST)


def test_no_scrape_digest_is_no_scrape_credential() -> None:
    assert not allowed("GET", "/metrics", f"Bearer {SCRAPE}", KEY_DIGEST, None)
    assert not allowed("GET", "/metrics", f"Bearer {SCRAPE}", KEY_DIGEST)
    assert not allowed("GET", "/metrics", "Bearer ", KEY_DIGEST, hashlib.sha256(b"").digest())


def test_the_scrape_token_works_even_when_the_key_is_missing() -> None:
    """Fail-closed for the API; /metrics with the scrape token reveals no more than the metrics."""
    assert allowed("GET", "/metrics", f"Bearer {SCRAPE}", None, SCRAPE_DIGEST)
    assert not allowed("GET", "/v1/models", f"Bearer {SCRAPE}", None, SCRAPE_DIGEST)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (SCRAPE_HEX, True),
        (SCRAPE_HEX.upper(), True),
        (f" {SCRAPE_HEX}\n", True),
        ("", False),
        (SCRAPE_HEX[:-1], False),
        (SCRAPE_HEX + "0", False),
        (SCRAPE_HEX[:-2], False),
        (SCRAPE_HEX + "00", False),
        ("z" * 64, False),
    ],
)
def test_the_scrape_digest_is_64_hex_digits_or_nothing(text: str, ok: bool) -> None:
    assert (scrape_digest_of(text) == SCRAPE_DIGEST) is ok
    if not ok:
        assert scrape_digest_of(text) is None


def test_the_guard_reads_the_scrape_digest_from_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert token_guard.SCRAPE_DIGEST_ENV == names.SCRAPE_DIGEST_ENV
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv(names.SCRAPE_DIGEST_ENV, SCRAPE_HEX)
    guard = TokenGuard(Inner())
    assert status(guard, "GET", "/metrics", f"Bearer {SCRAPE}") == 200
    assert status(guard, "GET", "/v1/models", f"Bearer {SCRAPE}") == 401
    assert status(guard, "GET", "/metrics", f"Bearer {SCRAPE}x") == 401
    monkeypatch.delenv(names.SCRAPE_DIGEST_ENV)
    assert status(TokenGuard(Inner()), "GET", "/metrics", f"Bearer {SCRAPE}") == 401


def test_the_runtime_carries_the_scrape_digest_only_when_set_and_only_behind_the_guard() -> None:
    settings = SETTINGS.model_copy(update={"metrics_scrape_token_sha256": SCRAPE_HEX})
    env = {e["name"]: e.get("value") for e in container(pod_of(settings=settings), "runtime")["env"]}
    assert env[names.SCRAPE_DIGEST_ENV] == SCRAPE_HEX
    assert SCRAPE not in str(pod_of(settings=settings))
    unset = {e["name"] for e in container(pod_of(), "runtime")["env"]}
    assert names.SCRAPE_DIGEST_ENV not in unset
    open_pod = pod_of(settings=settings, exposure={"type": "ClusterLocal", "authentication": "None"})
    assert names.SCRAPE_DIGEST_ENV not in {e["name"] for e in container(open_pod, "runtime")["env"]}
    assert (
        isinstance(Settings().metrics_scrape_token_sha256, str) and not Settings().metrics_scrape_token_sha256
    )
