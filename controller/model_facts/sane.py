"""Sane bounds for the numbers a repository states about itself. Pure.

A model's config.json, GGUF header and safetensors headers are written by whoever owns the
repository. Their numbers feed the memory estimate and the planner, so a zero, a negative or an
absurd value (``num_hidden_layers: -1000000``, ``10**400``) must stop at the door with a message
that names the file and the field, instead of planning a negative memory or raising
``OverflowError`` on every reconcile. The bounds are far above every published model (the largest
have about 130 layers, 128 heads, a hidden size of 25,600, 10 million tokens of context and 2
trillion parameters).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.model_facts.errors import ImplausibleModelError
from controller.model_facts.facts import ModelFacts

MAX_PARAMETERS = 10**14
MAX_BYTES = 2**50  # 1 PiB
MAX_CONTEXT = 2**28
MAX_DIM = 2**40  # one dimension of one tensor

CONFIG_BOUNDS: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, 4096),
    "num_attention_heads": (1, 16384),
    "num_key_value_heads": (1, 16384),
    "head_dim": (1, 65536),
    "hidden_size": (1, 2**20),
    "kv_lora_rank": (0, 2**20),
    "qk_rope_head_dim": (0, 65536),
    "max_position_embeddings": (1, MAX_CONTEXT),
    "n_positions": (1, MAX_CONTEXT),
    "max_sequence_length": (1, MAX_CONTEXT),
    "seq_length": (1, MAX_CONTEXT),
    "n_ctx": (1, MAX_CONTEXT),
    "sliding_window": (0, MAX_CONTEXT),
    "num_labels": (0, 2**20),
}
"""The config.json numbers the platform reads, and the range each must be in when it is an integer."""


def bounded(value: int, lo: int, hi: int, what: str) -> int:
    """``value`` when ``lo <= value <= hi``; else ImplausibleModelError naming ``what``."""
    if not lo <= value <= hi:
        shown = str(value) if abs(value) < 10**20 else f"a {len(str(abs(value)))}-digit number"
        raise ImplausibleModelError(f"{what} is {shown}; it must be between {lo} and {hi}.")
    return value


def check_config(cfg: Mapping[str, Any], source: str) -> None:
    """Every number of ``cfg`` (and of its ``text_config``) the platform reads is within its bounds;
    ``source`` names where ``cfg`` came from (``config.json``, the GGUF file)."""
    text = cfg.get("text_config")
    for prefix, part in (("", cfg), ("text_config.", text if isinstance(text, Mapping) else {})):
        for key, (lo, hi) in CONFIG_BOUNDS.items():
            value = part.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                bounded(value, lo, hi, f"`{prefix}{key}` of {source}")
    quant = cfg.get("quantization_config")
    if isinstance(quant, Mapping):
        for key in ("bits", "w_bit", "group_size", "q_group_size"):
            value = quant.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                bounded(value, -1, 2**20, f"`quantization_config.{key}` of {source}")


def check_facts(facts: ModelFacts) -> ModelFacts:
    """The derived facts are all positive and plausible (``facts`` itself); else ImplausibleModelError."""
    bounded(facts.parameter_count, 1, MAX_PARAMETERS, "The parameter count")
    for dtype, count in facts.parameter_dtype_counts.items():
        bounded(count, 0, MAX_PARAMETERS, f"The parameter count of dtype `{dtype}`")
    if facts.context_length is not None:
        bounded(facts.context_length, 1, MAX_CONTEXT, "The context length")
    if facts.max_seq_length is not None:
        bounded(facts.max_seq_length, 1, MAX_CONTEXT, "The sentence-transformers `max_seq_length`")
    if facts.weights_bytes is not None:
        bounded(facts.weights_bytes, 0, MAX_BYTES, "The weights' size")
    for name, size in facts.files.items():
        if size is not None:
            bounded(size, 0, MAX_BYTES, f"The size of file `{name}`")
    if facts.quantization_bits is not None:
        bounded(facts.quantization_bits, 1, 64, "The quantization's bits")
    if facts.quantization_group_size is not None:
        bounded(facts.quantization_group_size, 1, 2**20, "The quantization's group size")
    return facts
