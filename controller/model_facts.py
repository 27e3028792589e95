"""Hugging Face model info + config.json + safetensors tensor metadata -> ``ModelFacts``. Pure.

Called by ``controller.hub`` with what it fetched: the model-info document as the Hub API returns
it (``pipeline_tag``, ``tags``, ``library_name``, ``gated``, ``siblings``, ``safetensors``,
``config``, ``gguf``), the repository's ``config.json`` (None when it has none, e.g. GGUF repos),
the tensors listed in the safetensors headers (None when they were not read), and for GGUF
repositories the key/values of the served file's GGUF header (``parse_gguf_header``).

How each fact is derived:

- **Endpoint types**, first match wins: Rerank for the ``text-ranking`` pipeline or a
  ``*ForSequenceClassification`` cross-encoder (one output label); Embeddings for the
  ``feature-extraction`` / ``sentence-similarity`` pipelines or sentence-transformers files
  (``modules.json``, ``config_sentence_transformers.json``); Chat for ``*ForCausalLM`` /
  ``*ForConditionalGeneration``, the ``text-generation`` pipeline, or the ``conversational`` tag.
- **Format**: Safetensors when the repository has safetensors files, else GGUF when it has GGUF files.
- **Quantization**: ``quantization_config`` (awq, gptq, fp8, compressed-tensors, bitsandbytes),
  or, for GGUF, the file type in the chosen file's name (``Q4_K_M`` -> 4 bits).
- **Parameter count**: the *logical* count, as the model card states it. From the tensor headers:
  every tensor counts its elements, except that packed integer weights (AWQ/GPTQ ``qweight``,
  compressed-tensors ``weight_packed``, 4-bit bitsandbytes ``U8`` weights) count ``32 / bits`` (or
  2) per element, and quantization side tensors (scales, zeros, ``g_idx``, FP8 scales) count
  nothing. Without headers: the published ``safetensors.total``, converted back the same way for
  AWQ; for GGUF, ``gguf.total``. ``parameter_dtype_counts`` keeps the stored per-dtype counts
  (what the memory estimate needs).
- **Context length**: ``max_position_embeddings`` (or ``n_positions``, ``max_sequence_length``,
  ``seq_length``, ``n_ctx``), minus the padding offset for RoBERTa-family encoders; for GGUF
  ``<arch>.context_length`` of the header, else ``gguf.context_length`` of the model info; the
  ``sliding_window`` only when nothing else is known.
- **Config numbers** (layers, heads, KV heads, head dim, hidden size): config.json; for GGUF the
  header's ``<arch>.block_count``, ``<arch>.attention.head_count[_kv]``, ``<arch>.embedding_length``
  and ``<arch>.attention.key_length``.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.facts import ModelFacts
from controller.remote_code import needs_remote_code
from shared.api.enums import EndpointType, ModelFormat

ST_FILES = frozenset({"modules.json", "config_sentence_transformers.json"})
EMBEDDING_PIPELINES = frozenset({"feature-extraction", "sentence-similarity"})
CHAT_PIPELINES = frozenset({"text-generation", "image-text-to-text", "text2text-generation"})
GGUF_PREFERENCE = ("Q4_K_M", "Q4_K_S", "Q4_0", "Q5_K_M", "Q8_0")
"""Which file of a GGUF repository is served when it has several: the first of these, else the smallest."""

_ROBERTA_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "xlm-roberta-xl"})
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")
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
_GGUF_TYPE = re.compile(r"(?i)(?:^|[-_.])((?:I?Q)(\d)(?:_[A-Z0-9]+)*|B?F16|F32)(?:[-_.]|$)")
_GGUF_PART = re.compile(r"-\d{5}-of-\d{5}(?=\.gguf$)")
_GGUF_ARCHITECTURES = {
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
_DTYPE_TO_TORCH = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}


class ModelFactsError(ValueError):
    """The repository holds nothing the platform can serve (no safetensors or GGUF weights)."""


@dataclass(frozen=True, slots=True)
class TensorMeta:
    """One tensor of a safetensors header."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class Quantization:
    method: str = "none"
    bits: int | None = None
    group_size: int | None = None


def model_facts(
    *,
    repo_id: str,
    commit: str,
    info: Mapping[str, Any],
    config: Mapping[str, Any] | None,
    tensors: Sequence[TensorMeta] | None = None,
    gguf_metadata: Mapping[str, Any] | None = None,
) -> ModelFacts:
    """The facts of ``repo_id`` at ``commit``. Raises ``ModelFactsError`` for a repo without weights."""
    files = sibling_sizes(info)
    fmt = weight_format(files)
    if fmt is None:
        raise ModelFactsError(
            f"Repository `{repo_id}` has neither safetensors nor GGUF weight files at revision `{commit}`; "
            "only those formats can be served."
        )
    cfg: Mapping[str, Any] = config or info.get("config") or {}
    if fmt == "GGUF" and not config and gguf_metadata:
        cfg = {**cfg, **config_from_gguf(gguf_metadata)}
    text_cfg: Mapping[str, Any] = cfg.get("text_config") or cfg
    gguf: Mapping[str, Any] = info.get("gguf") or {}
    architecture = _architecture(cfg, gguf)
    if fmt == "GGUF":
        gguf_file, weights_bytes = pick_gguf(files)
        quant = gguf_quantization(gguf_file)
    else:
        weights_bytes = safetensors_bytes(files)
        quant = quantization(cfg.get("quantization_config"))
    dtype_counts = _dtype_counts(tensors, info)
    heads = _int(text_cfg.get("num_attention_heads"))
    hidden = _int(text_cfg.get("hidden_size"))
    return ModelFacts(
        source="HuggingFace",
        name=repo_id,
        revision=commit,
        architecture=architecture,
        endpoint_types=endpoint_types(
            architecture=architecture,
            pipeline_tag=info.get("pipeline_tag"),
            tags=info.get("tags") or (),
            filenames=files.keys(),
            config=cfg,
        ),
        format=fmt,
        quantization=quant.method,
        quantization_bits=quant.bits,
        quantization_group_size=quant.group_size,
        parameter_count=parameter_count(
            fmt=fmt, quant=quant, tensors=tensors, dtype_counts=dtype_counts, gguf=gguf, repo_id=repo_id
        ),
        parameter_dtype_counts=dtype_counts,
        context_length=context_length(text_cfg, gguf),
        torch_dtype=_torch_dtype(text_cfg, dtype_counts),
        num_hidden_layers=_int(text_cfg.get("num_hidden_layers")),
        num_attention_heads=heads,
        num_key_value_heads=_int(text_cfg.get("num_key_value_heads")) or heads,
        head_dim=_int(text_cfg.get("head_dim")) or (hidden // heads if hidden and heads else None),
        hidden_size=hidden,
        weights_bytes=weights_bytes,
        gated=bool(info.get("gated")),
        requires_remote_code=needs_remote_code(cfg),
    )


def sibling_sizes(info: Mapping[str, Any]) -> dict[str, int | None]:
    """File name -> size (None when the info was fetched without ``blobs``)."""
    out: dict[str, int | None] = {}
    for s in info.get("siblings") or ():
        name = s.get("rfilename")
        if isinstance(name, str):
            size = s.get("size")
            out[name] = int(size) if isinstance(size, int) else None
    return out


def weight_format(files: Mapping[str, Any]) -> ModelFormat | None:
    if any(name.endswith(".safetensors") for name in files):
        return "Safetensors"
    if any(name.endswith(".gguf") for name in files):
        return "GGUF"
    return None


def endpoint_types(
    *,
    architecture: str | None,
    pipeline_tag: str | None,
    tags: Iterable[str],
    filenames: Iterable[str],
    config: Mapping[str, Any],
) -> tuple[EndpointType, ...]:
    """The APIs a runtime can serve this model behind (first matching rule, see the module doc)."""
    arch = architecture or ""
    tag_set = set(tags)
    labels = len(config.get("id2label") or {}) or int(config.get("num_labels") or 1)
    if pipeline_tag == "text-ranking" or (arch.endswith("ForSequenceClassification") and labels == 1):
        return ("Rerank",)
    if pipeline_tag in EMBEDDING_PIPELINES or ST_FILES & set(filenames):
        return ("Embeddings",)
    if (
        arch.endswith(("ForCausalLM", "ForConditionalGeneration"))
        or pipeline_tag in CHAT_PIPELINES
        or "conversational" in tag_set
    ):
        return ("Chat",)
    return ()


def quantization(qc: Mapping[str, Any] | None) -> Quantization:
    """The method, bits and group size of a ``quantization_config`` (none when absent)."""
    if not qc:
        return Quantization()
    method = str(qc.get("quant_method") or "unknown").lower()
    if method in ("awq", "gptq"):
        bits = _int(qc.get("bits") or qc.get("w_bit"))
        group = _int(qc.get("group_size") or qc.get("q_group_size"))
        return Quantization(method, bits, group if group and group > 0 else None)
    if method == "fp8":
        return Quantization("fp8", 8)
    if method == "compressed-tensors":
        for group in (qc.get("config_groups") or {}).values():
            weights = (group or {}).get("weights") or {}
            if weights:
                return Quantization(method, _int(weights.get("num_bits")), _int(weights.get("group_size")))
        return Quantization(method)
    if method == "bitsandbytes":
        return Quantization(method, 4 if qc.get("load_in_4bit") else 8)
    return Quantization(method, _int(qc.get("bits")), _int(qc.get("group_size")))


def pick_gguf(files: Mapping[str, int | None]) -> tuple[str, int | None]:
    """The GGUF file to serve (``GGUF_PREFERENCE``, else the smallest) and its size over all parts."""
    groups: dict[str, list[str]] = {}
    for name in files:
        if name.endswith(".gguf"):
            groups.setdefault(_GGUF_PART.sub("", name), []).append(name)
    if not groups:
        raise ModelFactsError("no GGUF file")

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


class _TruncatedError(Exception):
    pass


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
            key, pos = _gguf_string(data, pos)
            (vtype,) = _unpack("<I", data, pos)
            value, pos = _gguf_value(data, pos + 4, vtype)
            out[key] = value
    except _TruncatedError:
        pass
    return out


def _unpack(fmt: str, data: bytes, pos: int) -> tuple[Any, ...]:
    if pos + struct.calcsize(fmt) > len(data):
        raise _TruncatedError
    return struct.unpack_from(fmt, data, pos)


def _gguf_string(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = _unpack("<Q", data, pos)
    end = pos + 8 + n
    if end > len(data):
        raise _TruncatedError
    return data[pos + 8 : end].decode("utf-8", errors="replace"), end


def _gguf_value(data: bytes, pos: int, vtype: int) -> tuple[Any, int]:
    if vtype in _GGUF_SCALARS:
        fmt = _GGUF_SCALARS[vtype]
        return _unpack(fmt, data, pos)[0], pos + struct.calcsize(fmt)
    if vtype == 8:
        return _gguf_string(data, pos)
    if vtype == 9:
        etype, n = _unpack("<IQ", data, pos)
        pos += 12
        if etype in _GGUF_SCALARS:
            end = pos + n * struct.calcsize(_GGUF_SCALARS[etype])
            if end > len(data):
                raise _TruncatedError
            return n, end
        for _ in range(n):
            _, pos = _gguf_value(data, pos, etype)
        return n, pos
    raise ModelFactsError(f"unknown GGUF value type {vtype}")


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


def gguf_type(filename: str) -> str | None:
    """The file type in a GGUF file name: ``Q4_K_M``, ``IQ4_XS``, ``F16``..."""
    stem = filename.rsplit("/", 1)[-1].removesuffix(".gguf")
    found = _GGUF_TYPE.findall(stem)
    return found[-1][0] if found else None


def gguf_quantization(filename: str) -> Quantization:
    kind = (gguf_type(filename) or "").upper()
    if kind in ("F16", "BF16"):
        return Quantization("gguf", 16)
    if kind == "F32":
        return Quantization("gguf", 32)
    m = re.search(r"Q(\d)", kind)
    return Quantization("gguf", int(m.group(1)) if m else None)


def safetensors_bytes(files: Mapping[str, int | None]) -> int | None:
    """Size of the safetensors files a runtime loads: ``model.safetensors``, or the shards."""
    if "model.safetensors" in files:
        names = ["model.safetensors"]
    else:
        names = [n for n in files if re.search(r"-\d{5}-of-\d{5}\.safetensors$", n)]
        names = names or [n for n in files if n.endswith(".safetensors")]
    sizes = [files[n] for n in names]
    if not sizes or any(s is None for s in sizes):
        return None
    return sum(s for s in sizes if s is not None)


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
    if fmt == "GGUF":
        total = _int(gguf.get("total"))
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


def context_length(config: Mapping[str, Any], gguf: Mapping[str, Any]) -> int | None:
    for key in _CONTEXT_KEYS:
        value = _int(config.get(key))
        if value:
            pad = _int(config.get("pad_token_id"))
            if (
                key == "max_position_embeddings"
                and config.get("model_type") in _ROBERTA_TYPES
                and pad is not None
            ):
                value -= pad + 1  # RoBERTa positions start after the padding index
            return value
    return _int(gguf.get("context_length")) or _int(config.get("sliding_window"))


def _architecture(config: Mapping[str, Any], gguf: Mapping[str, Any]) -> str | None:
    archs = config.get("architectures") or []
    if archs and isinstance(archs[0], str):
        return archs[0]
    name = gguf.get("architecture")
    if isinstance(name, str):
        return _GGUF_ARCHITECTURES.get(name, name)
    return None


def _dtype_counts(tensors: Sequence[TensorMeta] | None, info: Mapping[str, Any]) -> dict[str, int]:
    if tensors:
        counts: dict[str, int] = {}
        for t in tensors:
            counts[t.dtype] = counts.get(t.dtype, 0) + t.count
        return counts
    published = (info.get("safetensors") or {}).get("parameters") or {}
    return {str(k): int(v) for k, v in published.items()}


def _torch_dtype(config: Mapping[str, Any], dtype_counts: Mapping[str, int]) -> str | None:
    value = config.get("torch_dtype") or config.get("dtype")
    if isinstance(value, str):
        return value.removeprefix("torch.")
    floats = {d: n for d, n in dtype_counts.items() if d in _DTYPE_TO_TORCH}
    return _DTYPE_TO_TORCH[max(floats, key=lambda d: floats[d])] if floats else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
