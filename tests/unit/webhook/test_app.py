"""The HTTP edge: status codes, 400 reasons, health and metrics, through the ASGI app."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from testkit.webhook import make_class, make_order, make_review
from webhook.app import create_app


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def client(registry: CollectorRegistry) -> TestClient:
    return TestClient(create_app(registry=registry))


def post(client: TestClient, path: str, payload: Any) -> Any:
    return client.post(
        path, content=json.dumps(payload).encode(), headers={"content-type": "application/json"}
    )


def test_a_review_is_answered_with_200_and_the_uid(client: TestClient) -> None:
    res = post(client, "/validate-inferenceservice", make_review(make_order(), uid="u-9"))
    assert res.status_code == 200
    assert res.json()["response"] == {"uid": "u-9", "allowed": True}


def test_a_refusal_is_still_http_200(client: TestClient) -> None:
    res = post(
        client, "/validate-inferenceserviceclass", make_review(make_class(spec__scaling={"minReplicas": -1}))
    )
    assert res.status_code == 200
    assert res.json()["response"]["allowed"] is False


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param(b"{", "the body is not JSON", id="broken JSON"),
        pytest.param(
            json.dumps({"apiVersion": "v1", "kind": "AdmissionReview", "request": {"uid": "x"}}).encode(),
            "`apiVersion` must be",
            id="wrong apiVersion",
        ),
        pytest.param(
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "Review"}).encode(),
            "`kind` must be",
            id="wrong kind",
        ),
        pytest.param(
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
            "`request` must be an object",
            id="no request",
        ),
        pytest.param(b"x" * (3 * 1024 * 1024 + 1), "3 MiB", id="more than 3 MiB"),
    ],
)
def test_a_malformed_body_gets_http_400_with_a_reason(
    client: TestClient, content: bytes, reason: str
) -> None:
    res = client.post("/mutate-inferenceservice", content=content)
    assert res.status_code == 400
    assert res.json()["reason"] == "BadRequest"
    assert reason in res.json()["message"]


def test_health_and_readiness_answer(client: TestClient) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200


def test_readiness_follows_the_ready_check(registry: CollectorRegistry) -> None:
    client = TestClient(create_app(registry=registry, ready=lambda: False))
    assert client.get("/readyz").status_code == 503


def test_metrics_count_decisions_by_outcome_and_time_requests(
    client: TestClient, registry: CollectorRegistry
) -> None:
    post(client, "/mutate-inferenceservice", make_review(make_order(spec__runtime={})))
    post(client, "/validate-inferenceservice", make_review(make_order(spec__model__src="S3")))
    post(client, "/validate-inferenceservice", make_review(make_order()))
    client.post("/validate-inferenceservice", content=b"{")
    text = client.get("/metrics").text

    def sample(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert (
        sample("inference_webhook_decisions_total", path="/mutate-inferenceservice", outcome="patched") == 1
    )
    assert (
        sample("inference_webhook_decisions_total", path="/validate-inferenceservice", outcome="denied") == 1
    )
    assert (
        sample("inference_webhook_decisions_total", path="/validate-inferenceservice", outcome="allowed") == 1
    )
    assert (
        sample("inference_webhook_decisions_total", path="/validate-inferenceservice", outcome="malformed")
        == 1
    )
    assert sample("inference_webhook_request_duration_seconds_count", path="/validate-inferenceservice") == 3
    assert "inference_webhook_request_duration_seconds_bucket" in text


def test_get_on_an_admission_path_is_not_a_server_error(client: TestClient) -> None:
    assert client.get("/validate-inferenceservice").status_code == 405
