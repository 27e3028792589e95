"""How much accelerator memory a model needs: weights, KV cache for a minimum context, overhead.

Pure. The formula and its sources are in docs/memory-estimate.md; the planner calls
``estimate_memory`` once per order and ``per_device_need`` / ``max_model_len`` per candidate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.model_facts.facts import ModelFacts
from shared.quantity import GIB

MIN_SERVING_CONTEXT = 4096
"""The context every plan must hold in its KV cache: min(4096, the model's context length)."""

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
NON_TORCH_BYTES = int(1.8 * GIB)  # CUDA context, cuBLAS workspaces, per device (vLLM's non_torch_memory)
NON_TORCH_TP_BYTES = int(3.6 * GIB)  # the same with NCCL and custom all-reduce buffers, when TP > 1
ACTIVATION_BYTES_4K = int(1.26 * GIB)  # activation peak of a hidden size 4096 model at vLLM's default batch
FALLBACK_KV_BYTES_PER_BILLION = 16 * 1024  # KV bytes per token per billion parameters, when config is missing

# Bytes per element as vLLM holds it: its default dtype "auto" serves float32 checkpoints in
# float16, so F32/F64 tensors cost 2 bytes; integer tensors (packed int4 weights, zeros) keep theirs.
_DTYPE_BYTES = {
    "F64": 2.0,
    "I64": 8.0,
    "F32": 2.0,
    "I32": 4.0,
    "U32": 4.0,
    "BF16": 2.0,
    "F16": 2.0,
    "I16": 2.0,
    "U16": 2.0,
    "F8_E4M3": 1.0,
    "F8_E5M2": 1.0,
    "F8_E8M0": 1.0,
    "I8": 1.0,
    "U8": 1.0,
    "BOOL": 1.0,
    "F4": 0.5,
}
_DISK_BYTES = {"F64": 8.0, "F32": 4.0}
_TORCH_DTYPE_BYTES = {"float32": 2.0, "float16": 2.0, "bfloat16": 2.0, "float": 2.0, "half": 2.0}


@dataclass(frozen=True)
class MemoryEstimate:
    """The parts of a replica's accelerator memory, in bytes (before the utilization cap)."""

    weights: int
    kv_bytes_per_token: int
    min_context: int
    weights_source: str  # "safetensors dtypes" | "weight files" | "parameter count"
    hidden_size: int | None = None

    @property
    def kv_cache(self) -> int:
        return self.kv_bytes_per_token * self.min_context

    def overhead(self, devices: int) -> int:
        """Memory outside weights and KV cache on each device: non-torch memory and activation peak."""
        non_torch = NON_TORCH_TP_BYTES if devices > 1 else NON_TORCH_BYTES
        activation = ACTIVATION_BYTES_4K * (self.hidden_size or 4096) // 4096
        return non_torch + activation

    def per_device_need(self, devices: int, utilization: float) -> int:
        """Device memory each of ``devices`` tensor-parallel devices must have."""
        used = (self.weights + self.kv_cache) / devices + self.overhead(devices)
        return math.ceil(used / utilization)

    def max_model_len(
        self, *, device_bytes: int, devices: int, utilization: float, context_length: int
    ) -> int:
        """The longest context the KV cache left after weights and overhead holds, in 16-token blocks."""
        budget = device_bytes * utilization - self.weights / devices - self.overhead(devices)
        tokens = int(budget * devices // max(1, self.kv_bytes_per_token))
        return max(0, min(context_length, tokens // 16 * 16))


def weight_bytes(facts: ModelFacts) -> tuple[int, str]:
    """The bytes of the weights as loaded, and where the figure comes from.

    Exact per-dtype parameter counts from the safetensors headers win (packed int4 weights are
    I32 tensors there, so count x bytes is exact); then the size of the weight files (exact for
    GGUF); then parameter count x bytes per parameter for the dtype or quantization.
    """
    counts = facts.parameter_dtype_counts
    if counts and all(d.upper() in _DTYPE_BYTES for d in counts):
        return math.ceil(sum(n * _DTYPE_BYTES[d.upper()] for d, n in counts.items())), "safetensors dtypes"
    if facts.weights_bytes:
        if (facts.torch_dtype or "").lower() in ("float32", "float") and facts.quantization == "none":
            return facts.weights_bytes // 2, "weight files"
        return facts.weights_bytes, "weight files"
    return math.ceil(facts.parameter_count * bytes_per_parameter(facts)), "parameter count"


def disk_bytes(facts: ModelFacts) -> int:
    """The size of the weight files: what the model volume must hold."""
    if facts.weights_bytes:
        return facts.weights_bytes
    counts = facts.parameter_dtype_counts
    if counts and all(d.upper() in _DTYPE_BYTES for d in counts):
        return math.ceil(
            sum(n * _DISK_BYTES.get(d.upper(), _DTYPE_BYTES[d.upper()]) for d, n in counts.items())
        )
    served, _ = weight_bytes(facts)
    return served * 2 if (facts.torch_dtype or "").lower() in ("float32", "float") else served


def bytes_per_parameter(facts: ModelFacts) -> float:
    """Bytes per parameter for the quantization, including group scales and zeros."""
    method = facts.quantization.lower()
    bits = facts.quantization_bits
    if method in ("awq", "gptq", "compressed-tensors", "bitsandbytes") and (bits or 4) < 8:
        group = facts.quantization_group_size or 128
        if group <= 0:  # per-channel
            group = 4096
        # packed weight + one fp16 scale and one packed zero point per group
        return (bits or 4) / 8 + (2 + (bits or 4) / 8) / group
    if method in ("fp8", "int8", "w8a8") or (method != "none" and bits == 8):
        return 1.0 + 2.0 / 128  # one byte, plus per-channel scales rounded up
    if method == "gguf":
        return (bits or 5) / 8 * 1.06  # k-quants keep super-block scales: about 6% over the nominal bits
    return _TORCH_DTYPE_BYTES.get((facts.torch_dtype or "bfloat16").lower(), 2.0)


def kv_bytes_per_token(facts: ModelFacts) -> int:
    """2 x layers x KV heads x head dim x KV dtype bytes (the served dtype, also for quantized weights);
    MLA caches one latent instead of a K and a V: layers x latent width x bytes."""
    layers, heads = facts.num_hidden_layers, facts.num_attention_heads
    kv_heads = facts.num_key_value_heads or heads
    head_dim = facts.head_dim or (facts.hidden_size // heads if facts.hidden_size and heads else None)
    kv_dtype = _TORCH_DTYPE_BYTES.get((facts.torch_dtype or "bfloat16").lower(), 2.0)
    if layers and kv_heads and head_dim:
        return int((1 if facts.kv_latent else 2) * layers * kv_heads * head_dim * kv_dtype)
    return math.ceil(facts.parameter_count / 1e9 * FALLBACK_KV_BYTES_PER_BILLION)


def estimate_memory(facts: ModelFacts) -> MemoryEstimate:
    weights, source = weight_bytes(facts)
    context = min(MIN_SERVING_CONTEXT, facts.serving_context or MIN_SERVING_CONTEXT)
    return MemoryEstimate(
        weights=weights,
        kv_bytes_per_token=kv_bytes_per_token(facts),
        min_context=context,
        weights_source=source,
        hidden_size=facts.hidden_size,
    )
