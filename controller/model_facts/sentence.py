"""A sentence-transformers model's ``max_seq_length``: the longest input vLLM accepts for it. Pure.

vLLM reads the first of the root ``sentence_*_config.json`` files below that holds a non-empty JSON
object (its ``get_sentence_transformer_tokenizer_config``, in this order). When that object has
``max_seq_length``, the value replaces the length derived from config.json, and a
``--max-model-len`` above it is refused at start-up (unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``).
all-MiniLM-L6-v2 says 512 in config.json and 256 in ``sentence_bert_config.json``, so 512 fails.

The file is written by whoever owns the repository: a value that is not a JSON integer is ignored
(vLLM would fail on it too, so nothing is lost), one out of bounds is refused by ``sane``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.model_facts.config import config_int

SENTENCE_CONFIG_FILES = (
    "sentence_bert_config.json",
    "sentence_roberta_config.json",
    "sentence_distilbert_config.json",
    "sentence_camembert_config.json",
    "sentence_albert_config.json",
    "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
)
"""The files vLLM looks for, in its order (vLLM 0.32 ``transformers_utils.config``)."""


def sentence_config_files(names: Iterable[str]) -> list[str]:
    """The sentence-transformers config files a repository has at its root, in the order vLLM reads them."""
    present = set(names)
    return [name for name in SENTENCE_CONFIG_FILES if name in present]


def max_seq_length(sentence_config: Mapping[str, Any] | None) -> int | None:
    """``max_seq_length`` of the sentence-transformers config vLLM uses, when it is an integer."""
    if not isinstance(sentence_config, Mapping):
        return None
    return config_int(sentence_config.get("max_seq_length"))
