"""The token guard: an ASGI middleware that vLLM loads with ``--middleware inference_token_guard.TokenGuard``.

vLLM checks ``VLLM_API_KEY`` only on paths under ``/v1``, ``/v2``, ``/inference`` and ``/cohere``
(vllm/entrypoints/serve/middleware/authenticate.py): ``/invocations``, ``/tokenize``,
``/detokenize``, ``/pooling``, ``/classify``, ``/score``, ``/rerank`` and ``/metrics`` answer
without it. This guard requires ``Authorization: Bearer <VLLM_API_KEY>`` on every request but
``GET /health`` (the kubelet's probes carry no token) and ``OPTIONS`` (a browser's CORS preflight
never carries credentials, and vLLM's own check lets it through too; it reaches CORS or a 405, never
a model), on HTTP and WebSocket alike.

- **The scrape credential**: Prometheus reads ``GET /metrics`` (the autoscaler's signal) without
  the order's token. When ``INFERENCE_SCRAPE_TOKEN_SHA256`` holds the hex SHA-256 of the module's
  scrape token (module setting ``metricsScrapeTokenSHA256``), a Bearer token with that digest passes
  on ``GET /metrics`` and nowhere else. The pod carries only the digest: a tenant who reads the pod
  spec cannot turn it back into the token. Empty or malformed: no scrape credential.
- **Fail-closed**: with no key in the environment every request but those two is refused (and
  ``GET /metrics`` with the scrape token).
- **Constant time**: the presented token and the key are compared as SHA-256 digests with
  ``hmac.compare_digest``, so neither their contents nor their lengths show in the timing; on
  ``GET /metrics`` both digests are always compared, so which one matched does not show either.
- **Outermost**: vLLM adds ``--middleware`` classes after its own, and Starlette runs the last
  added first, so the guard answers before CORS, vLLM's own check and every route.

This file is shipped as source text: the ``token-guard`` init container writes it into the pod's
``home`` volume as ``inference_token_guard.py`` (``controller.render.pod``), and the runtime finds
it through ``PYTHONPATH``. It therefore imports nothing but the standard library, and nothing in the
controller imports it as a module.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

KEY_ENV = "VLLM_API_KEY"
SCRAPE_DIGEST_ENV = "INFERENCE_SCRAPE_TOKEN_SHA256"
OPEN = (("GET", "/health"),)
"""What answers without the token: the kubelet's probes (``controller.render.timing``); and any
``OPTIONS`` (CORS preflight)."""
SCRAPED = (("GET", "/metrics"),)
"""What the scrape token opens, besides the order's token."""

_UNAUTHORIZED = json.dumps({"error": "Unauthorized"}).encode()
_WS_POLICY_VIOLATION = 1008


def allowed(
    method: str,
    path: str,
    authorization: str | None,
    key_digest: bytes | None,
    scrape_digest: bytes | None = None,
) -> bool:
    """Whether a request passes: an open route, a Bearer token equal to the key (none: refuse), or on
    ``GET /metrics`` a Bearer token whose SHA-256 is ``scrape_digest`` (none: no scrape credential)."""
    if (method, path) in OPEN or method == "OPTIONS":
        return True
    if authorization is None:
        return False
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    presented = hashlib.sha256(token.encode()).digest()
    as_key = key_digest is not None and hmac.compare_digest(presented, key_digest)
    if (method, path) not in SCRAPED:
        return as_key
    as_scraper = scrape_digest is not None and hmac.compare_digest(presented, scrape_digest)
    return as_key or as_scraper


def scrape_digest_of(hex_digest: str) -> bytes | None:
    """The scrape token's digest from its hex form (``INFERENCE_SCRAPE_TOKEN_SHA256``); None when it
    is empty or not 64 hex digits (no scrape credential: fail-closed)."""
    text = hex_digest.strip()
    if len(text) != 64:
        return None
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None


class TokenGuard:
    """``app.add_middleware(TokenGuard)``: refuses (401) every request without the key but ``GET /health``
    (and ``GET /metrics`` with the scrape token)."""

    def __init__(self, app: App, key: str | None = None, scrape_sha256: str | None = None) -> None:
        self.app = app
        key = os.environ.get(KEY_ENV, "") if key is None else key
        self.key_digest = hashlib.sha256(key.encode()).digest() if key else None
        scrape = os.environ.get(SCRAPE_DIGEST_ENV, "") if scrape_sha256 is None else scrape_sha256
        self.scrape_digest = scrape_digest_of(scrape)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        method = "WEBSOCKET" if kind == "websocket" else str(scope.get("method", ""))
        path = str(scope.get("path", ""))
        root = str(scope.get("root_path", ""))
        if root and path.startswith(root):
            path = path[len(root) :] or "/"
        authorization = None
        for name, value in scope.get("headers") or ():
            if bytes(name).lower() == b"authorization":
                authorization = bytes(value).decode("latin-1")
                break
        if allowed(method, path, authorization, self.key_digest, self.scrape_digest):
            await self.app(scope, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": _WS_POLICY_VIOLATION})
        else:
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(_UNAUTHORIZED)).encode()),
                        (b"www-authenticate", b"Bearer"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": _UNAUTHORIZED})
