"""Small builders of raw objects and AdmissionReviews for the webhook tests."""

from __future__ import annotations

import copy
from typing import Any

from shared import runtime_images

UNSET = object()


def with_changes(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``base`` with each dotted path in ``changes`` set (or removed when the value is UNSET)."""
    out = copy.deepcopy(base)
    for dotted, value in changes.items():
        parent = out
        *parents, last = dotted.split(".")
        for part in parents:
            parent = parent.setdefault(part, {})
        if value is UNSET:
            parent.pop(last, None)
        else:
            parent[last] = value
    return out


def make_order(**changes: Any) -> dict[str, Any]:
    """A valid Hugging Face order; ``changes`` use ``__`` for dots: ``spec__model__src="Catalog"``."""
    base = {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {"name": "support-llm", "namespace": "support"},
        "spec": {
            "inferenceServiceClassName": "default-llm",
            "model": {
                "src": "HuggingFace",
                "ref": {"name": "Qwen/Qwen2.5-32B-Instruct-AWQ", "revision": "main"},
                "authSecretRef": {"name": "hf-token", "key": "token"},
            },
        },
    }
    return with_changes(base, {k.replace("__", "."): v for k, v in changes.items()})


def make_catalog_order(**changes: Any) -> dict[str, Any]:
    base = make_order(spec__model={"src": "Catalog", "ref": {"kind": "ClusterModel", "name": "qwen-7b"}})
    return with_changes(base, {k.replace("__", "."): v for k, v in changes.items()})


def make_class(**changes: Any) -> dict[str, Any]:
    base = {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceServiceClass",
        "metadata": {"name": "default-llm"},
        "spec": {
            "modelPolicy": {
                "allowedEndpointTypes": ["Chat", "Embeddings", "Rerank"],
                "allowedSources": ["HuggingFace", "Catalog"],
                "allowedFormats": ["Safetensors"],
                "parameterCount": {"min": "500M", "max": "80B"},
            },
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com", "mig.nvidia.com"],
                "selector": 'device.attributes["gpu.nvidia.com"].productName.matches("H100|A100|L40S")',
                "sharingModes": ["Exclusive", "MIG", "TimeSlicing"],
                "maxAcceleratorsPerReplica": 8,
            },
            "scaling": {"minReplicas": 1, "maxReplicas": 4, "priorityClassName": "inference-default"},
            "exposure": {"type": "ClusterLocal", "authentication": "Token"},
            "recipes": ["vllm"],
        },
    }
    return with_changes(base, {k.replace("__", "."): v for k, v in changes.items()})


def make_recipe(**changes: Any) -> dict[str, Any]:
    base = {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceRecipe",
        "metadata": {"name": "vllm"},
        "spec": {
            "runtime": "vLLM",
            "image": runtime_images.pinned().image,
            "endpointTypes": ["Chat", "Embeddings", "Rerank"],
            "formats": ["Safetensors"],
            "architectures": ["*"],
            "quantizations": [
                {"method": "none", "minComputeCapability": "7.0"},
                {"method": "awq", "minComputeCapability": "7.5"},
                {"method": "fp8", "minComputeCapability": "8.9"},
            ],
            "gpuMemoryUtilization": 0.9,
            "extraArgs": [],
        },
    }
    return with_changes(base, {k.replace("__", "."): v for k, v in changes.items()})


def make_review(
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    kind: str | None = None,
    uid: str = "0b7f6c1e-1b2a-4c33-9c7d-3f1e2d4c5b6a",
    group: str = "ai.deckhouse.io",
    version: str = "v1alpha1",
    sub_resource: str | None = None,
) -> dict[str, Any]:
    """An AdmissionReview as the API server sends it."""
    kind = kind or (obj or {}).get("kind", "InferenceService")
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": f"{str(kind).lower()}s"},
        "operation": operation,
        "userInfo": {"username": "alice"},
        "object": obj,
        "oldObject": obj if operation == "UPDATE" else None,
        "dryRun": False,
    }
    if sub_resource:
        request["subResource"] = sub_resource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
