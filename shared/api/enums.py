"""The closed vocabularies of the API, as Literal types (the wire value is the Python value)."""

from __future__ import annotations

from typing import Literal, get_args

ModelSource = Literal["HuggingFace", "Catalog"]
CatalogKind = Literal["ClusterModel", "Model"]
EndpointType = Literal["Chat", "Embeddings", "Rerank"]
ModelFormat = Literal["Safetensors", "GGUF"]
Phase = Literal["Pending", "Ready", "Degraded", "Failed"]
ExposureType = Literal["ClusterLocal", "External"]
Authentication = Literal["Token", "None"]
PlacementMode = Literal["SingleDevice", "TensorParallel", "MultiNode"]
SharingMode = Literal["Exclusive", "MIG", "TimeSlicing", "MPS"]
Runtime = Literal["vLLM"]
ScalingMetric = Literal["QueueDepth", "KVCacheUtilization", "RunningRequests"]
ConditionStatus = Literal["True", "False", "Unknown"]

MODEL_SOURCES: tuple[str, ...] = get_args(ModelSource)
CATALOG_KINDS: tuple[str, ...] = get_args(CatalogKind)
ENDPOINT_TYPES: tuple[str, ...] = get_args(EndpointType)
MODEL_FORMATS: tuple[str, ...] = get_args(ModelFormat)
PHASES: tuple[str, ...] = get_args(Phase)
EXPOSURE_TYPES: tuple[str, ...] = get_args(ExposureType)
AUTHENTICATIONS: tuple[str, ...] = get_args(Authentication)
SHARING_MODES: tuple[str, ...] = get_args(SharingMode)
RUNTIMES: tuple[str, ...] = get_args(Runtime)
SCALING_METRICS: tuple[str, ...] = get_args(ScalingMetric)
