"""GGUF headers for the mirror's GGUF files: magic, version, counts and the metadata key/values.

Only the header is real (like the safetensors files): the key/values a runtime or the controller
reads to learn the architecture (``general.architecture``, ``<arch>.block_count``, attention head
counts, context length, ``general.file_type``). The tokenizer arrays and tensor infos that follow
in a real file are left out; everything after the header reads as zeros.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

GGUF_VERSION = 3
FILE_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 7, "Q2_K": 10, "Q3_K_M": 12, "Q4_K_S": 14, "Q4_K_M": 15,
              "Q5_K_M": 17, "Q6_K": 18, "IQ4_XS": 30, "BF16": 32}  # fmt: skip
"""llama.cpp's ``general.file_type`` values (``enum llama_ftype``) of the file types the mirror carries."""

_UINT32, _FLOAT32, _STRING = 4, 6, 8


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _kv(key: str, value: Any) -> bytes:
    if isinstance(value, str):
        return _string(key) + struct.pack("<I", _STRING) + _string(value)
    if isinstance(value, float):
        return _string(key) + struct.pack("<If", _FLOAT32, value)
    return _string(key) + struct.pack("<II", _UINT32, int(value))


def gguf_header(*, file_type: str, metadata: Mapping[str, Any], tensor_count: int) -> bytes:
    """The header of a GGUF v3 file of ``file_type`` (``Q4_K_M``...) with these key/values."""
    items = {"general.file_type": FILE_TYPES[file_type.upper()], **metadata}
    body = b"".join(_kv(k, v) for k, v in items.items())
    return b"GGUF" + struct.pack("<IQQ", GGUF_VERSION, tensor_count, len(items)) + body
