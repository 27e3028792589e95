"""The facts the controller derives from each repository of the Hub mirror stand-in, built the way
a resolution builds them (shared by the unit tests and bench.scale.offline)."""

from __future__ import annotations

from typing import Any

from controller.model_facts import TensorMeta, gguf_parts, model_facts, parse_gguf_header, pick_gguf
from controller.model_facts.sentence import sentence_config_files
from standins.hub_mirror.repos import Repo, load_repos
from standins.hub_mirror.tensors import tensors_for

REPOS = load_repos()


def tensors_of(repo: Repo) -> list[TensorMeta] | None:
    if not repo.parameters:
        return None
    return [TensorMeta(t.name, t.dtype, t.shape) for t in tensors_for(repo.facts["config"])]


def gguf_metadata_of(repo: Repo) -> dict[str, Any] | None:
    """The header key/values of the GGUF file the controller would serve, as the mirror serves it."""
    files = {name: f.size for name, f in repo.files.items()}
    if not any(name.endswith(".gguf") for name in files):
        return None
    first = gguf_parts(files, pick_gguf(files)[0])[0]
    return parse_gguf_header(repo.files[first].head)


def sentence_config_of(repo: Repo) -> dict[str, Any] | None:
    """The sentence-transformers config vLLM would read, as the mirror serves it (first non-empty one)."""
    inline = repo.facts.get("inline") or {}
    for name in sentence_config_files(repo.files):
        doc = inline.get(name)
        if doc:
            return dict(doc)
    return None


def facts_of(repo_id: str, *, with_tensors: bool = True, **info_changes: Any) -> Any:
    repo = REPOS[repo_id]
    info = {**repo.info(blobs=True), **info_changes}
    return model_facts(
        repo_id=repo_id,
        commit=repo.sha,
        info=info,
        config=repo.facts.get("config"),
        tensors=tensors_of(repo) if with_tensors else None,
        gguf_metadata=gguf_metadata_of(repo),
        sentence_config=sentence_config_of(repo),
    )
