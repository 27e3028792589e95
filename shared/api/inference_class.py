"""InferenceServiceClass: the administrator's policy. Cluster-scoped; namespace users cannot read it."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from shared.api.base import ApiModel, ObjectMeta
from shared.api.condition import Condition
from shared.api.enums import (
    Authentication,
    EndpointType,
    ExposureType,
    ModelFormat,
    ModelSource,
    ScalingMetric,
    SharingMode,
)
from shared.api.scheduling import Toleration
from shared.api.selector import LabelSelector

PARAMETER_COUNT_PATTERN = r"^([0-9]+|[0-9]+(\.[0-9]+)?[KMBT])$"


class ParameterCountRange(ApiModel):
    """Bounds on the model's parameter count. Each is an integer or a string such as 500M, 7B, 1.5T."""

    min: int | str | None = Field(
        default=None,
        description="Smallest parameter count allowed: an integer, or 500M / 7B / 1.5T.",
        json_schema_extra={"x-kubernetes-int-or-string": True, "pattern": PARAMETER_COUNT_PATTERN},
    )
    max: int | str | None = Field(
        default=None,
        description="Largest parameter count allowed: an integer, or 500M / 7B / 1.5T.",
        json_schema_extra={"x-kubernetes-int-or-string": True, "pattern": PARAMETER_COUNT_PATTERN},
    )


class ModelPolicy(ApiModel):
    """Which models orders of this class may serve, and through which API contract."""

    allowed_endpoint_types: list[EndpointType] = Field(
        description="The inference API contracts an order of this class may get, at least one. The platform "
        "intersects it with what the model offers.",
        min_length=1,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    allowed_sources: list[ModelSource] | None = Field(
        default=None,
        description="Model sources allowed. Defaults to both HuggingFace and Catalog.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    allowed_formats: list[ModelFormat] | None = Field(
        default=None,
        description="Weight formats allowed. Defaults to all.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    parameter_count: ParameterCountRange | None = Field(
        default=None, description="Bounds on the model's parameter count."
    )


class Placement(ApiModel):
    """Where orders of this class may run."""

    device_class_names: list[str] = Field(
        description="DRA DeviceClasses to try, in this order, for example gpu.nvidia.com then mig.nvidia.com.",
        min_length=1,
    )
    selector: str | None = Field(
        default=None,
        description="Optional CEL expression over `device` that a device must satisfy, with the DRA "
        'functions, for example `device.attributes["gpu.nvidia.com"].productName.matches("H100|A100")`.',
        max_length=10240,
    )
    sharing_modes: list[SharingMode] | None = Field(
        default=None,
        description="Sharing modes allowed, in preference order: Exclusive, MIG, TimeSlicing, MPS. "
        "Defaults to [Exclusive].",
    )
    max_accelerators_per_replica: int | None = Field(
        default=None,
        description="Most devices one replica may use for tensor parallelism. Defaults to 8.",
        ge=1,
        le=64,
    )
    max_nodes_per_replica: int | None = Field(
        default=None,
        description="Most nodes one replica may span. Defaults to 1 (one node). Above 1, a replica that no "
        "single node can hold runs on up to this many nodes of one product as a LeaderWorkerSet: tensor "
        "parallel within each node (up to maxAcceleratorsPerReplica devices per node), pipeline parallel "
        "across the nodes. Only with the Exclusive sharing mode.",
        ge=1,
        le=16,
    )
    node_selector: dict[str, str] | None = Field(
        default=None,
        description="Node labels the runtime pods require, added to the module's GPU node selector (a key "
        'set by both takes this value), for example `nvidia.com/gpu.present: "true"`.',
    )
    tolerations: list[Toleration] | None = Field(
        default=None,
        description="Taints of GPU nodes the runtime pods tolerate, in addition to the module's GPU node "
        "tolerations, for example `{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}`.",
        max_length=32,
    )


# The scaling policy's defaults, in one place (docs/admin-guide.md, "Autoscaling"). The target is
# per replica, in the metric's own unit: waiting requests (QueueDepth), percent of the KV cache in use
# (KVCacheUtilization), requests being served (RunningRequests).
DEFAULT_SCALING_METRIC: ScalingMetric = "QueueDepth"
DEFAULT_SCALING_TARGETS: dict[str, int] = {"QueueDepth": 2, "KVCacheUtilization": 80, "RunningRequests": 8}
DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS = 300  # the HPA's own default scale-down window
MAX_SCALE_DOWN_STABILIZATION_SECONDS = 3600
MAX_PERCENT_TARGET = 100  # KVCacheUtilization: a percent
# Scale to zero (``minReplicas: 0``): how long an order must be idle before it runs no pod.
DEFAULT_SCALE_TO_ZERO_AFTER_SECONDS = 600
MIN_SCALE_TO_ZERO_AFTER_SECONDS = 30
MAX_SCALE_TO_ZERO_AFTER_SECONDS = 86400


class Scaling(ApiModel):
    """Replica bounds, priority, and the runtime signal the autoscaler follows, for orders of this class."""

    CEL_RULES: ClassVar[list[dict[str, str]]] = [
        {
            "rule": "!has(self.target) || !has(self.metric) || self.metric != 'KVCacheUtilization' "
            f"|| self.target <= {MAX_PERCENT_TARGET}",
            "message": "`spec.scaling.target`: must be at most 100 (a percent of the KV cache) when "
            "`spec.scaling.metric` is `KVCacheUtilization`",
            "fieldPath": ".target",
            "reason": "FieldValueInvalid",
        },
        {
            "rule": "!has(self.scaleToZeroAfterSeconds) || (has(self.minReplicas) && self.minReplicas == 0)",
            "message": "`spec.scaling.scaleToZeroAfterSeconds`: only a class with `spec.scaling.minReplicas: 0` "
            "scales to zero",
            "fieldPath": ".scaleToZeroAfterSeconds",
            "reason": "FieldValueForbidden",
        },
    ]

    min_replicas: int | None = Field(
        default=None,
        description="Fewest replicas. Defaults to 1. 0: an order idle for scaleToZeroAfterSeconds runs no "
        "pod and holds no device; it stays Ready (WorkloadReady=True/ScaledToZero), and a request with its "
        "token is held by the activator until a replica is ready. Requires authentication Token.",
        ge=0,
    )
    max_replicas: int | None = Field(
        default=None, description="Most replicas. Defaults to minReplicas (1 when minReplicas is 0).", ge=1
    )
    priority_class_name: str | None = Field(default=None, description="PriorityClass of the order's pods.")
    metric: ScalingMetric | None = Field(
        default=None,
        description="The runtime's signal the autoscaler follows (through KEDA, from Prometheus; CPU never "
        "is): QueueDepth (requests waiting, vllm:num_requests_waiting), KVCacheUtilization (percent of the KV "
        "cache in use, vllm:kv_cache_usage_perc) or RunningRequests (requests being served, "
        "vllm:num_requests_running). Defaults to QueueDepth.",
    )
    target: int | None = Field(
        default=None,
        description="The value of the metric per replica the autoscaler aims at: waiting requests "
        "(QueueDepth, default 2), percent of the KV cache, 1 to 100 (KVCacheUtilization, default 80), or "
        "running requests (RunningRequests, default 8). Above it, replicas are added up to maxReplicas.",
        ge=1,
    )
    scale_down_stabilization_seconds: int | None = Field(
        default=None,
        description="How long the load must stay low before replicas are removed (the HPA's scale-down "
        "stabilization window), 0 to 3600 seconds. Defaults to 300.",
        ge=0,
        le=MAX_SCALE_DOWN_STABILIZATION_SECONDS,
    )
    scale_to_zero_after_seconds: int | None = Field(
        default=None,
        description="Only with minReplicas 0: how long an order must receive no request (its runtime's "
        "requests and those the activator holds; the controller's health probe does not count) before it "
        "runs no pod, 30 to 86400 seconds. Defaults to 600. The first request after it waits for a replica "
        "to start and load the model.",
        ge=MIN_SCALE_TO_ZERO_AFTER_SECONDS,
        le=MAX_SCALE_TO_ZERO_AFTER_SECONDS,
    )


class Exposure(ApiModel):
    """How the endpoint is published."""

    type: ExposureType = Field(
        default="ClusterLocal",
        description="ClusterLocal (a Service in the cluster) or External (an Ingress as well).",
    )
    authentication: Authentication = Field(
        default="Token",
        description="Token: a Bearer token in the Secret `<order>-auth`. None: no token and no header.",
    )


class InferenceServiceClassSpec(ApiModel):
    """The policy an order of this class is planned under."""

    CEL_RULES: ClassVar[list[dict[str, str]]] = [
        {
            # The activator wakes an order at zero only for a request with the order's token: without
            # one, any caller could make the order take a GPU.
            "rule": "!has(self.scaling) || !has(self.scaling.minReplicas) || self.scaling.minReplicas > 0 "
            "|| !has(self.exposure) || !has(self.exposure.authentication) "
            "|| self.exposure.authentication == 'Token'",
            "message": "`spec.scaling.minReplicas`: 0 (scale to zero) needs `spec.exposure.authentication: "
            "Token`: only a request with the order's token wakes it",
            "fieldPath": ".scaling.minReplicas",
            "reason": "FieldValueForbidden",
        },
    ]

    model_policy: ModelPolicy = Field(description="Which models are allowed and through which contract.")
    placement: Placement = Field(description="Which devices orders may use, and how they may share them.")
    scaling: Scaling | None = Field(
        default=None,
        description="Replica bounds, priority class, and the runtime signal the autoscaler follows.",
    )
    exposure: Exposure | None = Field(default=None, description="How the endpoint is published.")
    recipes: list[str] | None = Field(
        default=None,
        description="InferenceRecipe names in preference order. Empty or unset means all recipes.",
    )
    namespace_selector: LabelSelector | None = Field(
        default=None,
        description="The namespaces whose orders may use this class, by their labels (a standard label "
        "selector; every namespace carries `kubernetes.io/metadata.name: <name>`). An order from a "
        "namespace it does not select reads ClassResolved=False/ClassNotFound, worded exactly as for a "
        "class that does not exist. Unset: every namespace.",
    )


class InferenceServiceClassStatus(ApiModel):
    """Whether the class can be used."""

    observed_generation: int | None = Field(default=None, description="The generation this status describes.")
    conditions: list[Condition] | None = Field(
        default=None,
        description="Ready is False with a reason when a referenced object is missing or the selector does "
        "not compile.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


class InferenceServiceClass(ApiModel):
    """The administrator's policy for a family of orders."""

    KIND: ClassVar[str] = "InferenceServiceClass"
    PLURAL: ClassVar[str] = "inferenceserviceclasses"

    api_version: str = "ai.deckhouse.io/v1alpha1"
    kind: str = "InferenceServiceClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: InferenceServiceClassSpec
    status: InferenceServiceClassStatus = Field(default_factory=InferenceServiceClassStatus)
