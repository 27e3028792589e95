"""Hostile repositories for the HF mirror stand-in: what a tenant could publish to starve or crash
the controller (issue 21, items 2 and 11). Served by ``start_mirror(hostile=True)`` (or
``python -m standins.hub_mirror --hostile``) beside the real models, under the ``hostile/`` owner.

Big files are never held in memory: a ``RepoFile`` is its first bytes and a fill byte after them, so a
300 MB config.json costs a few bytes until it is served, 1 MiB at a time.

- ``hostile/huge-config``: a 300 MB config.json (announced in Content-Length);
- ``hostile/huge-config-unannounced``: the same without Content-Length (the read must stop by itself);
- ``hostile/huge-index``: a 100 MB model.safetensors.index.json;
- ``hostile/many-shards``: an index of 4,000 shards, each a real small safetensors file;
- ``hostile/huge-header``: a model.safetensors whose header claims 200 MB;
- ``hostile/big-headers``: 60 shards of 1.5 MB headers each (90 MB together);
- ``hostile/many-files``: a listing of 30,000 files;
- ``hostile/negative-layers``: ``num_hidden_layers: -1000000``;
- ``hostile/zero-heads``: ``num_attention_heads: 0``;
- ``hostile/huge-number``: ``hidden_size: 10**400``;
- ``hostile/deep-json``: a config.json nesting 100,000 lists deep;
- ``hostile/nested-gguf``: a GGUF header of arrays nested 10,000 deep;
- ``hostile/huge-sentence-config``: a 300 MB ``sentence_bert_config.json`` (vLLM reads it for
  ``max_seq_length``);
- ``hostile/zero-seq-length``: ``max_seq_length: 0`` in ``sentence_bert_config.json``.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from standins.hub_mirror.repos import Repo, RepoFile, _text_file, commit_id
from standins.hub_mirror.tensors import Tensor

MB = 1000 * 1000
SMALL_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "max_position_embeddings": 2048,
    "vocab_size": 256,
    "torch_dtype": "bfloat16",
}
FACTS: dict[str, Any] = {
    "pipeline_tag": "text-generation",
    "tags": ["text-generation"],
    "library_name": "transformers",
}


def _header_file(name: str, tensors: list[Tensor], pad: int = 0) -> RepoFile:
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "pad": "a" * pad}}
    offset = 0
    for t in tensors:
        header[t.name] = {
            "dtype": t.dtype,
            "shape": list(t.shape),
            "data_offsets": [offset, offset + t.nbytes],
        }
        offset += t.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    head = struct.pack("<Q", len(raw)) + raw
    return RepoFile(name, len(head) + offset, head, lfs=True)


def _weights(name: str = "model.safetensors", layer: int = 0) -> RepoFile:
    return _header_file(name, [Tensor(f"model.layers.{layer}.mlp.weight", "BF16", (64, 64))])


def _repo(name: str, files: list[RepoFile]) -> Repo:
    repo_id = f"hostile/{name}"
    return Repo(repo_id, commit_id(repo_id), dict(FACTS, id=repo_id), {f.path: f for f in files})


def _config(**changes: Any) -> RepoFile:
    return _text_file("config.json", json.dumps({**SMALL_CONFIG, **changes}))


def _raw_config(text: str) -> RepoFile:
    return _text_file("config.json", text)


def _index(shards: list[str], pad: int = 0) -> RepoFile:
    doc = {
        "metadata": {"pad": "a" * pad},
        "weight_map": {f"model.layers.{i}.mlp.weight": s for i, s in enumerate(shards)},
    }
    return _text_file("model.safetensors.index.json", json.dumps(doc))


def _gguf_nested(depth: int) -> bytes:
    """A GGUF v3 header whose one key is an array of arrays ... ``depth`` deep."""
    key = b"tokenizer.nested"
    body = struct.pack("<Q", len(key)) + key + struct.pack("<I", 9)
    body += struct.pack("<IQ", 9, 1) * depth + struct.pack("<IQ", 4, 0)
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + body


def hostile_repos() -> dict[str, Repo]:
    shard = "model-{i:05d}-of-{n:05d}.safetensors"
    many = [shard.format(i=i, n=4000) for i in range(1, 4001)]
    big = [shard.format(i=i, n=60) for i in range(1, 61)]
    big_header = _header_file(
        "x", [Tensor("model.layers.0.mlp.weight", "BF16", (64, 64))], pad=1_500_000
    ).head
    repos = [
        _repo("huge-config", [RepoFile("config.json", 300 * MB, b'{"pad": "', fill=b"a"), _weights()]),
        _repo(
            "huge-config-unannounced",
            [RepoFile("config.json", 300 * MB, b'{"pad": "', fill=b"a", unannounced=True), _weights()],
        ),
        _repo(
            "huge-index",
            [_config(), RepoFile("model.safetensors.index.json", 100 * MB, b'{"pad": "', fill=b"a")]
            + [_weights(shard.format(i=i, n=2), i) for i in (1, 2)],
        ),
        _repo("many-shards", [_config(), _index(many)] + [_weights(s, i) for i, s in enumerate(many)]),
        _repo(
            "huge-header",
            [_config(), RepoFile("model.safetensors", 300 * MB, struct.pack("<Q", 200 * MB) + b"{")],
        ),
        _repo(
            "big-headers",
            [_config(), _index(big)]
            + [RepoFile(s, len(big_header) + 8192, big_header, lfs=True) for s in big],
        ),
        _repo(
            "many-files", [_config(), _weights()] + [_text_file(f"extra/{i}.txt", "x") for i in range(30_000)]
        ),
        _repo("negative-layers", [_config(num_hidden_layers=-1_000_000), _weights()]),
        _repo("zero-heads", [_config(num_attention_heads=0), _weights()]),
        _repo(
            "huge-number",
            [_raw_config(json.dumps(SMALL_CONFIG)[:-1] + ', "hidden_size": 1' + "0" * 400 + "}"), _weights()],
        ),
        _repo("deep-json", [_raw_config('{"nested": ' + "[" * 100_000 + "]" * 100_000 + "}"), _weights()]),
        _repo("nested-gguf", [RepoFile("model-Q4_K_M.gguf", 1 * MB, _gguf_nested(10_000), lfs=True)]),
        _repo(
            "huge-sentence-config",
            [_config(), RepoFile("sentence_bert_config.json", 300 * MB, b'{"pad": "', fill=b"a"), _weights()],
        ),
        _repo(
            "zero-seq-length",
            [_config(), _text_file("sentence_bert_config.json", '{"max_seq_length": 0}'), _weights()],
        ),
    ]
    for repo in repos:
        repo.files = dict(sorted(repo.files.items()))
    assert tuple(r.repo_id for r in repos) == NAMES
    return {r.repo_id: r for r in repos}


NAMES = tuple(
    f"hostile/{name}"
    for name in (
        "huge-config",
        "huge-config-unannounced",
        "huge-index",
        "many-shards",
        "huge-header",
        "big-headers",
        "many-files",
        "negative-layers",
        "zero-heads",
        "huge-number",
        "deep-json",
        "nested-gguf",
        "huge-sentence-config",
        "zero-seq-length",
    )
)
"""The hostile repositories' ids, without building them."""
