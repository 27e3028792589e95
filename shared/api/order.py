"""InferenceService: the order. A namespaced object with exactly two required spec fields."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from shared.api.base import ApiModel, ObjectMeta
from shared.api.condition import Condition
from shared.api.enums import (
    CatalogKind,
    EndpointType,
    ExposureType,
    ModelFormat,
    ModelSource,
    Phase,
    PlacementMode,
    ScalingMetric,
    SharingMode,
)

HF_REPO_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$"
REVISION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,254}$"
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"


class ModelRef(ApiModel):
    """Which model. Its shape follows from `spec.model.src`."""

    kind: CatalogKind | None = Field(
        default=None,
        description="Catalog only: ClusterModel (cluster-scoped, the default) or Model (in the order's "
        "namespace). Must not be set when `src` is HuggingFace.",
    )
    name: str = Field(
        description="HuggingFace: the repository id `<owner>/<repo>`, for example "
        "`Qwen/Qwen2.5-32B-Instruct-AWQ`. Catalog: the name of the ClusterModel or Model.",
        min_length=1,
        max_length=253,
    )
    revision: str | None = Field(
        default=None,
        description="HuggingFace only: a branch, tag or commit. Defaults to `main`. The resolved commit is "
        "reported in `status.model.revision`.",
        max_length=255,
        pattern=REVISION_PATTERN,
    )


class SecretKeyRef(ApiModel):
    """A key of a Secret in the order's own namespace."""

    name: str = Field(description="Name of a Secret in the order's namespace.", min_length=1, max_length=253)
    key: str | None = Field(
        default=None,
        description='Key in the Secret that holds the token. Defaults to "token".',
        max_length=253,
        pattern=SECRET_KEY_PATTERN,
    )


class ModelSpec(ApiModel):
    """The model to serve and where it comes from."""

    CEL_RULES: ClassVar[list[dict[str, str]]] = [
        {
            "rule": "self.src != 'HuggingFace' || !has(self.ref.kind)",
            "message": "`spec.model.ref.kind`: must not be set when `spec.model.src` is `HuggingFace`",
            "fieldPath": ".ref.kind",
            "reason": "FieldValueForbidden",
        },
        {
            "rule": "self.src != 'Catalog' || !has(self.ref.revision)",
            "message": "`spec.model.ref.revision`: must not be set when `spec.model.src` is `Catalog`",
            "fieldPath": ".ref.revision",
            "reason": "FieldValueForbidden",
        },
        {
            "rule": "self.src != 'Catalog' || !has(self.authSecretRef)",
            "message": "`spec.model.authSecretRef`: must not be set when `spec.model.src` is `Catalog`",
            "fieldPath": ".authSecretRef",
            "reason": "FieldValueForbidden",
        },
        {
            "rule": f"self.src != 'HuggingFace' || self.ref.name.matches(r'{HF_REPO_ID_PATTERN}')",
            "message": "`spec.model.ref.name`: must be a Hugging Face repository id `<owner>/<repo>` when "
            "`spec.model.src` is `HuggingFace`",
            "fieldPath": ".ref.name",
            "reason": "FieldValueInvalid",
        },
        {
            "rule": f"self.src != 'Catalog' || self.ref.name.matches(r'{DNS_SUBDOMAIN_PATTERN}')",
            "message": "`spec.model.ref.name`: must be a DNS subdomain name (the name of a ClusterModel or "
            "Model) when `spec.model.src` is `Catalog`",
            "fieldPath": ".ref.name",
            "reason": "FieldValueInvalid",
        },
    ]

    src: ModelSource = Field(
        description="The source of the model: HuggingFace (a Hub repository) or Catalog (a ClusterModel or "
        "Model of the model catalog). The shape of `ref` follows from it."
    )
    ref: ModelRef = Field(description="The model reference; its allowed fields depend on `src`.")
    auth_secret_ref: SecretKeyRef | None = Field(
        default=None,
        description="HuggingFace only: a Secret in your namespace holding a Hub token for a gated model. "
        "It is mounted into the model fetcher as HF_TOKEN and is never copied or modified.",
    )


class InferenceServiceSpec(ApiModel):
    """An order is a class and a model, and nothing else: the platform decides the rest."""

    inference_service_class_name: str = Field(
        description="Name of the cluster-scoped InferenceServiceClass your administrator lets you use, for "
        "example `default-llm`.",
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
    )
    model: ModelSpec = Field(description="The model to serve.")


class Endpoint(ApiModel):
    """Where the Inference API answers."""

    url: str = Field(description="HTTPS URL of the Inference API.")
    type: ExposureType = Field(description="The exposure the class chose: ClusterLocal or External.")


class ResolvedModel(ApiModel):
    """What the platform learned about the model."""

    endpoint_type: EndpointType | None = Field(
        default=None,
        description="The inference API contract the platform picked: Chat, Embeddings or Rerank.",
    )
    architecture: str | None = Field(
        default=None, description="Model architecture, for example Qwen2ForCausalLM."
    )
    format: ModelFormat | None = Field(default=None, description="Weights format: Safetensors or GGUF.")
    quantization: str | None = Field(
        default=None, description="Quantization of the weights, for example `awq-4bit`, `fp8`, or `none`."
    )
    parameter_count: int | None = Field(default=None, description="Exact number of parameters.")
    context_length: int | None = Field(
        default=None,
        description=(
            "Maximum context length of the model as served, in tokens: its configured context, capped by"
            " max_seq_length for a sentence-transformers model."
        ),
    )
    revision: str | None = Field(default=None, description="The resolved commit of the model repository.")


class Constraints(ApiModel):
    """The bounds the class imposes on the order."""

    min_replicas: int = Field(description="Fewest replicas the order runs.")
    max_replicas: int = Field(description="Most replicas the autoscaler may grow the order to.")
    priority_class_name: str | None = Field(default=None, description="PriorityClass of the order's pods.")
    metric: ScalingMetric | None = Field(
        default=None,
        description="The runtime signal the autoscaler follows: QueueDepth, KVCacheUtilization or RunningRequests.",
    )
    target: int | None = Field(
        default=None,
        description="The value of the metric per replica the autoscaler aims at: waiting requests, percent "
        "of the KV cache, or running requests.",
    )


class Resolved(ApiModel):
    """What the platform assigned to the order."""

    device_class: str | None = Field(default=None, description="The DRA DeviceClass the devices come from.")
    accelerator_product_name: str | None = Field(default=None, description="Product name of the accelerator.")
    accelerator_memory_gi_b: int | None = Field(
        default=None,
        alias="acceleratorMemoryGiB",
        description="Memory of one accelerator (or of its share), in GiB.",
    )
    accelerator_count: int | None = Field(
        default=None,
        description="Devices per replica, in total over its nodes; tensor parallel when greater than 1.",
    )
    placement_mode: PlacementMode | None = Field(
        default=None,
        description="SingleDevice, TensorParallel (several devices of one node) or MultiNode (several nodes "
        "of one product, a LeaderWorkerSet group).",
    )
    node_count: int | None = Field(
        default=None, description="Nodes one replica spans: 1, or more for MultiNode (pipeline parallel)."
    )
    accelerators_per_node: int | None = Field(
        default=None,
        description="Devices of the replica on each of its nodes (tensor parallel within a node); "
        "acceleratorCount is the total, nodeCount x acceleratorsPerNode.",
    )
    sharing_mode: SharingMode | None = Field(default=None, description="Exclusive, MIG, TimeSlicing or MPS.")
    share_percent: int | None = Field(default=None, description="Share of the device the order holds, 1-100.")
    cpu: str | None = Field(default=None, description="CPU request per replica, as a Kubernetes quantity.")
    memory: str | None = Field(
        default=None, description="Memory request per replica, as a Kubernetes quantity."
    )
    model_volume: str | None = Field(default=None, description="Size of the model volume, as a quantity.")
    recipe: str | None = Field(
        default=None, description="The InferenceRecipe the launch plan was compiled from."
    )
    order_generation: int | None = Field(
        default=None, description="The order generation the plan was last computed for."
    )
    class_generation: int | None = Field(
        default=None, description="The class generation the plan was last computed for."
    )
    tried_device_classes: list[str] | None = Field(
        default=None,
        description="Device classes on which the scheduler could not allocate the order's claim; the planner "
        "skips them until the order or its class changes.",
    )
    replan_count: int = Field(
        default=0,
        description="How many times the plan was recomputed after the first plan: an edit of model or class, "
        "a class policy change, or a fallback to the next device class.",
    )


class InferenceServiceStatus(ApiModel):
    """The observed state of the order. Read the conditions, not the phase."""

    observed_generation: int | None = Field(
        default=None, description="The metadata.generation this status was computed from."
    )
    phase: Phase | None = Field(
        default=None,
        description="Pending, Ready, Degraded (serves, but cannot grow) or Failed (waiting will not fix it).",
    )
    conditions: list[Condition] | None = Field(
        default=None,
        description="ClassResolved, ModelResolved, Planned, WorkloadReady, Ready, and ScalingHealthy.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    endpoint: Endpoint | None = Field(default=None, description="Where the Inference API answers.")
    auth_secret_name: str | None = Field(
        default=None,
        description="Name of the Secret holding the Bearer token (key `token`), when the class requires one.",
    )
    model: ResolvedModel | None = Field(
        default=None, description="What the platform learned about the model."
    )
    constraints: Constraints | None = Field(
        default=None, description="The effective replica bounds and priority class the class imposes."
    )
    resolved: Resolved | None = Field(default=None, description="What the platform assigned to the order.")


class InferenceService(ApiModel):
    """An order for LLM inference: a class and a model."""

    KIND: ClassVar[str] = "InferenceService"
    PLURAL: ClassVar[str] = "inferenceservices"

    api_version: str = "ai.deckhouse.io/v1alpha1"
    kind: str = "InferenceService"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: InferenceServiceSpec
    status: InferenceServiceStatus = Field(default_factory=InferenceServiceStatus)
