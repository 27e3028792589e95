"""Names and labels of the objects an order owns. Everything is named after the order."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

FIELD_MANAGER = "inference-controller"
LABEL_ORDER = "ai.deckhouse.io/inference-service"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "inference-controller"
AUTH_TOKEN_KEY = "token"
DEFAULT_HF_TOKEN_KEY = "token"
CLAIM_NAME = "gpu"  # the pod-level name of the ResourceClaimTemplate reference


def workload(order: str) -> str:
    """Deployment, Service, ScaledObject, Ingress and ResourceClaimTemplate share the order's name."""
    return order


def keda_hpa(order: str) -> str:
    """The HorizontalPodAutoscaler KEDA makes for the order's ScaledObject (named ``<order>``) when the
    ScaledObject sets no ``advanced.horizontalPodAutoscalerConfig.name``: ``keda-hpa-<order>``
    (KEDA's controllers/keda/hpa.go). It carries the ScaledObject's labels, so the order's label too."""
    return f"keda-hpa-{order}"


def activator_slice(order: str) -> str:
    """The EndpointSlice that points the order's Service at the activator while the order has no
    ready replica (a class with ``minReplicas: 0``)."""
    return f"{order}-activator"


# The activator (activator/): its Service in the module's namespace, whose ready endpoints the
# controller copies into an order's ``<order>-activator`` EndpointSlice, and the manager label of
# that slice (the EndpointSlice controller leaves slices of another manager alone; kube-proxy uses
# every slice labelled with the Service's name).
ACTIVATOR_SERVICE = "inference-activator"
ACTIVATOR_SLICE_MANAGER = "inference-controller.ai.deckhouse.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
SLICE_MANAGER_LABEL = "endpointslice.kubernetes.io/managed-by"


def auth_secret(order: str) -> str:
    return f"{order}-auth"


def model_volume(order: str) -> str:
    return f"{order}-model"


def tls_secret(order: str) -> str:
    return f"{order}-tls"


def certificate(order: str) -> str:
    return f"{order}-tls"


def claim_template(order: str) -> str:
    return f"{order}-gpu"


def order_of(obj: Mapping[str, Any]) -> str | None:
    """The order named by an object's order label (an order's objects carry it; the claims of its
    pods too, copied by the resource claim controller from the claim template)."""
    owner = ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_ORDER)
    return str(owner) if owner else None


def short_hash(text: str, n: int = 8) -> str:
    """A stable short digest, for names that must change when their content does."""
    return hashlib.sha256(text.encode()).hexdigest()[:n]


# The runtime container's contract, shared by the planner's launch plan and the renderer.
RUNTIME_PORT = 8443
TLS_MOUNT_PATH = "/etc/inference/tls"
MODEL_MOUNT_PATH = "/models"
API_KEY_ENV = "VLLM_API_KEY"  # vLLM reads its API key from this variable (vllm/envs.py)
# The hex SHA-256 of the module's metrics scrape token, read by the token guard (its own copy of the
# name: the guard is shipped as source and imports nothing of ours).
SCRAPE_DIGEST_ENV = "INFERENCE_SCRAPE_TOKEN_SHA256"
# The model fetcher init container, and the port its download progress is scraped on while it runs.
FETCHER_CONTAINER = "model-fetcher"
FETCHER_METRICS_PORT = 9090
