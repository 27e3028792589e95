"""The token guard: an ASGI middleware that vLLM loads with ``--middleware inference_token_guard.TokenGuard``.

vLLM checks ``VLLM_API_KEY`` only on paths under ``/v1``, ``/v2``, ``/inference`` and ``/cohere``
(vllm/entrypoints/serve/middleware/authenticate.py): ``/invocations``, ``/tokenize``,
``/detokenize``, ``/pooling``, ``/classify``, ``/score``, ``/rerank`` and ``/metrics`` answer
without it. This guard requires ``Authorization: Bearer <VLLM_API_KEY>`` on every request but
``GET /health`` (the kubelet's probes carry no token) and ``OPTIONS`` (a browser's CORS preflight
never carries credentials, and vLLM's own check lets it through too; it reaches CORS or a 405, never
a model), on HTTP and WebSocket alike.

- **Fail-closed**: with no key in the environment every request but those two is refused.
- **Constant time**: the presented token and the key are compared as SHA-256 digests with
  ``hmac.compare_digest``, so neither their contents nor their lengths show in the timing.
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
OPEN = (("GET", "/health"),)
"""What answers without the token: the kubelet's probes (``controller.render.timing``); and any
``OPTIONS`` (CORS preflight)."""

_UNAUTHORIZED = json.dumps({"error": "Unauthorized"}).encode()
_WS_POLICY_VIOLATION = 1008


def allowed(method: str, path: str, authorization: str | None, key_digest: bytes | None) -> bool:
    """Whether a request passes: an open route, or a Bearer token equal to the key (none: refuse)."""
    if (method, path) in OPEN or method == "OPTIONS":
        return True
    if key_digest is None or authorization is None:
        return False
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(hashlib.sha256(token.encode()).digest(), key_digest)


class TokenGuard:
    """``app.add_middleware(TokenGuard)``: refuses (401) every request without the key but ``GET /health``."""

    def __init__(self, app: App, key: str | None = None) -> None:
        self.app = app
        key = os.environ.get(KEY_ENV, "") if key is None else key
        self.key_digest = hashlib.sha256(key.encode()).digest() if key else None

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
        if allowed(method, path, authorization, self.key_digest):
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
