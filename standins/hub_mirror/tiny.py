"""The tiny real models of ``devtools.tiny_models`` as mirror repositories, served whole.

Unlike the other repositories (real headers, zeros after), every byte here is the real file, and
the ids are the real hashes (git blob sha1, LFS sha256), so a download is a loadable model. The
models are read from their build directory (the cache); a model not built there is not served.
``hub.json`` carries the Hub facts and is not a repository file.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path
from typing import Any

from devtools.tiny_models import HUB_FACTS, MODELS, model_dir
from standins.hub_mirror.repos import _LFS_SUFFIXES, LFS_THRESHOLD, Repo, RepoFile, commit_id


def tiny_repos(root: Path | None = None) -> dict[str, Repo]:
    """The tiny models built under ``root`` (default: the cache), by repo id."""
    repos: dict[str, Repo] = {}
    for model in MODELS:
        folder = model_dir(model, root)
        if not (folder / HUB_FACTS).is_file():
            continue
        repos[model.repo_id] = repo_from_dir(folder)
    return repos


def repo_from_dir(folder: Path) -> Repo:
    """One repository from a model directory: its files whole, its facts from ``hub.json``."""
    facts: dict[str, Any] = json.loads((folder / HUB_FACTS).read_text())
    facts["config"] = json.loads((folder / "config.json").read_text())
    files: dict[str, RepoFile] = {}
    parameters: Counter[str] = Counter()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix()
        if name == HUB_FACTS:
            continue
        data = path.read_bytes()
        lfs = len(data) >= LFS_THRESHOLD or name.endswith(_LFS_SUFFIXES)
        files[name] = RepoFile(name, len(data), data, lfs=lfs, whole=True)
        if name.endswith(".safetensors"):
            parameters.update(safetensors_parameters(data))
    repo = Repo(repo_id=facts["id"], sha=commit_id(facts["id"]), facts=facts)
    repo.files = files
    repo.parameters = dict(parameters)
    return repo


def safetensors_parameters(data: bytes) -> dict[str, int]:
    """Parameter counts by dtype, read from a safetensors file's header."""
    (length,) = struct.unpack("<Q", data[:8])
    header: dict[str, Any] = json.loads(data[8 : 8 + length])
    counts: Counter[str] = Counter()
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for dim in entry["shape"]:
            count *= int(dim)
        counts[str(entry["dtype"])] += count
    return dict(counts)
