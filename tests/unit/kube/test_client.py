"""REST paths from the resource registry, and typed errors from the API server's Status answers."""

from __future__ import annotations

import json

import pytest

from controller.kube import errors
from controller.kube.client import RESOURCES, path_for, resource_for


@pytest.mark.parametrize(
    ("api_version", "kind", "namespace", "name", "subresource", "path"),
    [
        ("v1", "ConfigMap", "ns", None, None, "/api/v1/namespaces/ns/configmaps"),
        ("v1", "ConfigMap", None, None, None, "/api/v1/configmaps"),
        ("v1", "Secret", "ns", "tok", None, "/api/v1/namespaces/ns/secrets/tok"),
        (
            "ai.deckhouse.io/v1alpha1",
            "InferenceService",
            "team",
            "chat",
            "status",
            "/apis/ai.deckhouse.io/v1alpha1/namespaces/team/inferenceservices/chat/status",
        ),
        (
            "ai.deckhouse.io/v1alpha1",
            "InferenceServiceClass",
            "ignored",
            "gpu",
            "status",
            "/apis/ai.deckhouse.io/v1alpha1/inferenceserviceclasses/gpu/status",
        ),
        ("resource.k8s.io/v1", "ResourceSlice", None, None, None, "/apis/resource.k8s.io/v1/resourceslices"),
        (
            "coordination.k8s.io/v1",
            "Lease",
            "d8",
            "ctl",
            None,
            "/apis/coordination.k8s.io/v1/namespaces/d8/leases/ctl",
        ),
        (
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            "ns",
            "x",
            None,
            "/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers/x",
        ),
    ],
    ids=[
        "a namespaced core collection",
        "a core collection across namespaces",
        "a core object",
        "the status of an order",
        "a cluster-scoped object ignores the namespace",
        "a cluster-scoped collection",
        "a lease",
        "an HPA of autoscaling/v2",
    ],
)
def test_paths_follow_the_rest_layout(
    api_version: str, kind: str, namespace: str | None, name: str | None, subresource: str | None, path: str
) -> None:
    assert (
        path_for(resource_for(api_version, kind), namespace=namespace, name=name, subresource=subresource)
        == path
    )


def test_a_subresource_needs_a_name() -> None:
    with pytest.raises(ValueError, match="needs an object name"):
        path_for(resource_for("v1", "Pod"), namespace="ns", subresource="status")


def test_an_unknown_kind_is_named_in_the_error() -> None:
    with pytest.raises(KeyError, match="Widget"):
        resource_for("example.com/v1", "Widget")


def test_every_kind_the_controller_touches_is_registered() -> None:
    wanted = {
        "InferenceService", "InferenceServiceClass", "InferenceRecipe", "Model", "ClusterModel", "Secret",
        "ConfigMap", "Service", "Pod", "Event", "Lease", "PersistentVolumeClaim", "Deployment",
        "HorizontalPodAutoscaler", "ScaledObject", "Ingress", "Certificate", "ResourceClaimTemplate", "ResourceClaim",
        "ResourceSlice", "DeviceClass", "PriorityClass",
    }  # fmt: skip
    assert wanted <= {kind for _, kind in RESOURCES}
    assert ("events.k8s.io/v1", "Event") in RESOURCES


def status(code: int, reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "code": code, "reason": reason, "message": message}).encode()


@pytest.mark.parametrize(
    ("code", "reason", "error"),
    [
        (404, "NotFound", errors.NotFound),
        (409, "Conflict", errors.Conflict),
        (409, "AlreadyExists", errors.AlreadyExists),
        (403, "Forbidden", errors.Forbidden),
        (422, "Invalid", errors.Invalid),
        (400, "BadRequest", errors.Invalid),
        (410, "Expired", errors.Gone),
        (503, "ServiceUnavailable", errors.ApiUnavailable),
        (429, "TooManyRequests", errors.ApiUnavailable),
        (418, "Teapot", errors.KubeError),
    ],
)
def test_status_answers_become_typed_errors_with_the_servers_message(
    code: int, reason: str, error: type[errors.KubeError]
) -> None:
    e = errors.error_from_response(code, status(code, reason, "the server says why"), what="PATCH /x")
    assert type(e) is error
    assert (e.status, e.reason) == (code, reason)
    assert str(e) == "PATCH /x: the server says why"


def test_a_non_json_error_body_is_kept_as_the_message() -> None:
    e = errors.error_from_response(502, b"Bad Gateway\n", what="GET /y")
    assert isinstance(e, errors.ApiUnavailable)
    assert str(e) == "GET /y: Bad Gateway"


class _CountingConfig:
    def __init__(self) -> None:
        self.calls = 0

    def auth_settings(self) -> dict[str, dict[str, str]]:
        self.calls += 1
        return {"BearerToken": {"in": "header", "key": "authorization", "value": f"Bearer t{self.calls}"}}


class _Client:
    def __init__(self) -> None:
        self.configuration = _CountingConfig()


def test_auth_headers_are_kept_for_a_while_then_refreshed() -> None:
    from controller.kube.client import AUTH_TTL, _auth_headers

    api = _Client()
    assert _auth_headers(api, now=100.0) == {"authorization": "Bearer t1"}
    assert _auth_headers(api, now=100.0 + AUTH_TTL / 2) == {"authorization": "Bearer t1"}
    assert api.configuration.calls == 1
    assert _auth_headers(api, now=100.0 + AUTH_TTL + 1) == {"authorization": "Bearer t2"}
