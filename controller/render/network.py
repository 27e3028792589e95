"""How an order is reached and grown: its Service, KEDA ScaledObject, Ingress, endpoint Certificate
and the ``<order>-auth`` Secret. Pure: order and policy in, manifests out."""

from __future__ import annotations

import re
from dataclasses import dataclass

from controller.config.settings import Settings
from controller.render.common import Obj, labels, meta
from controller.render.exposure import (
    Endpoint,
    ScalingPolicy,
    replica_bounds,
    scale_to_zero_after,
    scaling_policy,
)
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


KEDA_API_VERSION = "keda.sh/v1alpha1"
SCALED_OBJECT = "ScaledObject"
POLLING_INTERVAL_SECONDS = 5  # how often KEDA asks Prometheus (the HPA reads it every sync period)
# The HPA's behavior (docs/admin-guide.md, "Autoscaling"). Up: a new replica loads its model for
# minutes, during which the queue does not shrink; at most 2 pods per 120 s, after 30 s of steady
# demand, so a burst does not order a pod per poll while the first ones are still loading. Down: one
# pod per 60 s after the class's window (default 300 s, the HPA's own default).
SCALE_UP_STABILIZATION_SECONDS = 30
SCALE_UP_PODS, SCALE_UP_PERIOD_SECONDS = 2, 120
SCALE_DOWN_PODS, SCALE_DOWN_PERIOD_SECONDS = 1, 60

# The runtime's series for each metric (vLLM's names), how they are summed over the order's pods,
# and the HPA metric type KEDA gives the trigger.
SIGNAL_WINDOW = "1m"
"""vLLM's signals are gauges read at the scrape instant. Under a closed loop of clients the queue swings
between 0 and its peak from one scrape to the next, and the HPA's scale-up window keeps the lowest
recommendation it saw, so an unsmoothed queue rarely grows an order (measured on the plane: a real
vLLM with 3-4 waiting at most scrapes stayed at 1 replica). The HPA therefore sees each pod's mean over
the last minute (12 scrapes at 5 s)."""
_QUERIES: dict[str, tuple[str, str]] = {
    "QueueDepth": (
        f"sum(avg_over_time(vllm:num_requests_waiting{{{{{{sel}}}}}}[{SIGNAL_WINDOW}]))",
        "AverageValue",
    ),
    "RunningRequests": (
        f"sum(avg_over_time(vllm:num_requests_running{{{{{{sel}}}}}}[{SIGNAL_WINDOW}]))",
        "AverageValue",
    ),
    "KVCacheUtilization": (
        f"100 * avg(avg_over_time(vllm:kv_cache_usage_perc{{{{{{sel}}}}}}[{SIGNAL_WINDOW}]))",
        "Value",
    ),
}
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # whole string (fullmatch: no "\n" after $)


def prometheus_query(metric: str, namespace: str, name: str) -> tuple[str, str]:
    """(PromQL query, KEDA ``metricType``) of the order's signal, over the series the scrape gives
    the labels ``namespace`` and ``order`` (the pod's ``names.LABEL_ORDER``).

    The HPA's arithmetic, with ``target`` the class's value per replica:

    - ``AverageValue`` (QueueDepth, RunningRequests): the query is the sum over the order's pods and
      the HPA divides it by the current replicas; desired = ceil(sum / target). Two replicas with 7
      waiting requests in all and a target of 2 want ceil(7 / 2) = 4 replicas.
    - ``Value`` (KVCacheUtilization): the query is already per replica (the mean percent of KV cache
      in use), so desired = ceil(current replicas * value / target). Two replicas at 90 % with a
      target of 80 want ceil(2 * 90 / 80) = 3 replicas.

    Both names are DNS labels (a namespace, an order whose Service takes its name): anything else
    is refused here, so no quote or backslash can reach the label matchers and no escaping is needed.
    """
    for what, value in (("namespace", namespace), ("order name", name)):
        if not _DNS_LABEL.fullmatch(value):
            raise ValueError(f"the {what} {value!r} is not a DNS label")
    template, metric_type = _QUERIES[metric]
    return template.format(sel=f'namespace="{namespace}",order="{name}"'), metric_type


ACTIVITY_WINDOW = "1m"
ACTIVITY_THRESHOLD = "1000000"  # per replica: never the reason for a replica beyond the first
ACTIVATOR_HELD_METRIC = "inference_activator_requests_held"  # activator/metrics.py


def activity_query(namespace: str, name: str) -> str:
    """PromQL that is above 0 while the order has any request: answered in the last minute
    (``vllm:request_success_total``), being served, waiting, or held by the activator while the order
    runs no replica. KEDA keeps the order above zero while it is, and wakes it from zero when it is.

    The controller's health probe (``GET /v1/models``) is not an inference request: vLLM counts it in
    none of these series, so the probe never keeps an idle order awake. Each term is ``or vector(0)``:
    a sum over no series (no pod at zero, no activator holding) is empty, and an empty side would
    make the whole sum empty."""
    prometheus_query("QueueDepth", namespace, name)  # the same DNS-label check of both names
    sel = f'namespace="{namespace}",order="{name}"'
    terms = (
        f"sum(rate(vllm:request_success_total{{{sel}}}[{ACTIVITY_WINDOW}]))",
        f"sum(vllm:num_requests_running{{{sel}}})",
        f"sum(vllm:num_requests_waiting{{{sel}}})",
        f"sum({ACTIVATOR_HELD_METRIC}{{{sel}}})",
    )
    return " + ".join(f"({t} or vector(0))" for t in terms)


def autoscaler(
    order: InferenceService, spec: InferenceServiceClassSpec, settings: Settings, *, may_idle: bool = True
) -> Obj:
    """The order's KEDA ScaledObject: KEDA makes the HPA ``keda-hpa-<order>`` (``names.keda_hpa``)
    that grows the Deployment ``<order>`` within the class's bounds on the runtime's own signal, read
    from Prometheus at the module setting ``prometheusServerAddress``; CPU is never the signal.

    Only a single-node plan has one. A multi-node plan's LeaderWorkerSet runs the class's
    ``minReplicas`` groups and has no autoscaler, as it had none under the CPU HPA, although LWS has a
    scale subresource: the set's ``replicas`` is rendered (an HPA would fight it), and each group's
    NetworkPolicy fencing Ray's ports is rendered for those ``minReplicas`` groups only
    (``controller.render.group.group_network_policies``), so a group the HPA added would run with
    Ray unfenced. Growing groups needs both changed first.

    ``horizontalPodAutoscalerConfig.name`` is left unset so that KEDA names the HPA and copies the
    ScaledObject's labels onto it.

    A class with ``minReplicas: 0`` (``scale_to_zero_after``) gets ``minReplicaCount: 0`` and a
    second trigger on ``activity_query``: KEDA, not the HPA, moves a Deployment between 0 and 1. It
    scales to zero once every trigger has been inactive (0) for ``cooldownPeriod`` (the class's
    ``scaleToZeroAfterSeconds``), and to one as soon as one is active, e.g. the activator holds a
    request. ``initialCooldownPeriod`` gives a new order the same time before its first zero. The
    order must have served once first (``may_idle``: its WorkloadReady was True): until then its
    ScaledObject keeps ``minReplicaCount: 1``, because a runtime publishes nothing while it loads, and
    KEDA would otherwise stop a new order before it ever served. The activity trigger's threshold is so high that it never asks for a replica beyond the first: the
    class's own signal grows the order from there."""
    name, ns = order.metadata.name, order.metadata.namespace or "default"
    lo, hi, _ = replica_bounds(spec)
    policy = scaling_policy(spec)
    query, metric_type = prometheus_query(policy.metric, ns, name)
    triggers: list[Obj] = [
        {
            "type": "prometheus",
            "metricType": metric_type,
            "metadata": {
                "serverAddress": settings.prometheus_server_address,
                "query": query,
                "threshold": str(policy.target),
            },
        }
    ]
    body: Obj = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": names.workload(name)},
        "minReplicaCount": lo,
        "maxReplicaCount": hi,
        "pollingInterval": POLLING_INTERVAL_SECONDS,
    }
    idle = scale_to_zero_after(spec)
    if idle is not None and not may_idle:
        body["minReplicaCount"] = 1
    if idle is not None:
        body["cooldownPeriod"] = idle
        body["initialCooldownPeriod"] = idle
        triggers.append(
            {
                "type": "prometheus",
                "name": "activity",
                "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": settings.prometheus_server_address,
                    "query": activity_query(ns, name),
                    "threshold": ACTIVITY_THRESHOLD,
                    "activationThreshold": "0",
                },
            }
        )
    body["advanced"] = {"horizontalPodAutoscalerConfig": {"behavior": behavior(policy)}}
    body["triggers"] = triggers
    return {
        "apiVersion": KEDA_API_VERSION,
        "kind": SCALED_OBJECT,
        "metadata": meta(order, names.workload(name)),
        "spec": body,
    }


@dataclass(frozen=True, slots=True)
class ActivatorTarget:
    """Where the activator answers: its pods' ready addresses (sorted), its HTTPS port, and the
    address family of its EndpointSlices (``IPv4`` or ``IPv6``)."""

    addresses: tuple[str, ...]
    port: int
    address_type: str = "IPv4"


def activator_slice(order: InferenceService, target: ActivatorTarget) -> Obj:
    """The EndpointSlice ``<order>-activator`` that puts the activator behind the order's Service
    while the order has no ready replica (a class with ``minReplicas: 0``). The Service keeps its
    selector: kube-proxy sends traffic to the endpoints of every slice labelled with the Service's
    name, and the EndpointSlice controller keeps only the slices it manages. The controller writes
    this one while the order has no ready replica and deletes it once it has one, so a warm order's
    traffic never passes the activator."""
    name = order.metadata.name
    obj = meta(order, names.activator_slice(name))
    obj["labels"] = {
        **obj.get("labels", {}),
        names.SERVICE_NAME_LABEL: names.workload(name),
        names.SLICE_MANAGER_LABEL: names.ACTIVATOR_SLICE_MANAGER,
    }
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": obj,
        "addressType": target.address_type,
        "ports": [{"name": "https", "port": target.port, "protocol": "TCP"}],
        "endpoints": [{"addresses": [a], "conditions": {"ready": True}} for a in target.addresses],
    }


def behavior(policy: ScalingPolicy) -> Obj:
    """The HPA's ``behavior``: slow up (models load for minutes), one pod at a time down."""
    return {
        "scaleDown": {
            "stabilizationWindowSeconds": policy.scale_down_stabilization_seconds,
            "policies": [
                {"type": "Pods", "value": SCALE_DOWN_PODS, "periodSeconds": SCALE_DOWN_PERIOD_SECONDS}
            ],
        },
        "scaleUp": {
            "stabilizationWindowSeconds": SCALE_UP_STABILIZATION_SECONDS,
            "policies": [{"type": "Pods", "value": SCALE_UP_PODS, "periodSeconds": SCALE_UP_PERIOD_SECONDS}],
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
