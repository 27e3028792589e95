"""The memory estimate: weights, KV cache, overhead, and the fallbacks when facts are missing."""

from __future__ import annotations

import pytest

from controller.model_facts.facts import ModelFacts
from controller.planner.estimate import (
    MIN_SERVING_CONTEXT,
    bytes_per_parameter,
    disk_bytes,
    estimate_memory,
    kv_bytes_per_token,
    weight_bytes,
)
from testkit.planner import (
    BGE_LARGE,
    LLAMA_8B,
    LLAMA_8B_GGUF,
    LLAMA_70B,
    QWEN3_8B_FP8,
    QWEN_32B_AWQ,
)


def test_safetensors_dtype_counts_give_the_exact_weight_bytes() -> None:
    weights, source = weight_bytes(QWEN_32B_AWQ)
    assert source == "safetensors dtypes"
    assert weights == 3_931_176_960 * 4 + 1_802_048_512 * 2


def test_the_awq_formula_from_the_parameter_count_is_close_to_the_exact_bytes() -> None:
    exact, _ = weight_bytes(QWEN_32B_AWQ)
    from_count, source = weight_bytes(QWEN_32B_AWQ.model_copy(update={"parameter_dtype_counts": {}}))
    assert source == "parameter count"
    # the formula quantizes everything; the checkpoint keeps embeddings and lm_head in fp16
    assert 0.8 * exact < from_count < exact


@pytest.mark.parametrize(
    ("facts", "low", "high"),
    [(LLAMA_8B, 2.0, 2.0), (QWEN3_8B_FP8, 1.0, 1.02), (QWEN_32B_AWQ, 0.5, 0.53), (BGE_LARGE, 2.0, 2.0)],
)
def test_bytes_per_parameter_follow_the_dtype_or_quantization(
    facts: ModelFacts, low: float, high: float
) -> None:
    assert low <= bytes_per_parameter(facts) <= high


def test_the_kv_cache_is_two_times_layers_kv_heads_head_dim_and_dtype_bytes() -> None:
    assert kv_bytes_per_token(LLAMA_8B) == 2 * 32 * 8 * 128 * 2
    assert kv_bytes_per_token(LLAMA_70B) == 2 * 80 * 8 * 128 * 2
    assert kv_bytes_per_token(BGE_LARGE) == 2 * 24 * 16 * (1024 // 16) * 2


def test_a_model_without_config_numbers_uses_the_fallback_per_billion_parameters() -> None:
    bare = LLAMA_8B.model_copy(
        update={"num_hidden_layers": None, "num_key_value_heads": None, "head_dim": None}
    )
    assert kv_bytes_per_token(bare) > 0
    assert kv_bytes_per_token(bare) == pytest.approx(kv_bytes_per_token(LLAMA_8B), rel=0.1)


def test_the_minimum_context_is_4096_or_the_models_own_when_shorter() -> None:
    assert estimate_memory(LLAMA_8B).min_context == MIN_SERVING_CONTEXT
    assert estimate_memory(BGE_LARGE).min_context == 512


def test_a_gguf_model_counts_its_file_size() -> None:
    weights, source = weight_bytes(LLAMA_8B_GGUF)
    assert (weights, source) == (LLAMA_8B_GGUF.weights_bytes, "weight files")


def test_a_float32_checkpoint_is_served_in_16_bits_but_stored_in_32() -> None:
    served, _ = weight_bytes(BGE_LARGE)
    assert disk_bytes(BGE_LARGE) == 2 * served


def test_tensor_parallel_splits_weights_and_cache_but_not_the_fixed_overhead() -> None:
    est = estimate_memory(LLAMA_70B)
    one, two, four = (est.per_device_need(n, 0.9) for n in (1, 2, 4))
    assert one > two > four
    assert two > one / 2


def test_the_max_model_len_is_what_the_memory_left_holds() -> None:
    est = estimate_memory(LLAMA_8B)
    need = est.per_device_need(1, 0.9)
    at_need = est.max_model_len(device_bytes=need, devices=1, utilization=0.9, context_length=131072)
    assert MIN_SERVING_CONTEXT - 16 <= at_need <= MIN_SERVING_CONTEXT + 16
    roomy = est.max_model_len(device_bytes=80 * 2**30, devices=1, utilization=0.9, context_length=131072)
    assert roomy > at_need
    assert roomy % 16 == 0
