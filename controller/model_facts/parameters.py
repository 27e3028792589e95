"""Parameter counting: the *logical* count, as the model card states it. Pure.

From the safetensors headers every tensor counts its elements, except that packed integer weights
(AWQ/GPTQ ``qweight``, compressed-tensors ``weight_packed``, 4-bit bitsandbytes ``U8`` weights) count
``32 / bits`` (or 2) per element, and quantization side tensors (scales, zeros, ``g_idx``, FP8
scales) count nothing. Without headers: the published ``safetensors.total``, converted back the same
way for AWQ; for GGUF, ``gguf.total``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.model_facts.config import config_int
from controller.model_facts.errors import ModelFactsError
from controller.model_facts.quantization import Quantization
from shared.api.enums import ModelFormat

_SIDE_TENSOR_SUFFIXES = (
    ".qzeros",
    ".scales",
    ".g_idx",
    ".weight_scale",
    ".weight_scale_inv",
    ".input_scale",
    ".output_scale",
    ".weight_zero_point",
    ".weight_g_idx",
    ".weight_shape",
    ".k_scale",
    ".v_scale",
    ".absmax",
    ".quant_map",
    ".nested_absmax",
    ".nested_quant_map",
)
_PACKED_SUFFIXES = (".qweight", ".weight_packed")


@dataclass(frozen=True, slots=True)
class TensorMeta:
    """One tensor of a safetensors header."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.shape)


def dtype_counts(tensors: Sequence[TensorMeta] | None, info: Mapping[str, Any]) -> dict[str, int]:
    """Stored elements per safetensors dtype: from the headers when read, else as the model info
    publishes them (``safetensors.parameters``)."""
    if tensors:
        counts: dict[str, int] = {}
        for t in tensors:
            counts[t.dtype] = counts.get(t.dtype, 0) + t.count
        return counts
    published = (info.get("safetensors") or {}).get("parameters") or {}
    return {str(k): int(v) for k, v in published.items()}


def logical_parameter_count(tensors: Iterable[TensorMeta], quant: Quantization) -> int:
    """Parameters as the model card counts them: packed weights unpacked, quantization side tensors
    left out."""
    pack = 32 // (quant.bits or 4) if quant.bits and quant.bits < 32 else 8
    total = 0
    for t in tensors:
        if t.name.endswith(_SIDE_TENSOR_SUFFIXES) or ".quant_state." in t.name:
            continue
        if t.name.endswith(_PACKED_SUFFIXES) and t.dtype in ("I32", "U32"):
            total += t.count * pack
        elif quant.method == "bitsandbytes" and quant.bits == 4 and t.dtype == "U8":
            total += t.count * 2
        else:
            total += t.count
    return total


def parameter_count(
    *,
    fmt: ModelFormat,
    quant: Quantization,
    tensors: Sequence[TensorMeta] | None,
    dtype_counts: Mapping[str, int],
    gguf: Mapping[str, Any],
    repo_id: str,
) -> int:
    """The logical parameter count; ModelFactsError when the repository does not tell it."""
    if fmt == "GGUF":
        total = config_int(gguf.get("total"))
        if total:
            return total
        raise ModelFactsError(
            f"Repository `{repo_id}` does not publish the parameter count of its GGUF files."
        )
    if tensors:
        return logical_parameter_count(tensors, quant)
    if not dtype_counts:
        raise ModelFactsError(f"Repository `{repo_id}` has no readable safetensors metadata.")
    if quant.method == "awq" and quant.bits and quant.group_size and "I32" in dtype_counts:
        # I32 = W/pack (qweight) + W/(pack*group) (qzeros); F16 holds W/group scales besides the rest.
        pack, group = 32 // quant.bits, quant.group_size
        packed_weights = dtype_counts["I32"] * pack * group // (group + 1)
        others = sum(n for d, n in dtype_counts.items() if d != "I32") - packed_weights // group
        return packed_weights + others
    return sum(dtype_counts.values())
