"""GGUF repositories: which file is served, what its name and its header say. Pure.

The header parser reads the metadata key/values at the start of a GGUF (v2/v3) file, as llama.cpp
writes them: magic ``GGUF``, a uint32 version, uint64 tensor and key/value counts, then each key
(a uint64-length string), a uint32 value type and the value. ``controller.modelhub.client`` fetches only the
first bytes of the served file, so key/values cut off at the end are left out.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from typing import Any

from controller.model_facts.errors import ImplausibleModelError, ModelFactsError
from controller.model_facts.quantization import Quantization

GGUF_PREFERENCE = ("Q4_K_M", "Q4_K_S", "Q4_0", "Q5_K_M", "Q8_0")
"""Which file of a GGUF repository is served when it has several: the first of these, else the smallest."""

GGUF_ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen2moe": "Qwen2MoeForCausalLM",
    "phi3": "Phi3ForCausalLM",
    "gemma": "GemmaForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "gemma3": "Gemma3ForCausalLM",
    "falcon": "FalconForCausalLM",
    "starcoder2": "Starcoder2ForCausalLM",
    "deepseek2": "DeepseekV2ForCausalLM",
}
"""``general.architecture`` of a GGUF header -> the transformers architecture name."""

_GGUF_TYPE = re.compile(r"(?i)(?:^|[-_.])((?:I?Q)(\d)(?:_[A-Z0-9]+)*|B?F16|F32)(?:[-_.]|$)")
_GGUF_PART = re.compile(r"-\d{5}-of-\d{5}(?=\.gguf$)")
_GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


# ---- files


def pick_gguf(files: Mapping[str, int | None]) -> tuple[str, int | None]:
    """The GGUF file to serve (``GGUF_PREFERENCE``, else the smallest) and its size over all parts.

    vLLM loads a single-file GGUF model only (its GGUF page: merge a split file with ``gguf-split``
    first), so files split in parts (``-00001-of-00003.gguf``) are never chosen; a repository that
    has only split files raises ``ModelFactsError``."""
    parts: dict[str, list[str]] = {}
    for name in files:
        if name.endswith(".gguf"):
            parts.setdefault(_GGUF_PART.sub("", name), []).append(name)
    if not parts:
        raise ModelFactsError("no GGUF file")
    groups = {base: names for base, names in parts.items() if len(names) == 1 and names[0] == base}
    if not groups:
        raise ModelFactsError(
            f"every GGUF file of this repository is split in parts ({sorted(parts)[0]} and others); "
            "vLLM loads single-file GGUF models only"
        )

    def size(base: str) -> int | None:
        sizes = [files[part] for part in groups[base]]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)

    chosen = None
    for kind in GGUF_PREFERENCE:
        matches = sorted(b for b in groups if (gguf_type(b) or "").upper() == kind)
        if matches:
            chosen = matches[0]
            break
    if chosen is None:
        chosen = min(groups, key=lambda b: (size(b) or 0, b))
    return chosen, size(chosen)


def gguf_parts(files: Mapping[str, Any], chosen: str) -> list[str]:
    """The file names of the GGUF file ``chosen`` (as ``pick_gguf`` names it), first part first."""
    return sorted(name for name in files if name.endswith(".gguf") and _GGUF_PART.sub("", name) == chosen)


def gguf_type(filename: str) -> str | None:
    """The file type in a GGUF file name: ``Q4_K_M``, ``IQ4_XS``, ``F16``..."""
    stem = filename.rsplit("/", 1)[-1].removesuffix(".gguf")
    found = _GGUF_TYPE.findall(stem)
    return found[-1][0] if found else None


def gguf_quantization(filename: str) -> Quantization:
    """The quantization a GGUF file name states (``Q4_K_M`` -> 4 bits, ``F16`` -> 16)."""
    kind = (gguf_type(filename) or "").upper()
    if kind in ("F16", "BF16"):
        return Quantization("gguf", 16)
    if kind == "F32":
        return Quantization("gguf", 32)
    m = re.search(r"Q(\d)", kind)
    return Quantization("gguf", int(m.group(1)) if m else None)


# ---- header


def config_from_gguf(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """config.json-style numbers from GGUF key/values (``<arch>.block_count``...)."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str):
        return {}
    keys = {
        "num_hidden_layers": "block_count",
        "num_attention_heads": "attention.head_count",
        "num_key_value_heads": "attention.head_count_kv",
        "hidden_size": "embedding_length",
        "head_dim": "attention.key_length",
        "max_position_embeddings": "context_length",
    }
    out: dict[str, Any] = {}
    for name, key in keys.items():
        value = metadata.get(f"{arch}.{key}")
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


class _TruncatedError(Exception):
    pass


def parse_gguf_header(data: bytes) -> dict[str, Any]:
    """The metadata key/values at the start of a GGUF (v2/v3) file.

    ``data`` may be only the first bytes of the file: key/values cut off at its end are left out.
    Arrays (the tokenizer's) are returned as their length only.
    """
    if data[:4] != b"GGUF" or len(data) < 24:
        raise ModelFactsError("not a GGUF file: the header does not start with `GGUF`")
    version, _tensors, count = struct.unpack_from("<IQQ", data, 4)
    if version < 2:
        raise ModelFactsError(f"GGUF version {version} is not supported")
    out: dict[str, Any] = {}
    pos = 24
    try:
        for _ in range(count):
            key, pos = _string(data, pos)
            (vtype,) = _unpack("<I", data, pos)
            value, pos = _value(data, pos + 4, vtype)
            out[key] = value
    except _TruncatedError:
        pass
    return out


def _unpack(fmt: str, data: bytes, pos: int) -> tuple[Any, ...]:
    if pos + struct.calcsize(fmt) > len(data):
        raise _TruncatedError
    return struct.unpack_from(fmt, data, pos)


def _string(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = _unpack("<Q", data, pos)
    end = pos + 8 + n
    if end > len(data):
        raise _TruncatedError
    return data[pos + 8 : end].decode("utf-8", errors="replace"), end


GGUF_MAX_DEPTH = 4
"""Arrays nest at most this deep (llama.cpp writes flat arrays): a header of arrays of arrays is refused
before it can exhaust the stack."""


def _value(data: bytes, pos: int, vtype: int, depth: int = 0) -> tuple[Any, int]:
    if vtype in _GGUF_SCALARS:
        fmt = _GGUF_SCALARS[vtype]
        return _unpack(fmt, data, pos)[0], pos + struct.calcsize(fmt)
    if vtype == _GGUF_STRING:
        return _string(data, pos)
    if vtype == _GGUF_ARRAY:
        etype, n = _unpack("<IQ", data, pos)
        pos += 12
        if etype in _GGUF_SCALARS:
            end = pos + n * struct.calcsize(_GGUF_SCALARS[etype])
            if end > len(data):
                raise _TruncatedError
            return n, end
        if etype == _GGUF_ARRAY and depth + 1 >= GGUF_MAX_DEPTH:
            raise ImplausibleModelError(f"GGUF arrays nest more than {GGUF_MAX_DEPTH} deep in its header.")
        for _ in range(n):
            _, pos = _value(data, pos, etype, depth + 1)
        return n, pos
    raise ModelFactsError(f"unknown GGUF value type {vtype}")
