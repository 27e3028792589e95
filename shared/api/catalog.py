"""The catalog's Model and ClusterModel, as far as the controller reads them.

They belong to a sibling module; this product only reads their status, and only when catalog
integration is on in the module settings. Tests install a small CRD for them
(``deploy/crds/catalog-for-tests``).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from shared.api.base import ApiModel, ObjectMeta
from shared.api.enums import EndpointType, ModelFormat


class CatalogResolved(ApiModel):
    """What the catalog learned about the model."""

    supported_endpoint_types: list[EndpointType] | None = Field(
        default=None, description="API contracts the model offers."
    )
    format: ModelFormat | None = Field(default=None, description="Weights format.")
    parameter_count: int | None = Field(default=None, description="Exact number of parameters.")
    quantization: str | None = Field(default=None, description="Quantization method, or none.")
    architecture: str | None = Field(default=None, description="Hugging Face architecture name.")
    context_window_tokens: int | None = Field(default=None, description="Context length in tokens.")
    num_attention_heads: int | None = Field(
        default=None, description="Attention heads (config.json); bounds the tensor-parallel size."
    )
    num_key_value_heads: int | None = Field(default=None, description="Key/value heads (config.json).")
    num_hidden_layers: int | None = Field(default=None, description="Layers (config.json).")
    hidden_size: int | None = Field(default=None, description="Hidden size (config.json).")
    head_dim: int | None = Field(default=None, description="Head dimension (config.json).")
    torch_dtype: str | None = Field(
        default=None, description="Dtype of the weights (config.json): bfloat16, float16 or float32."
    )
    weights_bytes: int | None = Field(
        default=None, description="Size of the weight files the runtime loads, in bytes."
    )


class CatalogSource(ApiModel):
    """Where the weights are."""

    uri: str | None = Field(
        default=None, description="Location of the weights, for example hf://org/repo or s3://."
    )
    revision: str | None = Field(
        default=None, description="Revision of the weights, when the source has one."
    )


class CatalogModelStatus(ApiModel):
    """The catalog's view of the model."""

    phase: str | None = Field(default=None, description="Ready when the model is usable.")
    resolved: CatalogResolved | None = Field(default=None, description="Facts about the model.")
    source: CatalogSource | None = Field(default=None, description="Where the weights are.")


class CatalogModel(ApiModel):
    """A Model (namespaced) or ClusterModel (cluster-scoped) of the catalog."""

    KIND: ClassVar[str] = "Model"

    api_version: str = "ai.deckhouse.io/v1alpha1"
    kind: str = "Model"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    status: CatalogModelStatus = Field(default_factory=CatalogModelStatus)
