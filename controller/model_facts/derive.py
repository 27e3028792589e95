"""Hugging Face model info + config.json + safetensors tensor metadata -> ``ModelFacts``. Pure.

Called by ``controller.modelhub.client`` with what it fetched: the model-info document as the Hub API returns
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
- **Parameter count**: the *logical* count, as the model card states it (``parameters``:
  packed weights unpacked, quantization side tensors left out). ``parameter_dtype_counts`` keeps the
  stored per-dtype counts (what the memory estimate needs).
- **Context length**: ``max_position_embeddings`` (or ``n_positions``, ``max_sequence_length``,
  ``seq_length``, ``n_ctx``), minus the padding offset for RoBERTa-family encoders; for GGUF
  ``<arch>.context_length`` of the header, else ``gguf.context_length`` of the model info; the
  ``sliding_window`` only when nothing else is known.
- **Config numbers** (layers, heads, KV heads, head dim, hidden size): config.json; for GGUF the
  header's ``<arch>.block_count``, ``<arch>.attention.head_count[_kv]``, ``<arch>.embedding_length``
  and ``<arch>.attention.key_length``.
- **max_seq_length**: of the root ``sentence_*_config.json`` vLLM reads (``model_facts.sentence``);
  the planner caps the served context by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controller.model_facts.config import config_int, context_length, torch_dtype
from controller.model_facts.errors import ModelFactsError
from controller.model_facts.facts import ModelFacts
from controller.model_facts.files import runtime_files, safetensors_weights
from controller.model_facts.gguf import GGUF_ARCHITECTURES, config_from_gguf, gguf_quantization, pick_gguf
from controller.model_facts.parameters import TensorMeta, dtype_counts, parameter_count
from controller.model_facts.quantization import quantization
from controller.model_facts.remote_code import needs_remote_code
from controller.model_facts.sane import check_config, check_facts
from controller.model_facts.sentence import max_seq_length
from shared.api.enums import EndpointType, ModelFormat

ST_FILES = frozenset({"modules.json", "config_sentence_transformers.json"})
EMBEDDING_PIPELINES = frozenset({"feature-extraction", "sentence-similarity"})
CHAT_PIPELINES = frozenset({"text-generation", "image-text-to-text", "text2text-generation"})


def model_facts(
    *,
    repo_id: str,
    commit: str,
    info: Mapping[str, Any],
    config: Mapping[str, Any] | None,
    tensors: Sequence[TensorMeta] | None = None,
    gguf_metadata: Mapping[str, Any] | None = None,
    sentence_config: Mapping[str, Any] | None = None,
) -> ModelFacts:
    """The facts of ``repo_id`` at ``commit``; ``sentence_config`` is the sentence-transformers config
    vLLM reads (``model_facts.sentence``), when the repository has one. Raises ``ModelFactsError`` for a repo without weights,
    ``ImplausibleModelError`` for numbers out of bounds (``model_facts.sane``)."""
    files = sibling_sizes(info)
    fmt = weight_format(files)
    if fmt is None:
        raise ModelFactsError(
            f"Repository `{repo_id}` has neither safetensors nor GGUF weight files at revision `{commit}`; "
            "only those formats can be served."
        )
    cfg: Mapping[str, Any] = config or info.get("config") or {}
    check_config(cfg, "`config.json`" if config else "the model info's `config`")
    if fmt == "GGUF" and not config and gguf_metadata:
        from_header = config_from_gguf(gguf_metadata)
        check_config(from_header, f"the GGUF header of `{pick_gguf(files)[0]}`")
        cfg = {**cfg, **from_header}
    text_cfg: Mapping[str, Any] = cfg.get("text_config") or cfg
    if not isinstance(text_cfg, Mapping):
        text_cfg = cfg
    gguf: Mapping[str, Any] = info.get("gguf") or {}
    arch = model_architecture(cfg, gguf)
    gguf_file: str | None = None
    if fmt == "GGUF":
        gguf_file, weights_bytes = pick_gguf(files)
        quant = gguf_quantization(gguf_file)
    else:
        weights_bytes = safetensors_bytes(files)
        quant = quantization(cfg.get("quantization_config"))
    remote_code = needs_remote_code(cfg)
    counts = dtype_counts(tensors, info)
    heads = config_int(text_cfg.get("num_attention_heads"))
    hidden = config_int(text_cfg.get("hidden_size"))
    facts = ModelFacts(
        source="HuggingFace",
        name=repo_id,
        revision=commit,
        architecture=arch,
        endpoint_types=endpoint_types(
            architecture=arch,
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
            fmt=fmt, quant=quant, tensors=tensors, dtype_counts=counts, gguf=gguf, repo_id=repo_id
        ),
        parameter_dtype_counts=counts,
        context_length=context_length(text_cfg, gguf),
        max_seq_length=max_seq_length(sentence_config),
        torch_dtype=torch_dtype(text_cfg, counts),
        num_hidden_layers=config_int(text_cfg.get("num_hidden_layers")),
        num_attention_heads=heads,
        **attention_cache(text_cfg, heads, hidden),
        hidden_size=hidden,
        weights_bytes=weights_bytes,
        files=runtime_files(files, fmt=fmt, gguf_file=gguf_file, remote_code=remote_code),
        gated=bool(info.get("gated")),
        requires_remote_code=remote_code,
    )
    return check_facts(facts)


def attention_cache(cfg: Mapping[str, Any], heads: int | None, hidden: int | None) -> dict[str, Any]:
    """What vLLM caches per token and layer: KV heads x head dim, or for MLA (``kv_lora_rank``) one
    latent of ``kv_lora_rank + qk_rope_head_dim``, counted as one KV head (vLLM's MLA backends)."""
    rank = config_int(cfg.get("kv_lora_rank"))
    if rank:
        rope = config_int(cfg.get("qk_rope_head_dim")) or 0
        return {"num_key_value_heads": 1, "head_dim": rank + rope, "kv_latent": True}
    return {
        "num_key_value_heads": config_int(cfg.get("num_key_value_heads")) or heads,
        "head_dim": config_int(cfg.get("head_dim")) or (hidden // heads if hidden and heads else None),
    }


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
    id2label = config.get("id2label")
    labels = (
        (len(id2label) if isinstance(id2label, Mapping) else 0) or config_int(config.get("num_labels")) or 1
    )
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


def safetensors_bytes(files: Mapping[str, int | None]) -> int | None:
    """Size of the safetensors files a runtime loads: ``model.safetensors``, or the shards
    (``files.safetensors_weights``; the index and duplicates such as ``consolidated.safetensors``
    left out)."""
    sizes = [files[n] for n in safetensors_weights(files) if n.endswith(".safetensors")]
    if not sizes or any(s is None for s in sizes):
        return None
    return sum(s for s in sizes if s is not None)


def model_architecture(config: Mapping[str, Any], gguf: Mapping[str, Any]) -> str | None:
    """The first of config.json's ``architectures``, else the GGUF architecture by its transformers name."""
    archs = config.get("architectures") or []
    if archs and isinstance(archs[0], str):
        return archs[0]
    name = gguf.get("architecture")
    if isinstance(name, str):
        return GGUF_ARCHITECTURES.get(name, name)
    return None
