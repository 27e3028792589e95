"""How much the controller reads from the Hub, and the parsing of what it read within those bounds. Pure.

Every document a repository serves is written by whoever owns it, so each is bounded before it is
parsed (``HubLimits``); beyond a bound the commit is refused (``ModelNotReady``, the message naming
the file and the bound) and the refusal is remembered (``controller.modelhub.client``). The defaults are far
above every published model: DeepSeek-V3's index is 9 MB with 91,000 tensors in 163 shards whose
headers add up to 12 MB; Llama-3.1-405B has 191 shards; a config.json is a few kB.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import Any

from controller.model_facts import TensorMeta
from controller.model_facts.sane import MAX_DIM, MAX_PARAMETERS
from controller.modelhub.exceptions import ModelNotReady

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class HubLimits:
    info_bytes: int = 16 * MiB
    """The model-info document (``/api/models/{repo}?blobs=True``, the file listing with sizes)."""
    files: int = 20_000
    """Files listed in the model info."""
    config_bytes: int = 4 * MiB
    """``config.json``."""
    index_bytes: int = 32 * MiB
    """``model.safetensors.index.json``."""
    shards: int = 1024
    """Safetensors files whose headers are read."""
    header_bytes: int = 16 * MiB
    """One safetensors header."""
    headers_total_bytes: int = 64 * MiB
    """The safetensors headers of one commit, together."""
    tensors: int = 400_000
    """Tensors in the headers of one commit."""
    json_depth: int = 32
    """How deep a JSON document nests."""
    body_seconds: float = 60.0
    """The longest one body may take to arrive (the timeout is per read: a trickle never trips it)."""


def too_large(filename: str, repo_id: str, what: str, limit: int | str) -> ModelNotReady:
    """The refusal of ``filename`` (a file name, or a phrase such as ``the model info``)."""
    shown = f"{limit / MiB:g} MiB" if isinstance(limit, int) and limit >= MiB else str(limit)
    return ModelNotReady(
        f"{_name(filename)} of repository `{repo_id}` is refused: {what} is beyond the controller's bound of {shown}."
    )


def _name(filename: str) -> str:
    return filename[0].upper() + filename[1:] if filename.startswith("the ") else f"`{filename}`"


def parse_json(data: bytes, *, filename: str, repo_id: str, limits: HubLimits) -> dict[str, Any]:
    """A JSON object from ``data``; ModelNotReady naming ``filename`` when it is not one, or nests
    deeper than ``limits.json_depth``."""
    try:
        doc = json.loads(data)
    except RecursionError:
        raise too_large(filename, repo_id, "its nesting", limits.json_depth) from None
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ModelNotReady(f"{_name(filename)} of repository `{repo_id}` is not valid JSON ({e}).") from None
    if not isinstance(doc, dict):
        raise ModelNotReady(f"{_name(filename)} of repository `{repo_id}` is not a JSON object.")
    if depth(doc, limits.json_depth) > limits.json_depth:
        raise too_large(filename, repo_id, "its nesting", limits.json_depth)
    return doc


def depth(doc: Any, limit: int) -> int:
    """How deep ``doc`` nests (a scalar is 0), counted without recursion, up to ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level) for child in children)
    return deepest


def shard_names(index: dict[str, Any], *, repo_id: str, limits: HubLimits) -> list[str]:
    """The shard files a safetensors index names, within ``limits.shards``."""
    weight_map = index.get("weight_map") or {}
    if not isinstance(weight_map, dict):
        raise ModelNotReady(
            f"`model.safetensors.index.json` of repository `{repo_id}` is refused: `weight_map` is not an object."
        )
    shards = sorted({v for v in weight_map.values() if isinstance(v, str)})
    if len(shards) > limits.shards:
        raise too_large(
            "model.safetensors.index.json",
            repo_id,
            f"its `weight_map` of {len(shards)} shards",
            limits.shards,
        )
    return shards


def header_length(prefix: bytes, *, filename: str, repo_id: str, limit: int) -> int:
    """The header length a safetensors file states in its first 8 bytes, within ``limit``."""
    if len(prefix) < 8:
        raise ModelNotReady(f"`{filename}` of repository `{repo_id}` is not a safetensors file (too short).")
    (n,) = struct.unpack("<Q", prefix[:8])
    if n > limit:
        raise too_large(filename, repo_id, f"its header of {n} bytes", limit)
    return int(n)


def parse_header(data: bytes, *, filename: str, repo_id: str, limits: HubLimits) -> list[TensorMeta]:
    """The tensors of one safetensors header (the JSON after the 8-byte length), every shape checked."""
    header = parse_json(data, filename=filename, repo_id=repo_id, limits=limits)
    tensors: list[TensorMeta] = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = entry.get("dtype") if isinstance(entry, dict) else None
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(dtype, str) or not isinstance(shape, list):
            raise ModelNotReady(
                f"`{filename}` of repository `{repo_id}` is refused: tensor `{name[:200]}` has no dtype or shape."
            )
        if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_DIM for d in shape) or (
            math.prod(shape) > MAX_PARAMETERS
        ):
            raise ModelNotReady(
                f"`{filename}` of repository `{repo_id}` is refused: the shape of tensor `{name[:200]}` "
                "is negative or implausibly large."
            )
        tensors.append(TensorMeta(name, dtype, tuple(shape)))
    return tensors
