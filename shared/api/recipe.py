"""InferenceRecipe: how one runtime launches. Cluster-scoped, written by administrators."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from shared.api.base import ApiModel, ObjectMeta
from shared.api.condition import Condition
from shared.api.enums import EndpointType, ModelFormat, Runtime

COMPUTE_CAPABILITY_PATTERN = r"^[0-9]+\.[0-9]+$"


class QuantizationSupport(ApiModel):
    """A quantization method the runtime serves, and the least hardware it needs."""

    method: str = Field(
        description="Quantization method: none, awq, gptq, fp8, bitsandbytes, gguf ...", min_length=1
    )
    min_compute_capability: str = Field(
        description='Least CUDA compute capability, for example "7.5".',
        pattern=COMPUTE_CAPABILITY_PATTERN,
    )


class InferenceRecipeSpec(ApiModel):
    """One runtime's launch description; the planner compiles it into a launch plan."""

    runtime: Runtime = Field(description="The runtime adapter: vLLM.")
    image: str = Field(description="Container image of the runtime.", min_length=1)
    endpoint_types: list[EndpointType] = Field(
        description="API contracts the runtime serves.",
        min_length=1,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    formats: list[ModelFormat] = Field(
        description="Weight formats the runtime loads.",
        min_length=1,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    architectures: list[str] | None = Field(
        default=None,
        description='Hugging Face architecture names the runtime serves, or ["*"] for all. Defaults to all.',
    )
    quantizations: list[QuantizationSupport] | None = Field(
        default=None,
        description="Quantization methods with their least compute capability. Defaults to `none` on 7.0.",
    )
    gpu_memory_utilization: float | None = Field(
        default=None,
        description="Share of device memory the runtime may use, 0.5-0.98. Defaults to 0.9.",
        ge=0.5,
        le=0.98,
    )
    trust_remote_code: bool | None = Field(
        default=None,
        description="Serve models whose config.json names code of the repository (`auto_map`), running it "
        "with `--trust-remote-code`. That code runs in the runtime pod with the model's permissions: enable "
        "it only for repositories you trust. Defaults to false: such models are refused (RemoteCodeNotAllowed).",
    )
    extra_args: list[str] | None = Field(default=None, description="Arguments appended to the launch plan's.")


class InferenceRecipeStatus(ApiModel):
    """Whether the recipe is usable."""

    observed_generation: int | None = Field(default=None, description="The generation this status describes.")
    conditions: list[Condition] | None = Field(
        default=None,
        description="Ready is False with a reason when the recipe cannot be used.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


class InferenceRecipe(ApiModel):
    """How one runtime launches a model."""

    KIND: ClassVar[str] = "InferenceRecipe"
    PLURAL: ClassVar[str] = "inferencerecipes"

    api_version: str = "ai.deckhouse.io/v1alpha1"
    kind: str = "InferenceRecipe"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: InferenceRecipeSpec
    status: InferenceRecipeStatus = Field(default_factory=InferenceRecipeStatus)
