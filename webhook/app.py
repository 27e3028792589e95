"""The ASGI app: HTTP in front of the pure handlers, plus health and metrics.

``create_app()`` is what ``python -m webhook`` serves. Each admission path reads the body (at most
3 MiB), parses the AdmissionReview (HTTP 400 with a reason when it is not one), calls
``handlers.handle`` and answers 200 with the review response. Nothing here answers 500.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from webhook.handlers import ROUTES, Route, handle
from webhook.metrics import WebhookMetrics
from webhook.review import MAX_BODY_BYTES, MalformedReviewError, parse_review, refuse_internal

log = logging.getLogger("webhook")

_JSON = "application/json"


def create_app(
    *, registry: CollectorRegistry | None = None, ready: Callable[[], bool] = lambda: True
) -> FastAPI:
    """The webhook app. ``ready`` answers /readyz (the TLS edge passes "a certificate is loaded")."""
    exported = registry if registry is not None else CollectorRegistry()
    metrics = WebhookMetrics(registry=exported, paths=[r.path for r in ROUTES])
    app = FastAPI(title="inference admission webhook", openapi_url=None, docs_url=None, redoc_url=None)
    for route in ROUTES:
        app.add_api_route(route.path, _endpoint(route, metrics), methods=["POST"], include_in_schema=False)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        return Response(b"ok", media_type="text/plain")

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        if ready():
            return Response(b"ok", media_type="text/plain")
        return Response(b"not ready: no serving certificate loaded", status_code=503, media_type="text/plain")

    @app.get("/metrics", include_in_schema=False)
    async def metrics_endpoint() -> Response:
        return Response(generate_latest(exported), media_type=CONTENT_TYPE_LATEST)

    return app


def _endpoint(route: Route, metrics: WebhookMetrics) -> Callable[[Request], Any]:
    async def admit(request: Request) -> Response:
        started = time.perf_counter()
        review: Mapping[str, Any] | None = None
        try:
            review = parse_review(await _read_body(request))
            answer = handle(route, review)
            outcome = outcome_of(answer)
        except MalformedReviewError as e:
            metrics.observe(route.path, "malformed", time.perf_counter() - started)
            return _bad_request(str(e))
        except Exception as e:  # handle() never raises; this guards the HTTP edge itself
            log.exception("admission request on %s failed", route.path)
            if review is None:
                metrics.observe(route.path, "malformed", time.perf_counter() - started)
                return _bad_request(f"the request could not be read ({type(e).__name__})")
            answer, outcome = refuse_internal(review, e), "internal_error"
        body = json.dumps(answer, separators=(",", ":")).encode()
        metrics.observe(route.path, outcome, time.perf_counter() - started)
        return Response(body, media_type=_JSON)

    admit.__name__ = "admit_" + route.path.strip("/").replace("-", "_")
    return admit


async def _read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise MalformedReviewError(
            f"the body is {declared} bytes; at most {MAX_BODY_BYTES} (3 MiB) are accepted"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise MalformedReviewError(f"the body is over {MAX_BODY_BYTES} bytes (3 MiB), the most accepted")
        chunks.append(chunk)
    return b"".join(chunks)


def outcome_of(answer: Mapping[str, Any]) -> str:
    """The metrics outcome of a review response (the status codes ``review`` uses tell them apart)."""
    response = answer["response"]
    if response["allowed"]:
        return "patched" if "patch" in response else "allowed"
    code = response.get("status", {}).get("code")
    return {400: "refused_request", 403: "internal_error"}.get(code, "denied")


def _bad_request(message: str) -> Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": 400,
        "reason": "BadRequest",
        "message": message,
    }
    return Response(json.dumps(status).encode(), status_code=400, media_type=_JSON)
