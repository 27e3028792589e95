"""Small builders for table tests: make_order(**changes), make_class(**changes), make_facts(**changes)."""

from __future__ import annotations

from typing import Any

from controller.model_facts.facts import ModelFacts
from shared.api.inference_class import InferenceServiceClass
from shared.api.order import InferenceService


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        elif v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def order_dict(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {
            "name": "support-llm",
            "namespace": "support",
            "uid": "u-1",
            "generation": 1,
            "resourceVersion": "1",
        },
        "spec": {
            "inferenceServiceClassName": "default-llm",
            "model": {"src": "HuggingFace", "ref": {"name": "Qwen/Qwen2.5-32B-Instruct-AWQ"}},
        },
    }
    return _merge(base, changes)


def make_order(**changes: Any) -> InferenceService:
    return InferenceService.model_validate(order_dict(**changes))


def class_dict(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceServiceClass",
        "metadata": {"name": "default-llm", "generation": 1, "resourceVersion": "1"},
        "spec": {
            "modelPolicy": {"allowedEndpointTypes": ["Chat", "Embeddings", "Rerank"]},
            "placement": {"deviceClassNames": ["gpu.nvidia.com"]},
            "scaling": {"minReplicas": 1, "maxReplicas": 4, "priorityClassName": "inference-default"},
            "exposure": {"type": "ClusterLocal", "authentication": "Token"},
        },
    }
    return _merge(base, changes)


def make_class(**changes: Any) -> InferenceServiceClass:
    return InferenceServiceClass.model_validate(class_dict(**changes))


def make_facts(**changes: Any) -> ModelFacts:
    base: dict[str, Any] = {
        "source": "HuggingFace",
        "name": "Qwen/Qwen2.5-32B-Instruct-AWQ",
        "revision": "5c7cb76a268fc6cfbb9c4777eb24ba6e27f9ee6c",
        "architecture": "Qwen2ForCausalLM",
        "endpoint_types": ("Chat",),
        "format": "Safetensors",
        "quantization": "awq",
        "quantization_bits": 4,
        "parameter_count": 32_763_876_352,
        "context_length": 32768,
    }
    base.update(changes)
    return ModelFacts.model_validate(base)
