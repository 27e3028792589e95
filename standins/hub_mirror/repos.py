"""The mirror's repositories: the JSON facts under ``standins/hub_data/repos`` turned into files.

Each repository has one commit (``main``), whose id is derived from the repo id so it is stable
across runs. Its files are: ``config.json`` (the real config), small JSON files given inline, the
listed files (served as zero bytes of their real size), and generated safetensors shards with their
``model.safetensors.index.json``. Only headers are real; everything after a header reads as zeros.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from standins.hub_mirror.gguf import FILE_TYPES, gguf_header
from standins.hub_mirror.tensors import Tensor, tensors_for

DATA_DIR = Path(__file__).resolve().parent.parent / "hub_data" / "repos"
LFS_THRESHOLD = 10 * 1024 * 1024  # files at least this big are LFS files on the Hub
_LFS_SUFFIXES = (".safetensors", ".gguf", ".bin", ".onnx", ".h5", ".ot", ".model", ".v3", ".imatrix")


@dataclass(frozen=True)
class RepoFile:
    """One file of a repository: its size, and the bytes it starts with (the rest reads as zeros)."""

    path: str
    size: int
    head: bytes = b""
    lfs: bool = False
    fill: bytes = b"\0"  # one byte: what the file reads as after ``head`` (zeros, or JSON-ish padding)
    unannounced: bool = False  # served without Content-Length (the body ends when the connection closes)
    whole: bool = False  # ``head`` is the whole file (a real one): its ids are the real hashes

    @property
    def etag(self) -> str:
        """The git blob id for regular files, the sha256 of the content for LFS files (synthetic
        unless the file is ``whole``)."""
        if self.whole:
            if self.lfs:
                return hashlib.sha256(self.head).hexdigest()
            return hashlib.sha1(b"blob %d\0" % len(self.head) + self.head).hexdigest()
        algo = hashlib.sha256 if self.lfs else hashlib.sha1
        return algo(f"{self.path}:{self.size}".encode() + self.head[:4096]).hexdigest()

    def read(self, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` inclusive (already clipped to the file)."""
        head = self.head[start : end + 1]
        return head + self.fill * (end + 1 - start - len(head))


@dataclass
class Repo:
    """One repository at its single commit."""

    repo_id: str
    sha: str
    facts: dict[str, Any]
    files: dict[str, RepoFile] = field(default_factory=dict)
    parameters: dict[str, int] = field(default_factory=dict)  # safetensors dtype -> count, from the headers

    @property
    def gated(self) -> bool | str:
        value = self.facts.get("gated", False)
        return value if isinstance(value, str) else bool(value)

    def tree(self, folder: str = "", *, recursive: bool) -> list[dict[str, Any]] | None:
        """The ``/api/models/{repo}/tree/{rev}/{folder}`` listing: folders first, then files (None: no
        such folder). As on the Hub, ``oid`` is the git blob id and ``lfs.oid`` the content's sha256."""
        prefix = f"{folder}/" if folder else ""
        inside = [f for f in self.files.values() if f.path.startswith(prefix)]
        if folder and not inside:
            return None
        folders: set[str] = set()
        files: list[dict[str, Any]] = []
        for f in inside:
            rest = f.path[len(prefix) :]
            parts = rest.split("/")
            for depth in range(1, len(parts) if recursive else min(2, len(parts))):
                folders.add(prefix + "/".join(parts[:depth]))
            if recursive or len(parts) == 1:
                entry: dict[str, Any] = {"type": "file", "oid": _blob_id(f), "size": f.size, "path": f.path}
                if f.lfs:
                    entry["lfs"] = {"oid": f.etag, "size": f.size, "pointerSize": 135}
                files.append(entry)
        dirs = [
            {"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "path": d}
            for d in sorted(folders)
        ]
        return dirs + files

    def info(self, *, blobs: bool) -> dict[str, Any]:
        """The ``/api/models/{repo}`` document."""
        siblings = []
        for f in self.files.values():
            entry: dict[str, Any] = {"rfilename": f.path}
            if blobs:
                entry["size"] = f.size
                entry["blobId"] = _blob_id(f)
                if f.lfs:
                    entry["lfs"] = {"sha256": f.etag, "size": f.size, "pointerSize": 135}
            siblings.append(entry)
        owner = self.repo_id.split("/")[0]
        doc: dict[str, Any] = {
            "_id": hashlib.md5(self.repo_id.encode()).hexdigest()[:24],
            "id": self.repo_id,
            "modelId": self.repo_id,
            "author": owner,
            "sha": self.sha,
            "private": False,
            "disabled": False,
            "gated": self.gated,
            "pipeline_tag": self.facts.get("pipeline_tag"),
            "tags": self.facts.get("tags", []),
            "downloads": 0,
            "likes": 0,
            "createdAt": "2024-01-01T00:00:00.000Z",
            "lastModified": "2024-01-01T00:00:00.000Z",
            "siblings": siblings,
            "spaces": [],
        }
        if self.facts.get("library_name"):
            doc["library_name"] = self.facts["library_name"]
        config = self.facts.get("config")
        if config:
            doc["config"] = {
                k: config[k] for k in ("architectures", "model_type", "quantization_config") if k in config
            }
        if self.parameters:
            doc["safetensors"] = {"parameters": dict(self.parameters), "total": sum(self.parameters.values())}
        if self.facts.get("gguf"):
            doc["gguf"] = self.facts["gguf"]
        return doc


def _blob_id(f: RepoFile) -> str:
    if f.whole and not f.lfs:
        return f.etag
    return hashlib.sha1(f.etag.encode()).hexdigest()


def commit_id(repo_id: str) -> str:
    """The mirror's commit id of a repository's ``main``: deterministic, 40 hex digits."""
    return hashlib.sha1(f"hf-mirror:{repo_id}:main".encode()).hexdigest()


def load_repos(data_dir: Path = DATA_DIR) -> dict[str, Repo]:
    """Every repository under ``data_dir``, by repo id."""
    repos = {}
    for path in sorted(data_dir.glob("*.json")):
        facts = json.loads(path.read_text())
        repo = build_repo(facts)
        repos[repo.repo_id] = repo
    return repos


def build_repo(facts: Mapping[str, Any]) -> Repo:
    repo = Repo(repo_id=facts["id"], sha=commit_id(facts["id"]), facts=dict(facts))
    files: dict[str, RepoFile] = {}
    if facts.get("config"):
        files["config.json"] = _text_file("config.json", json.dumps(facts["config"], indent=2) + "\n")
    for name, content in (facts.get("inline") or {}).items():
        files[name] = _text_file(name, json.dumps(content, indent=2) + "\n")
    for name, size in (facts.get("files") or {}).items():
        lfs = size >= LFS_THRESHOLD or name.endswith(_LFS_SUFFIXES)
        head = f"# {name}: placeholder of the HF mirror stand-in\n".encode() if not lfs else b""
        if name.endswith(".gguf") and facts.get("gguf_metadata"):
            head = _gguf_head(name, facts["gguf_metadata"])
        files[name] = RepoFile(name, int(size), head[: int(size)], lfs)
    shards = int(facts.get("safetensors_shards") or 0)
    if shards:
        tensors = tensors_for(facts["config"])
        counts: Counter[str] = Counter()
        for t in tensors:
            counts[t.dtype] += t.count
        repo.parameters = dict(counts)
        files.update(_safetensors_files(tensors, shards, facts.get("safetensors_shard_name") or SHARD_NAME))
    repo.files = dict(sorted(files.items()))
    return repo


def _gguf_head(name: str, metadata: Mapping[str, Any]) -> bytes:
    file_type = next(t for t in sorted(FILE_TYPES, key=len, reverse=True) if f"-{t}." in name.upper())
    meta = {k: v for k, v in metadata.items() if k != "tensor_count"}
    return gguf_header(file_type=file_type, metadata=meta, tensor_count=int(metadata["tensor_count"]))


def _text_file(name: str, text: str) -> RepoFile:
    data = text.encode()
    return RepoFile(name, len(data), data)


SHARD_NAME = "model-{i:05d}-of-{n:05d}.safetensors"
"""transformers' shard names; a repository may name its own (DeepSeek-V3: ``-of-000163``)."""


def _safetensors_files(
    tensors: list[Tensor], shards: int, shard_name: str = SHARD_NAME
) -> dict[str, RepoFile]:
    """``model.safetensors``, or ``shards`` files plus the index, split by cumulative bytes."""
    total = sum(t.nbytes for t in tensors)
    groups: list[list[Tensor]] = [[] for _ in range(shards)]
    done = 0
    for t in tensors:
        index = min(shards - 1, done * shards // total)
        groups[index].append(t)
        done += t.nbytes
    if shards == 1:
        return {"model.safetensors": _shard("model.safetensors", groups[0])}
    files: dict[str, RepoFile] = {}
    weight_map: dict[str, str] = {}
    for i, group in enumerate(groups, start=1):
        name = shard_name.format(i=i, n=shards)
        files[name] = _shard(name, group)
        weight_map.update({t.name: name for t in group})
    index_doc = {"metadata": {"total_size": total}, "weight_map": weight_map}
    files["model.safetensors.index.json"] = _text_file(
        "model.safetensors.index.json", json.dumps(index_doc, indent=2) + "\n"
    )
    return files


def _shard(name: str, tensors: list[Tensor]) -> RepoFile:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for t in tensors:
        span = [offset, offset + t.nbytes]
        header[t.name] = {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": span}
        offset += t.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    head = struct.pack("<Q", len(raw)) + raw
    return RepoFile(name, len(head) + offset, head, lfs=True)
