"""The ASGI app: HTTP in front of the pure handlers, plus health and metrics.

``create_app()`` is what ``python -m webhook`` serves. The admission paths sit on every write of our
kinds, so they are answered by a plain ASGI function in front of the FastAPI app (FastAPI's routing,
dependency solving and middleware cost more than the decision itself); FastAPI serves the rest:
/healthz, /readyz, /metrics, and the 404/405 answers.

An admission POST reads the body (at most 3 MiB), parses the AdmissionReview (HTTP 400 with a
reason when it is not one), calls ``handlers.handle`` and answers 200 with the review response.
Nothing here answers 500.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from fastapi import FastAPI
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from webhook.handlers import ROUTES, Route, handle
from webhook.metrics import WebhookMetrics
from webhook.review import MAX_BODY_BYTES, MalformedReviewError, parse_review, refuse_internal

log = logging.getLogger("webhook")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON_HEADERS = [(b"content-type", b"application/json")]


class ClientGoneError(Exception):
    """The client disconnected before sending the whole body."""


class WebhookApp:
    """POSTs to the admission paths go straight to the handlers; everything else to ``fallback``."""

    def __init__(
        self, *, metrics: WebhookMetrics, fallback: FastAPI, routes: tuple[Route, ...] = ROUTES
    ) -> None:
        self._routes = {r.path: r for r in routes}
        self._metrics = metrics
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self._routes.get(scope.get("path", "")) if scope["type"] == "http" else None
        if route is None or scope["method"] != "POST":
            await self.fallback(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            status, body, outcome = await self._admit(route, scope, receive)
        except ClientGoneError:
            return
        self._metrics.observe(route.path, outcome, time.perf_counter() - started)
        headers = [*_JSON_HEADERS, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _admit(self, route: Route, scope: Scope, receive: Receive) -> tuple[int, bytes, str]:
        review: Mapping[str, Any] | None = None
        try:
            review = parse_review(await _read_body(scope, receive))
            answer = handle(route, review)
            outcome = outcome_of(answer)
        except MalformedReviewError as e:
            return 400, _bad_request(str(e)), "malformed"
        except ClientGoneError:
            raise
        except Exception as e:  # handle() never raises; this guards the HTTP edge itself
            log.exception("admission request on %s failed", route.path)
            if review is None:
                return 400, _bad_request(f"the request could not be read ({type(e).__name__})"), "malformed"
            answer, outcome = refuse_internal(review, e), "internal_error"
        return 200, json.dumps(answer, separators=(",", ":")).encode(), outcome


def create_app(
    *, registry: CollectorRegistry | None = None, ready: Callable[[], bool] = lambda: True
) -> WebhookApp:
    """The webhook app. ``ready`` answers /readyz; metrics go to ``registry`` (a new one by default)."""
    exported = registry if registry is not None else CollectorRegistry()
    metrics = WebhookMetrics(registry=exported, paths=[r.path for r in ROUTES])
    api = FastAPI(title="inference admission webhook", openapi_url=None, docs_url=None, redoc_url=None)

    @api.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        return Response(b"ok", media_type="text/plain")

    @api.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        if ready():
            return Response(b"ok", media_type="text/plain")
        return Response(b"not ready", status_code=503, media_type="text/plain")

    @api.get("/metrics", include_in_schema=False)
    async def metrics_endpoint() -> Response:
        return Response(generate_latest(exported), media_type=CONTENT_TYPE_LATEST)

    for route in ROUTES:  # GET and friends on an admission path: FastAPI's 405, never a 500

        @api.post(route.path, include_in_schema=False)
        async def unreachable() -> Response:  # pragma: no cover - WebhookApp answers every POST here
            return Response(status_code=405)

    return WebhookApp(metrics=metrics, fallback=api)


async def _read_body(scope: Scope, receive: Receive) -> bytes:
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > MAX_BODY_BYTES:
            raise MalformedReviewError(
                f"the body is {int(value)} bytes; at most {MAX_BODY_BYTES} (3 MiB) are accepted"
            )
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGoneError
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise MalformedReviewError(f"the body is over {MAX_BODY_BYTES} bytes (3 MiB), the most accepted")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def outcome_of(answer: Mapping[str, Any]) -> str:
    """The metrics outcome of a review response (the status codes ``review`` uses tell them apart)."""
    response = answer["response"]
    if response["allowed"]:
        return "patched" if "patch" in response else "allowed"
    code = response.get("status", {}).get("code")
    return {400: "refused_request", 403: "internal_error"}.get(code, "denied")


def _bad_request(message: str) -> bytes:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": 400,
        "reason": "BadRequest",
        "message": message,
    }
    return json.dumps(status).encode()
