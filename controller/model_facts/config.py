"""Numbers read from a model's config.json (or the config.json-style mapping made from a GGUF header). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_ROBERTA_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "xlm-roberta-xl"})
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")
_DTYPE_TO_TORCH = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}


def config_int(value: Any) -> int | None:
    """``value`` when it is a JSON integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def context_length(config: Mapping[str, Any], gguf: Mapping[str, Any]) -> int | None:
    """The first context key of config.json, minus the padding offset for RoBERTa-family encoders;
    else the model info's ``gguf.context_length``; the ``sliding_window`` only when nothing else is known."""
    for key in _CONTEXT_KEYS:
        value = config_int(config.get(key))
        if value:
            pad = config_int(config.get("pad_token_id"))
            if (
                key == "max_position_embeddings"
                and config.get("model_type") in _ROBERTA_TYPES
                and pad is not None
            ):
                value -= pad + 1  # RoBERTa positions start after the padding index
            return value
    return config_int(gguf.get("context_length")) or config_int(config.get("sliding_window"))


def torch_dtype(config: Mapping[str, Any], dtype_counts: Mapping[str, int]) -> str | None:
    """``torch_dtype`` (or ``dtype``) of config.json, else the float dtype holding most parameters."""
    value = config.get("torch_dtype") or config.get("dtype")
    if isinstance(value, str):
        return value.removeprefix("torch.")
    floats = {d: n for d, n in dtype_counts.items() if d in _DTYPE_TO_TORCH}
    return _DTYPE_TO_TORCH[max(floats, key=lambda d: floats[d])] if floats else None
