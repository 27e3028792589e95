"""What the model fetcher downloads, and from where: ``hf download <repo> --include <pattern>...``. Pure.

The fetcher runs huggingface_hub's CLI (``hf download REPO_ID --revision R --local-dir D --include
P --include P ...``; each ``--include`` takes one glob, the option repeats). The CLI hands the globs
to ``snapshot_download(allow_patterns=...)``, which keeps a repository file when
``fnmatch.fnmatchcase(path, pattern)`` holds for one of them (``*`` crosses ``/`` there).

**The patterns** are the files of ``ModelFacts.files`` (``controller.model_facts.files``), each
escaped so that it matches itself only (``[``, ``*`` and ``?`` become ``[[]``, ``[*]``, ``[?]``).
A complete shard series ``<prefix>-00001-of-00191.safetensors`` ... ``-00191-of-00191`` becomes
one pattern ``<prefix>-[0-9][0-9][0-9][0-9][0-9]-of-00191.safetensors``: it matches only names of
that numbered series, all of which are selected; so Llama-3.1-405B takes a handful of patterns, not 200.

**Without a file list** (a catalog model: its status has no listing) the patterns name the usual
runtime files instead: ``model*.safetensors`` and its index (or ``*.gguf``), the configs, the
tokenizer files and the sentence-transformers modules. Duplicates named otherwise (``original/``,
``consolidated*``, ``*.bin``, ONNX...) stay out either way.

**The source**: a Hugging Face order downloads ``spec.model.ref.name``; a catalog order downloads
the repository of the catalog model's ``status.source.uri`` (``hf://org/repo``), at its
``status.source.revision``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from controller.model_facts.facts import ModelFacts, hub_repo
from controller.model_facts.files import (
    CONFIG_FILES,
    SENTENCE_TRANSFORMERS_FILES,
    SHARD,
    TOKENIZER_FILES,
    total_bytes,
)

_FALLBACK_SAFETENSORS = ("model*.safetensors", "model*.safetensors.index.json")
_FALLBACK_GGUF = ("*.gguf",)
_FALLBACK_COMPANIONS = (
    *sorted(CONFIG_FILES | TOKENIZER_FILES | SENTENCE_TRANSFORMERS_FILES),
    "*.tiktoken",
    "[0-9]_*/*.json",
    "[0-9]_*/*.safetensors",
)


@dataclass(frozen=True)
class FetchSpec:
    """One download: the Hub repository, its revision (None: ``main``), the include globs, and the
    bytes they select when every size is known (the fetcher reports progress against it)."""

    repo: str
    revision: str | None
    include: tuple[str, ...]
    total_bytes: int | None = None


def fetch_spec(facts: ModelFacts, revision: str | None) -> FetchSpec:
    """The download of ``facts``' model: its catalog location when it has one, else its Hub name."""
    repo = hub_repo(facts.source_uri) or facts.name
    return FetchSpec(
        repo=repo,
        revision=revision,
        include=tuple(include_patterns(facts)),
        total_bytes=total_bytes(facts.files),
    )


def include_patterns(facts: ModelFacts) -> list[str]:
    """The ``--include`` globs of the fetcher (see the module doc)."""
    if facts.files:
        return compact(facts.files)
    weights = _FALLBACK_GGUF if facts.format == "GGUF" else _FALLBACK_SAFETENSORS
    return [*weights, *_FALLBACK_COMPANIONS]


def compact(names: Iterable[str]) -> list[str]:
    """Globs matching exactly ``names``: complete shard series as one glob, the rest escaped."""
    names = sorted(set(names))
    series: dict[tuple[str, str, str], set[int]] = {}
    for name in names:
        m = SHARD.match(name)
        if m:
            series.setdefault((m["prefix"], m["n"], m["ext"]), set()).add(int(m["i"]))
    whole = {k for k, got in series.items() if got == set(range(1, int(k[1]) + 1))}
    out: list[str] = []
    for name in names:
        m = SHARD.match(name)
        if m and (m["prefix"], m["n"], m["ext"]) in whole:
            glob = f"{escape(m['prefix'])}-{'[0-9]' * 5}-of-{m['n']}.{m['ext']}"
            if glob not in out:
                out.append(glob)
        else:
            out.append(escape(name))
    return out


def escape(name: str) -> str:
    """``name`` as an fnmatch glob that matches only itself."""
    return "".join(f"[{c}]" if c in "[*?" else c for c in name)
