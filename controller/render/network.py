"""How an order is reached: its Service, HorizontalPodAutoscaler, Ingress, endpoint Certificate and
the ``<order>-auth`` Secret. Pure: order and policy in, manifests out."""

from __future__ import annotations

from controller.config.settings import Settings
from controller.render.common import Obj, labels, meta
from controller.render.exposure import Endpoint, replica_bounds
from shared import names
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.order import InferenceService

LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


def service(order: InferenceService, *, leader_only: bool = False) -> Obj:
    """The endpoint's Service; for a multi-node group it selects the leader only (worker index 0),
    the one pod that serves."""
    selector = {names.LABEL_ORDER: order.metadata.name}
    if leader_only:
        selector[LWS_WORKER_INDEX_LABEL] = "0"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(order, names.workload(order.metadata.name)),
        "spec": {
            "selector": selector,
            "ports": [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}],
        },
    }


def autoscaler(order: InferenceService, spec: InferenceServiceClassSpec) -> Obj:
    lo, hi, _ = replica_bounds(spec)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta(order, names.workload(order.metadata.name)),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": order.metadata.name},
            "minReplicas": lo,
            "maxReplicas": hi,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
                }
            ],
        },
    }


def certificate(order: InferenceService, endpoint: Endpoint, settings: Settings) -> Obj:
    """The endpoint's serving certificate. ``duration`` and ``renewBefore`` are module settings; vLLM
    runs with ``--enable-ssl-refresh``, so a renewal reaches the server without a restart.

    ``secretTemplate.labels`` puts the order's labels on the ``<order>-tls`` Secret cert-manager
    writes: the controller watches only Secrets labelled with an order (controller/kinds.py), so
    without them it never sees that Secret and never adopts it (``decide._adopt_tls_secret``)."""
    name, ns = order.metadata.name, order.metadata.namespace
    dns = [f"{name}.{ns}.svc", f"{name}.{ns}.svc.cluster.local"]
    if endpoint.host not in dns:
        dns.append(endpoint.host)
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": meta(order, names.certificate(name)),
        "spec": {
            "secretName": names.tls_secret(name),
            "secretTemplate": {"labels": labels(order)},
            "dnsNames": dns,
            "duration": settings.endpoint_certificate_duration,
            "renewBefore": settings.endpoint_certificate_renew_before,
            "issuerRef": {
                "name": settings.endpoint_issuer,
                "kind": settings.endpoint_issuer_kind,
                "group": "cert-manager.io",
            },
            "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
        },
    }


def ingress(order: InferenceService, endpoint: Endpoint, settings: Settings) -> Obj:
    name = order.metadata.name
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": meta(
            order, names.workload(name), annotations={"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS"}
        ),
        "spec": {
            "ingressClassName": settings.ingress_class_name,
            "tls": [{"hosts": [endpoint.host], "secretName": names.tls_secret(name)}],
            "rules": [
                {
                    "host": endpoint.host,
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": name, "port": {"name": "https"}}},
                            }
                        ]
                    },
                }
            ],
        },
    }


def auth_secret(order: InferenceService, token: str) -> Obj:
    """The ``<order>-auth`` Secret. Created once; the token is never rotated by a resync."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta(order, names.auth_secret(order.metadata.name)),
        "type": "Opaque",
        "stringData": {names.AUTH_TOKEN_KEY: token},
    }
