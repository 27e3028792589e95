"""How a model's weights are quantized, from its ``quantization_config``. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.model_facts.config import config_int


@dataclass(frozen=True, slots=True)
class Quantization:
    method: str = "none"
    bits: int | None = None
    group_size: int | None = None


def quantization(qc: Mapping[str, Any] | None) -> Quantization:
    """The method, bits and group size of a ``quantization_config`` (none when absent)."""
    if not qc:
        return Quantization()
    method = str(qc.get("quant_method") or "unknown").lower()
    if method in ("awq", "gptq"):
        bits = config_int(qc.get("bits") or qc.get("w_bit"))
        group = config_int(qc.get("group_size") or qc.get("q_group_size"))
        return Quantization(method, bits, group if group and group > 0 else None)
    if method == "fp8":
        return Quantization("fp8", 8)
    if method == "compressed-tensors":
        for group in (qc.get("config_groups") or {}).values():
            weights = (group or {}).get("weights") or {}
            if weights:
                return Quantization(
                    method, config_int(weights.get("num_bits")), config_int(weights.get("group_size"))
                )
        return Quantization(method)
    if method == "bitsandbytes":
        return Quantization(method, 4 if qc.get("load_in_4bit") else 8)
    return Quantization(method, config_int(qc.get("bits")), config_int(qc.get("group_size")))
