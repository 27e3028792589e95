"""Which files of a repository the runtime loads: the model fetcher downloads these and nothing else. Pure.

Real repositories carry the same weights more than once, and files no runtime reads:

- Meta's own checkpoint under ``original/`` (``consolidated.NN.pth``, 16 GB beside the 16 GB of
  safetensors in Llama-3.1-8B-Instruct);
- Mistral's ``consolidated.safetensors`` (its ``mistral-common`` format) beside the sharded
  ``model-0000i-of-0000N.safetensors`` of the transformers format;
- ``pytorch_model*.bin``, ``*.pt``/``*.pth``, ONNX, Flax ``*.msgpack``, TensorFlow ``*.h5``, Rust
  ``*.ot`` exports, other GGUF quantizations, READMEs, figures, licences and training scripts.

The selection (``runtime_files``) is an allowlist, so whatever else a repository carries stays out:

- **weights**, in the served format:
  - Safetensors: ``model.safetensors``; else the shard series ``<prefix>-NNNNN-of-MMMMM.safetensors``
    with its ``<prefix>.safetensors.index.json``; else every other root ``*.safetensors`` but
    ``consolidated*`` (vLLM reads the root directory only, and skips files the index does not name);
  - GGUF: the one single-file GGUF ``pick_gguf`` chose (vLLM loads no split GGUF);
- **configs**: ``config.json``, ``generation_config.json`` and the processor / chat template files;
- **tokenizer**: ``tokenizer.json``, ``tokenizer_config.json``, ``special_tokens_map.json``,
  ``added_tokens.json``, ``vocab.json``/``vocab.txt``/``merges.txt``, SentencePiece ``*.model``
  (``tokenizer.model``, ``sentencepiece.bpe.model``, ``spiece.model``) and ``*.tiktoken``;
- **sentence-transformers** (vLLM reads them for Embeddings and Rerank): ``modules.json``,
  ``config_sentence_transformers.json``, the seven ``sentence_*_config.json`` vLLM looks for
  (``sentence_bert_config.json``, ``sentence_xlm-roberta_config.json``...), and the module folders'
  (``1_Pooling/``, ``2_Dense/``...) ``*.json`` and ``*.safetensors``;
- **remote code**: the root ``*.py`` files, only for a model that needs them (``auto_map`` to a
  model type nothing built in knows; ``controller.model_facts.remote_code``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from controller.model_facts.gguf import gguf_parts
from controller.model_facts.sentence import SENTENCE_CONFIG_FILES
from shared.api.enums import ModelFormat

CONFIG_FILES = frozenset(
    {
        "config.json",
        "generation_config.json",
        "preprocessor_config.json",
        "processor_config.json",
        "chat_template.json",
        "chat_template.jinja",
    }
)
TOKENIZER_FILES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.json",
        "vocab.txt",
        "merges.txt",
        "tokenizer.model",
        "sentencepiece.bpe.model",
        "spiece.model",
    }
)
SENTENCE_TRANSFORMERS_FILES = frozenset(
    {
        "modules.json",
        "config_sentence_transformers.json",
        *SENTENCE_CONFIG_FILES,  # every sentence_*_config.json vLLM looks for
    }
)
_ST_MODULE = re.compile(r"^\d+_[A-Za-z]+/[^/]+\.(json|safetensors)$")
SHARD = re.compile(r"^(?P<prefix>[^/]+)-(?P<i>\d{5})-of-(?P<n>\d{5,6})\.(?P<ext>safetensors|gguf)$")


def runtime_files(
    files: Mapping[str, int | None],
    *,
    fmt: ModelFormat,
    gguf_file: str | None = None,
    remote_code: bool = False,
) -> dict[str, int | None]:
    """The files the runtime loads, name -> size (None when the listing had no sizes), sorted by name.

    ``files`` is the repository's listing (``sibling_sizes``); ``gguf_file`` the GGUF file chosen
    (``pick_gguf``'s name, without the part suffix) when ``fmt`` is GGUF.
    """
    weights = gguf_parts(files, gguf_file) if fmt == "GGUF" and gguf_file else safetensors_weights(files)
    chosen = set(weights)
    for name in files:
        if _is_companion(name, remote_code=remote_code):
            chosen.add(name)
    return {name: files[name] for name in sorted(chosen)}


def safetensors_weights(files: Mapping[str, object]) -> list[str]:
    """The safetensors files a runtime loads, with the index of a sharded checkpoint."""
    root = [n for n in files if "/" not in n and n.endswith(".safetensors")]
    if "model.safetensors" in root:
        return ["model.safetensors"]
    series: dict[tuple[str, str], list[str]] = {}
    for name in root:
        m = SHARD.match(name)
        if m:
            series.setdefault((m["prefix"], m["n"]), []).append(name)
    if series:
        # the series the index names, else the largest one
        key = max(series, key=lambda k: (f"{k[0]}.safetensors.index.json" in files, len(series[k]), k))
        index = f"{key[0]}.safetensors.index.json"
        return sorted(series[key]) + ([index] if index in files else [])
    rest = sorted(n for n in root if not n.startswith("consolidated"))
    return rest or sorted(root)


def _is_companion(name: str, *, remote_code: bool) -> bool:
    if "/" not in name:
        return (
            name in CONFIG_FILES
            or name in TOKENIZER_FILES
            or name in SENTENCE_TRANSFORMERS_FILES
            or name.endswith(".tiktoken")
            or (remote_code and name.endswith(".py"))
        )
    return bool(_ST_MODULE.match(name))


def total_bytes(selected: Mapping[str, int | None]) -> int | None:
    """The sum of the selected files' sizes, None when one is unknown."""
    sizes = list(selected.values())
    if not sizes or any(s is None for s in sizes):
        return None
    return sum(s for s in sizes if s is not None)
