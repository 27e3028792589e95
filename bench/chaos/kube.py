"""Reading the API server as plain JSON (wire dicts), with a timeout, for any kind."""

from __future__ import annotations

from typing import Any

from controller.kube.client import request
from shared.api.base import API_GROUP, API_VERSION

Obj = dict[str, Any]

PATHS = {
    "InferenceService": f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{{ns}}/inferenceservices",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "Service": "/api/v1/namespaces/{ns}/services",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    # KEDA's HPA keda-hpa-<order> carries the order label but is the ScaledObject's, not the order's.
    "ScaledObject": "/apis/keda.sh/v1alpha1/namespaces/{ns}/scaledobjects",
    "Ingress": "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
    "Certificate": "/apis/cert-manager.io/v1/namespaces/{ns}/certificates",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates",
}
OWNED = tuple(k for k in PATHS if k not in ("InferenceService", "Pod"))


def items(api: Any, kind: str, namespace: str, *, selector: str | None = None) -> list[Obj]:
    """Every object of ``kind`` in ``namespace`` (matching the label ``selector``), as wire dicts."""
    query = {"labelSelector": selector} if selector else None
    return list(request(api, "GET", PATHS[kind].format(ns=namespace), query=query, timeout=15)["items"])
