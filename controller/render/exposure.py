"""The class's exposure and scaling policy, decided for one order: where its endpoint is, whether it
needs a token, its replica bounds and the signal its autoscaler follows. Pure; the reconciler and the
renderer both ask it."""

from __future__ import annotations

from dataclasses import dataclass

from controller.config.settings import Settings
from shared.api.enums import ScalingMetric
from shared.api.inference_class import (
    DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS,
    DEFAULT_SCALE_TO_ZERO_AFTER_SECONDS,
    DEFAULT_SCALING_METRIC,
    DEFAULT_SCALING_TARGETS,
    MAX_PERCENT_TARGET,
    InferenceServiceClassSpec,
)
from shared.api.order import InferenceService


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    type: str
    host: str


def endpoint_for(order: InferenceService, spec: InferenceServiceClassSpec, settings: Settings) -> Endpoint:
    """The HTTPS endpoint: the Service's cluster name, or the external host from the template."""
    name, ns = order.metadata.name, order.metadata.namespace or "default"
    exposure = spec.exposure
    if exposure is not None and exposure.type == "External":
        host = settings.external_domain_template.format(name=name, namespace=ns)
        return Endpoint(url=f"https://{host}", type="External", host=host)
    host = f"{name}.{ns}.svc"
    return Endpoint(url=f"https://{host}", type="ClusterLocal", host=host)


def probe_url(order: InferenceService) -> str:
    """Where the controller probes the order: its Service by the in-cluster name, which the endpoint
    certificate always carries, whatever the exposure. An External order is never probed through the
    shared ingress, where another namespace's rule for the same host could receive the token."""
    return f"https://{order.metadata.name}.{order.metadata.namespace or 'default'}.svc"


def requires_token(spec: InferenceServiceClassSpec) -> bool:
    return spec.exposure is None or spec.exposure.authentication == "Token"


def replica_bounds(spec: InferenceServiceClassSpec) -> tuple[int, int, str | None]:
    """(min, max, priorityClassName) the class imposes; min defaults to 1 and may be 0 (scale to
    zero), max defaults to min and is at least 1."""
    scaling = spec.scaling
    lo = scaling.min_replicas if scaling and scaling.min_replicas is not None else 1
    hi = scaling.max_replicas if scaling and scaling.max_replicas else lo
    return lo, max(lo, hi, 1), scaling.priority_class_name if scaling else None


def scale_to_zero_after(spec: InferenceServiceClassSpec) -> int | None:
    """Seconds of idleness after which an order of the class runs no pod (``minReplicas: 0``;
    default 600), or None when the class never scales to zero."""
    scaling = spec.scaling
    if scaling is None or scaling.min_replicas != 0:
        return None
    after = scaling.scale_to_zero_after_seconds
    return DEFAULT_SCALE_TO_ZERO_AFTER_SECONDS if after is None else after


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    """What the autoscaler of an order follows: the runtime's ``metric``, the ``target`` value per
    replica (in the metric's unit) and the scale-down stabilization window in seconds."""

    metric: ScalingMetric
    target: int
    scale_down_stabilization_seconds: int


def scaling_policy(spec: InferenceServiceClassSpec) -> ScalingPolicy:
    """The class's scaling signal with the defaults filled in (``shared.api.inference_class``:
    QueueDepth, 2 waiting / 80 % / 8 running per replica, 300 s). A KV cache target above 100 %
    (refused by the schema and the webhook, so only from an object stored before them) counts as 100."""
    scaling = spec.scaling
    metric = (scaling.metric if scaling else None) or DEFAULT_SCALING_METRIC
    target = scaling.target if scaling and scaling.target else DEFAULT_SCALING_TARGETS[metric]
    if metric == "KVCacheUtilization":
        target = min(target, MAX_PERCENT_TARGET)
    window = scaling.scale_down_stabilization_seconds if scaling else None
    return ScalingPolicy(
        metric=metric,
        target=target,
        scale_down_stabilization_seconds=DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS
        if window is None
        else window,
    )
