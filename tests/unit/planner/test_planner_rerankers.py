"""Rerankers built on *ForCausalLM: vLLM's documented --hf-overrides under --convert classify, or a
clear NoCompatibleRuntimeAvailable at planning (controller.planner.rerankers)."""

from __future__ import annotations

import json
import pathlib

import pytest
import yaml

from controller.model_facts.facts import ModelFacts
from shared import reasons
from standins.runtime.vllm_flags import accepted_flags, image_version
from testkit.planner import BGE_RERANKER, LLAMA_8B, fleet_inventory, plan

BUNDLED_RECIPE = pathlib.Path(__file__).resolve().parents[3] / "deploy/base/platform/vllm.yaml"

# Qwen/Qwen3-Reranker-0.6B: Qwen3ForCausalLM, 28 layers, 16 heads, 8 KV heads, head_dim 128, hidden 1024.
QWEN3_RERANKER = ModelFacts(
    source="HuggingFace",
    name="Qwen/Qwen3-Reranker-0.6B",
    architecture="Qwen3ForCausalLM",
    endpoint_types=("Rerank",),
    parameter_count=595_776_512,
    parameter_dtype_counts={"BF16": 595_776_512},
    context_length=40960,
    torch_dtype="bfloat16",
    num_hidden_layers=28,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    hidden_size=1024,
)
BGE_GEMMA = QWEN3_RERANKER.model_copy(
    update={"name": "BAAI/bge-reranker-v2-gemma", "architecture": "GemmaForCausalLM", "context_length": 8192}
)
MXBAI_V2 = QWEN3_RERANKER.model_copy(
    update={"name": "mixedbread-ai/mxbai-rerank-base-v2", "architecture": "Qwen2ForCausalLM"}
)
LLAMA_RERANKER = QWEN3_RERANKER.model_copy(
    update={"name": "org/llama-reranker", "architecture": "LlamaForCausalLM"}
)

# vLLM's docs ("Supported Models", pooling), the commands that load the original checkpoints.
DOCUMENTED = {
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


def flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


@pytest.mark.parametrize("facts", [QWEN3_RERANKER, BGE_GEMMA, MXBAI_V2], ids=lambda f: f.name)
def test_a_causal_lm_reranker_is_launched_with_its_documented_overrides(facts: ModelFacts) -> None:
    outcome = plan(fleet_inventory(), facts)
    assert outcome.ok, outcome.message
    assert outcome.plan is not None
    args = outcome.plan.args
    assert (flag(args, "--runner"), flag(args, "--convert")) == ("pooling", "classify")
    overrides = flag(args, "--hf-overrides")
    assert overrides is not None and " " not in overrides  # one argument, compact JSON
    assert json.loads(overrides) == DOCUMENTED[facts.architecture or ""]


def test_another_causal_lm_reranker_is_refused_at_planning() -> None:
    outcome = plan(fleet_inventory(), LLAMA_RERANKER)
    assert outcome.reason == reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE
    assert not outcome.ok and outcome.plan is None
    for fragment in (
        "org/llama-reranker",
        "LlamaForCausalLM",
        "Rerank",
        "Qwen3ForCausalLM",
        "ForSequenceClassification",
    ):
        assert fragment in outcome.message
    assert outcome.message.endswith(".")


def test_a_converted_reranker_and_a_chat_model_get_no_overrides() -> None:
    for facts, endpoint in ((BGE_RERANKER, "Rerank"), (LLAMA_8B, "Chat"), (QWEN3_RERANKER, "Chat")):
        outcome = plan(fleet_inventory(), facts, endpoint_type=endpoint)
        assert outcome.ok, outcome.message
        assert outcome.plan is not None and "--hf-overrides" not in outcome.plan.args


def test_the_bundled_vllm_accepts_the_flag() -> None:
    bundled = yaml.safe_load(BUNDLED_RECIPE.read_text())["spec"]
    version = image_version(bundled["image"])
    assert version is not None
    assert "--hf-overrides" in accepted_flags(version)
