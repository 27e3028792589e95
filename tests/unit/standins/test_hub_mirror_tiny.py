"""The mirror serves the tiny real models whole: every byte, real hashes, the tree huggingface_hub 1.x+
lists, and the Hub facts from ``hub.json`` (which is not a repository file)."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import HfApi, constants, get_hf_file_metadata, hf_hub_url

from devtools.tiny_models import CHAT, EMBED, HUB_FACTS, MODELS, RERANK, cache_root, is_built, model_dir
from standins.hub_mirror import RunningMirror, start_mirror
from standins.hub_mirror.tiny import safetensors_parameters, tiny_repos


def _safetensors(tensors: dict[str, tuple[str, list[int], int]]) -> bytes:
    """A real safetensors file: ``name -> (dtype, shape, bytes per element)``, data filled with 0x5a."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, width) in tensors.items():
        size = width
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"\x5a" * offset


def _fake_build(root: Path) -> dict[str, bytes]:
    """The embed model's layout under ``root`` with made-up content; returns its repo files."""
    files = {
        "config.json": json.dumps({"architectures": ["BertModel"], "model_type": "bert"}).encode(),
        "model.safetensors": _safetensors({"a.weight": ("F32", [4, 8], 4), "b.bias": ("BF16", [3], 2)}),
        "tokenizer.json": b'{"version": "1.0"}\n',
        "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}\n',
        "modules.json": b"[]\n",
    }
    folder = model_dir(EMBED, root)
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    facts = {"id": EMBED.repo_id, "pipeline_tag": EMBED.pipeline_tag, "library_name": EMBED.library_name}
    (folder / HUB_FACTS).write_text(json.dumps({**facts, "tags": list(EMBED.tags)}))
    return files


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    monkeypatch.delenv("INFERENCE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return _fake_build(cache_root())


@pytest.fixture
def mirror(built: dict[str, bytes]) -> Iterator[RunningMirror]:
    with start_mirror(tiny=True) as m:
        yield m


@pytest.fixture
def api(mirror: RunningMirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HfApi:
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    return HfApi(endpoint=mirror.url, token=False)


def test_a_download_is_byte_for_byte_the_built_model(
    api: HfApi, built: dict[str, bytes], tmp_path: Path
) -> None:
    out = Path(api.snapshot_download(EMBED.repo_id, local_dir=tmp_path / "out"))
    got = {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and ".cache" not in p.relative_to(out).parts
    }
    assert got == built  # every file whole, hub.json not among them


def test_ids_are_the_real_hashes(mirror: RunningMirror, built: dict[str, bytes]) -> None:
    url = hf_hub_url(EMBED.repo_id, "model.safetensors", endpoint=mirror.url)
    meta = get_hf_file_metadata(url, token=False)
    assert meta.etag == hashlib.sha256(built["model.safetensors"]).hexdigest()
    assert meta.size == len(built["model.safetensors"])
    url = hf_hub_url(EMBED.repo_id, "modules.json", endpoint=mirror.url)
    blob = b"blob %d\0" % len(built["modules.json"]) + built["modules.json"]
    assert get_hf_file_metadata(url, token=False).etag == hashlib.sha1(blob).hexdigest()


def test_the_tree_lists_folders_and_lfs_files(api: HfApi, built: dict[str, bytes]) -> None:
    entries = {e.path: e for e in api.list_repo_tree(EMBED.repo_id, recursive=True)}
    assert set(entries) == set(built) | {"1_Pooling"}
    weights = entries["model.safetensors"]
    assert getattr(weights, "lfs", None) is not None
    assert weights.lfs.sha256 == hashlib.sha256(built["model.safetensors"]).hexdigest()  # type: ignore[union-attr]


def test_model_info_carries_the_hub_facts_and_parameter_counts(api: HfApi) -> None:
    info = api.model_info(EMBED.repo_id, files_metadata=True)
    assert info.pipeline_tag == "sentence-similarity"
    assert info.library_name == "sentence-transformers"
    assert info.config is not None and info.config["architectures"] == ["BertModel"]
    assert info.safetensors is not None
    assert info.safetensors.parameters == {"F32": 32, "BF16": 3}


def test_only_built_models_are_served(built: dict[str, bytes]) -> None:
    assert set(tiny_repos()) == {EMBED.repo_id}
    with start_mirror() as plain:  # without tiny: the mirror is as before
        assert EMBED.repo_id not in plain.repos


def test_safetensors_parameters_reads_the_header() -> None:
    data = _safetensors({"x": ("BF16", [2, 3], 2), "y": ("BF16", [5], 2), "z": ("F32", [], 4)})
    assert safetensors_parameters(data) == {"BF16": 11, "F32": 1}


@pytest.mark.skipif(not is_built(), reason="the tiny models are not built in the cache")
def test_the_built_cache_is_served_whole() -> None:
    """The real build (python -m devtools.tiny_models): three repos of the expected shapes."""
    repos = tiny_repos()
    assert set(repos) == {m.repo_id for m in MODELS}
    chat = repos[CHAT.repo_id]
    assert {"chat_template.jinja", "tokenizer.json", "model.safetensors", "config.json"} <= set(chat.files)
    assert chat.facts["config"]["head_dim"] >= 64  # vLLM's CPU attention kernels
    assert 3_000_000 < chat.files["model.safetensors"].size < 4_000_000
    assert {"modules.json", "1_Pooling/config.json", "sentence_bert_config.json"} <= set(
        repos[EMBED.repo_id].files
    )
    rerank = repos[RERANK.repo_id].facts["config"]
    assert rerank["architectures"] == ["BertForSequenceClassification"]
    for repo in repos.values():
        on_disk = model_dir(next(m for m in MODELS if m.repo_id == repo.repo_id))
        for name, f in repo.files.items():
            assert f.whole and f.head == (on_disk / name).read_bytes()
