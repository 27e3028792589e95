"""Rerankers built on a ``*ForCausalLM``: the ``--hf-overrides`` vLLM documents for them, or a refusal. Pure.

A reranker such as Qwen3-Reranker or bge-reranker-v2-gemma is a language model that scores a
(query, document) pair by the logits of a few tokens ("yes"/"no"). Under ``--convert classify``
vLLM can turn it into a ``*ForSequenceClassification`` while loading, but only when the config
says which tokens and how to combine them; without that the model fails to load. vLLM's docs
("Supported Models", pooling) give the overrides per model family:

- ``Qwen3ForCausalLM`` (Qwen3-Reranker): route to ``Qwen3ForSequenceClassification`` with the
  tokens ``no``, ``yes`` and ``is_original_qwen3_reranker`` (a 2-way softmax);
- ``GemmaForCausalLM`` (bge-reranker-v2-gemma): ``GemmaForSequenceClassification`` with the token
  ``Yes`` and ``method: no_post_processing``;
- ``Qwen2ForCausalLM`` (mxbai-rerank-v2): ``Qwen2ForSequenceClassification`` with the tokens
  ``0``, ``1`` and ``method: from_2_way_softmax``.

The overrides are keyed by architecture: the published rerankers of each family use these tokens.
Any other ``*ForCausalLM`` ordered as a Rerank endpoint has no documented conversion, so the planner
refuses it (NoCompatibleRuntimeAvailable) instead of rendering a launch that fails to load.
A reranker already converted (``*ForSequenceClassification``) needs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from controller.model_facts.facts import ModelFacts

HF_OVERRIDES: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "Qwen3ForCausalLM": {
            "architectures": ["Qwen3ForSequenceClassification"],
            "classifier_from_token": ["no", "yes"],
            "is_original_qwen3_reranker": True,
        },
        "GemmaForCausalLM": {
            "architectures": ["GemmaForSequenceClassification"],
            "classifier_from_token": ["Yes"],
            "method": "no_post_processing",
        },
        "Qwen2ForCausalLM": {
            "architectures": ["Qwen2ForSequenceClassification"],
            "classifier_from_token": ["0", "1"],
            "method": "from_2_way_softmax",
        },
    }
)
"""Architecture -> the ``--hf-overrides`` that make vLLM load it as a classifier (vLLM's docs)."""


def is_causal_lm_reranker(facts: ModelFacts, endpoint_type: str) -> bool:
    """A Rerank endpoint for a model whose architecture is a language model (``*ForCausalLM``)."""
    return endpoint_type == "Rerank" and (facts.architecture or "").endswith("ForCausalLM")


def hf_overrides(facts: ModelFacts, endpoint_type: str) -> str | None:
    """The ``--hf-overrides`` value (compact JSON) for a ``*ForCausalLM`` reranker of a known family;
    None for everything else."""
    if not is_causal_lm_reranker(facts, endpoint_type):
        return None
    overrides = HF_OVERRIDES.get(facts.architecture or "")
    return json.dumps(overrides, separators=(",", ":")) if overrides is not None else None


def unsupported_reranker(facts: ModelFacts, endpoint_type: str) -> str | None:
    """The refusal (a sentence) for a ``*ForCausalLM`` reranker without documented overrides; else None."""
    if not is_causal_lm_reranker(facts, endpoint_type) or facts.architecture in HF_OVERRIDES:
        return None
    known = ", ".join(sorted(HF_OVERRIDES))
    return (
        f"{facts.name} is a {facts.architecture} ordered as a Rerank endpoint; vLLM loads a language model "
        f"as a reranker only with the overrides it documents, known for {known}. "
        "Order a converted *ForSequenceClassification checkpoint of this reranker instead."
    )
