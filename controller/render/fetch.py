"""What the model fetcher downloads, and from where: ``hf download <repo> <pattern>...``. Pure.

The fetcher runs huggingface_hub's CLI as ``hf download REPO_ID P1 P2 ... --local-dir D --revision
R`` (``download_args``): the patterns are **positional** file arguments. With two or more of them,
every CLI from 0.3x to 2.x hands them to ``snapshot_download(allow_patterns=...)``, which keeps a
repository file when ``fnmatch.fnmatchcase(path, pattern)`` holds for one of them (``*`` crosses
``/`` there). The alternatives fail on some supported image:

- repeated ``--include P``: the 0.3x CLI (vLLM 0.11's image, huggingface_hub 0.35.3) declares
  ``--include`` with ``nargs="*"`` and a plain store, so each one replaces the one before and only
  the last pattern is downloaded (all-MiniLM-L6-v2 got ``vocab.txt`` alone, exit 0);
- a **single** positional is a file name, not a pattern (``hf_hub_download(filename=...)``), so an
  escaped name would be asked for literally: a lone pattern is given twice (``cli_patterns``);
- a pattern starting with ``-`` would be read as an option: its ``-`` is written ``[-]``, which
  matches the same names.

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


def download_args(spec: FetchSpec, local_dir: str) -> list[str]:
    """The arguments of ``hf download`` for ``spec`` into ``local_dir`` (see the module doc); no
    pattern at all downloads the whole repository."""
    args = ["download", spec.repo, *cli_patterns(spec.include), "--local-dir", local_dir]
    if spec.revision:
        args += ["--revision", spec.revision]
    return args


def cli_patterns(include: Iterable[str]) -> list[str]:
    """``include`` as positional arguments every ``hf download`` reads as patterns: a leading ``-``
    escaped, and a lone pattern given twice (see the module doc)."""
    out = [f"[-]{p[1:]}" if p.startswith("-") else p for p in include]
    return out * 2 if len(out) == 1 else out


def include_patterns(facts: ModelFacts) -> list[str]:
    """The globs of the fetcher (see the module doc)."""
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
