"""What the differential oracle knows of models, recipes and vLLM, written from the documents.

Nothing here imports the planner's estimate, recipe, placement, volume or vLLM code: a bug there
shows as a difference with the oracle, not on both sides. The sources:

- memory (``OracleEstimate``): docs/memory-estimate.md, "The formula" and "cpu, memory and model
  volume". The overhead figures are vLLM's own memory profile of Llama-3-8B, published in
  vllm-project/vllm#10511 (1.79 GiB non-torch memory on one device, 3.58 GiB per device at TP=2,
  1.26 GiB activation peak at hidden size 4096), rounded as the document says (1.8 and 3.6 GiB);
- the model volume: docs/memory-estimate.md, "The model volume" (files x 1.1 + 1 GiB, in whole
  GiB; without a file list, the weights on disk + 64 MiB);
- recipes: the InferenceRecipe of spec api.md section 2 and docs/admin-guide.md "Recipes";
- vLLM's arguments: docs/admin-guide.md "Recipes" (which flags, the API key never one of them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from controller.model_facts.facts import ModelFacts
from shared import names
from shared.api.recipe import InferenceRecipe
from shared.cel import Semver

GIB, MIB = 2**30, 2**20

NON_TORCH = int(1.8 * GIB)  # vllm#10511: 1.79 GiB on one device
NON_TORCH_TP = int(3.6 * GIB)  # vllm#10511: 3.58 GiB per device at TP=2
ACTIVATION_AT_4096 = int(1.26 * GIB)  # vllm#10511: activation peak, hidden size 4096
MIN_CONTEXT = 4096  # the context every plan holds: min(4096, the model's context length)
DEFAULT_UTILIZATION = 0.9
KV_PER_BILLION = 16 * 1024  # KV bytes per token per billion parameters when the config is missing

# Bits per element of each safetensors dtype.
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "F4": 4,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "F64": 64,
}  # fmt: skip
WIDE_FLOATS = ("F32", "F64")  # served as float16 by vLLM's --dtype auto


def served_bytes(dtype: str) -> float:
    """Bytes of one element as vLLM holds it: wide floats in float16, everything else as stored."""
    return 2.0 if dtype in WIDE_FLOATS else DTYPE_BITS[dtype] / 8


def per_parameter(facts: ModelFacts) -> float:
    """Bytes per parameter for a model known only by its count (the table of docs/memory-estimate.md)."""
    method, bits = facts.quantization.lower(), facts.quantization_bits
    if method in ("awq", "gptq", "compressed-tensors", "bitsandbytes") and (bits or 4) < 8:
        b = bits or 4
        g = facts.quantization_group_size or 128
        g = 4096 if g <= 0 else g  # per-channel: one scale per row
        return b / 8 + (2 + b / 8) / g
    if method in ("fp8", "int8", "w8a8") or (method != "none" and bits == 8):
        return 1 + 2 / 128
    if method == "gguf":
        return (bits or 5) / 8 * 1.06
    return 2.0  # bf16 / fp16, and fp32 served as fp16


def weights(facts: ModelFacts) -> int:
    counts = {d.upper(): n for d, n in facts.parameter_dtype_counts.items()}
    if counts and all(d in DTYPE_BITS for d in counts):
        return math.ceil(sum(n * served_bytes(d) for d, n in counts.items()))
    if facts.weights_bytes:
        fp32 = (facts.torch_dtype or "").lower() in ("float32", "float") and facts.quantization == "none"
        return facts.weights_bytes // 2 if fp32 else facts.weights_bytes
    return math.ceil(facts.parameter_count * per_parameter(facts))


def on_disk(facts: ModelFacts) -> int:
    """The weight files' bytes: the listed size, else the stored dtypes' bytes, else twice fp32's."""
    if facts.weights_bytes:
        return facts.weights_bytes
    counts = {d.upper(): n for d, n in facts.parameter_dtype_counts.items()}
    if counts and all(d in DTYPE_BITS for d in counts):
        return math.ceil(sum(n * DTYPE_BITS[d] / 8 for d, n in counts.items()))
    fp32 = (facts.torch_dtype or "").lower() in ("float32", "float")
    return weights(facts) * 2 if fp32 else weights(facts)


def model_volume(facts: ModelFacts) -> str:
    sizes = list(facts.files.values())
    files = (
        sum(s for s in sizes if s is not None) if sizes and None not in sizes else on_disk(facts) + 64 * MIB
    )
    return f"{max(1, math.ceil((math.ceil(files * 1.1) + GIB) / GIB))}Gi"


def kv_per_token(facts: ModelFacts) -> int:
    """2 (K and V; 1 for an MLA latent) x layers x KV heads x head dim x 2 bytes."""
    layers, heads = facts.num_hidden_layers, facts.num_attention_heads
    kv_heads = facts.num_key_value_heads or heads
    head_dim = facts.head_dim or (facts.hidden_size // heads if facts.hidden_size and heads else None)
    if layers and kv_heads and head_dim:
        return (1 if facts.kv_latent else 2) * layers * kv_heads * head_dim * 2
    return math.ceil(facts.parameter_count / 1e9 * KV_PER_BILLION)


@dataclass(frozen=True)
class OracleEstimate:
    weights: int
    kv_per_token: int
    context: int  # the minimum serving context
    hidden_size: int

    @classmethod
    def of(cls, facts: ModelFacts) -> OracleEstimate:
        context = min(MIN_CONTEXT, facts.context_length or MIN_CONTEXT)
        return cls(weights(facts), kv_per_token(facts), context, facts.hidden_size or 4096)

    @property
    def kv_cache(self) -> int:
        return self.kv_per_token * self.context

    def overhead(self, devices: int) -> int:
        return (NON_TORCH_TP if devices > 1 else NON_TORCH) + ACTIVATION_AT_4096 * self.hidden_size // 4096

    def need(self, devices: int, utilization: float) -> int:
        """need(n) = ((weights + kv_cache) / n + non_torch(n) + activation) / utilization."""
        return math.ceil(((self.weights + self.kv_cache) / devices + self.overhead(devices)) / utilization)

    def max_len(self, device_bytes: int, devices: int, utilization: float, context_length: int) -> int:
        """What is left for the KV cache, in tokens, in 16-token blocks, capped at the context length."""
        left = device_bytes * utilization - self.weights / devices - self.overhead(devices)
        tokens = int(left * devices // max(1, self.kv_per_token))
        return max(0, min(context_length, tokens // 16 * 16))


# --- recipes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """A recipe that serves the model, and the least compute capability it needs for the model's method."""

    recipe: InferenceRecipe
    least: Semver | None  # None: the recipe does not list the method

    @property
    def name(self) -> str:
        return self.recipe.metadata.name

    @property
    def utilization(self) -> float:
        return self.recipe.spec.gpu_memory_utilization or DEFAULT_UTILIZATION

    def runs_on(self, capability: Semver | None) -> bool:
        return self.least is not None and capability is not None and not capability < self.least


def method_of(facts: ModelFacts) -> str:
    return "gguf" if facts.format == "GGUF" else (facts.quantization or "none").lower()


def in_preference(
    recipes: Sequence[InferenceRecipe], preference: Sequence[str] | None
) -> list[InferenceRecipe]:
    """The class's ``recipes`` in its order (unknown names skipped); none named: all, by name."""
    by_name = {r.metadata.name: r for r in recipes}
    if not preference:
        return [by_name[n] for n in sorted(by_name)]
    seen: list[str] = []
    for n in preference:
        if n in by_name and n not in seen:
            seen.append(n)
    return [by_name[n] for n in seen]


def fits(recipes: Sequence[InferenceRecipe], facts: ModelFacts, endpoint_type: str) -> list[Fit]:
    method = method_of(facts)
    out: list[Fit] = []
    for recipe in recipes:
        spec = recipe.spec
        architectures = spec.architectures or ["*"]
        if endpoint_type not in spec.endpoint_types or facts.format not in spec.formats:
            continue
        if "*" not in architectures and facts.architecture not in architectures:
            continue
        if facts.requires_remote_code and not spec.trust_remote_code:
            continue
        listed = {q.method.lower(): q.min_compute_capability for q in spec.quantizations or []}
        if not spec.quantizations:
            listed = {"none": "7.0"}
        if method == "gguf" and "gguf" not in listed and "GGUF" in spec.formats:
            listed["gguf"] = listed.get("none", "7.0")
        least = listed.get(method)
        out.append(Fit(recipe, Semver.parse(least, normalize=True) if least else None))
    return out


# --- vLLM ------------------------------------------------------------------------------------------


def vllm_serve_args(
    facts: ModelFacts,
    *,
    endpoint_type: str,
    served_name: str,
    tensor_parallel: int,
    max_len: int,
    utilization: float,
    extra: Sequence[str],
) -> list[str]:
    """``vllm serve`` arguments as docs/admin-guide.md lists them, in that order, extraArgs last."""
    model = f"{names.MODEL_MOUNT_PATH}/model"
    ggufs = sorted(f for f in facts.files if f.endswith(".gguf"))
    if facts.format == "GGUF" and len(ggufs) == 1:
        model = f"{model}/{ggufs[0]}"
    args = ["--model", model, "--served-model-name", served_name, "--host", "0.0.0.0"]
    args += ["--port", str(names.RUNTIME_PORT), "--tensor-parallel-size", str(tensor_parallel)]
    args += ["--max-model-len", str(max_len), "--gpu-memory-utilization", f"{utilization:g}"]
    if method_of(facts) == "gguf":
        args += ["--quantization", "gguf"]
    if facts.requires_remote_code:
        args.append("--trust-remote-code")
    convert = {"Embeddings": "embed", "Rerank": "classify"}.get(endpoint_type)
    if convert is not None:
        args += ["--runner", "pooling", "--convert", convert]
    tls = names.TLS_MOUNT_PATH
    args += ["--ssl-certfile", f"{tls}/tls.crt", "--ssl-keyfile", f"{tls}/tls.key", "--enable-ssl-refresh"]
    return args + list(extra)
