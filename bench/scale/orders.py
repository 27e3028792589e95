"""The orders of the scale benchmark: a fixed mix of the Hub mirror's models over many namespaces.

Pure. ``orders(m, namespaces)`` returns ``m`` InferenceService objects, round-robin over the
namespaces ``scale-00`` .. and over ``MIX`` by weight, so any prefix of the list has the same mix.
Gated models (the meta-llama ones) name the ``hf-token`` Secret of their namespace (``hf_secret``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from shared import names

Obj = dict[str, Any]
CLASS = "default-llm"
HF_SECRET = "hf-token"
MIRROR_TOKEN = "hf_mirror_test_token"  # standins.hub_mirror.server.DEFAULT_TOKEN


@dataclass(frozen=True)
class Model:
    repo: str
    endpoint: str  # Chat, Embeddings, Rerank (what the model's pipeline tag makes it)
    weight: int  # out of sum(m.weight for m in MIX)
    gated: bool = False


# 0.5B to 70B, Chat, Embeddings and Rerank; the safetensors models of standins/hub_data that the
# bundled default-llm class allows (no GGUF, at most 80B parameters).
MIX: tuple[Model, ...] = (
    Model("Qwen/Qwen2.5-0.5B-Instruct", "Chat", 5),
    Model("Qwen/Qwen2.5-7B-Instruct", "Chat", 3),
    Model("Qwen/Qwen3-8B-FP8", "Chat", 2),
    Model("microsoft/Phi-3-mini-4k-instruct", "Chat", 2),
    Model("meta-llama/Llama-3.1-8B-Instruct", "Chat", 2, gated=True),
    Model("Qwen/Qwen2.5-32B-Instruct-AWQ", "Chat", 1),
    Model("meta-llama/Llama-3.1-70B-Instruct", "Chat", 1, gated=True),
    Model("BAAI/bge-large-en-v1.5", "Embeddings", 2),
    Model("sentence-transformers/all-MiniLM-L6-v2", "Embeddings", 1),
    Model("BAAI/bge-reranker-v2-m3", "Rerank", 1),
)


def schedule(mix: tuple[Model, ...] = MIX) -> tuple[Model, ...]:
    """One round of the mix, interleaved (smooth weighted round-robin), length ``sum(weights)``."""
    total = sum(m.weight for m in mix)
    current = [0] * len(mix)
    out: list[Model] = []
    for _ in range(total):
        for i, m in enumerate(mix):
            current[i] += m.weight
        best = max(range(len(mix)), key=lambda i: current[i])
        current[best] -= total
        out.append(mix[best])
    return tuple(out)


def namespace(i: int) -> str:
    return f"scale-{i:02d}"


def order(ns: str, name: str, model: Model) -> Obj:
    spec_model: Obj = {"src": "HuggingFace", "ref": {"name": model.repo}}
    if model.gated:
        spec_model["authSecretRef"] = {"name": HF_SECRET}
    return {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"inferenceServiceClassName": CLASS, "model": spec_model},
    }


def orders(m: int, namespaces: int) -> list[Obj]:
    rounds = schedule()
    out = []
    for i in range(m):
        model = rounds[i % len(rounds)]
        short = model.repo.split("/")[1].lower().replace(".", "-")[:30].strip("-")
        out.append(order(namespace(i % namespaces), f"{short}-{i:05d}", model))
    return out


def namespace_objects(namespaces: int) -> list[Obj]:
    """The namespaces, each with the Hub token Secret its gated orders name."""
    token = base64.b64encode(MIRROR_TOKEN.encode()).decode()
    out: list[Obj] = []
    for i in range(namespaces):
        ns = namespace(i)
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": HF_SECRET, "namespace": ns},
                "type": "Opaque",
                "data": {names.DEFAULT_HF_TOKEN_KEY: token},
            }
        )
    return out


def distinct_models(objs: list[Obj]) -> int:
    return len({o["spec"]["model"]["ref"]["name"] for o in objs})
