"""The HF mirror stand-in answers what huggingface_hub 2.4 asks (shared/spec/hub-protocol.md)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi, constants, get_hf_file_metadata, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from standins.hub_mirror import DEFAULT_TOKEN, RunningMirror, start_mirror
from standins.hub_mirror.repos import load_repos

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mirror() -> Iterator[RunningMirror]:
    with start_mirror() as m:
        yield m


@pytest.fixture
def api(mirror: RunningMirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HfApi:
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    mirror.clear_faults()
    return HfApi(endpoint=mirror.url, token=False)


def token_for(mirror: RunningMirror, repo_id: str) -> str | bool:
    return DEFAULT_TOKEN if mirror.repos[repo_id].gated else False


@pytest.mark.parametrize(
    "repo_id",
    [rid for rid, repo in sorted(load_repos().items()) if repo.parameters],
)
def test_safetensors_metadata_counts_the_published_parameters(
    api: HfApi, mirror: RunningMirror, repo_id: str
) -> None:
    token = token_for(mirror, repo_id)
    metadata = api.get_safetensors_metadata(repo_id, token=token)
    info = api.model_info(repo_id, token=token)
    published = mirror.repos[repo_id].facts["published"]["safetensors"]
    assert metadata.parameter_count == published["parameters"]
    assert info.safetensors is not None
    assert info.safetensors.total == published["total"]
    assert sum(metadata.parameter_count.values()) == published["total"]


def test_model_info_with_blobs_lists_file_sizes_and_the_commit(api: HfApi, mirror: RunningMirror) -> None:
    info = api.model_info("BAAI/bge-large-en-v1.5", files_metadata=True)
    sizes = {s.rfilename: s.size for s in info.siblings or []}
    assert "modules.json" in sizes
    assert sizes["onnx/model.onnx"] == 1_336_854_282
    assert info.sha == mirror.repos["BAAI/bge-large-en-v1.5"].sha
    assert (info.pipeline_tag, info.library_name) == ("feature-extraction", "sentence-transformers")


def test_model_info_of_a_gguf_repository_carries_gguf_facts(api: HfApi) -> None:
    info = api.model_info("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF")
    assert info.gguf == {
        "total": 8_030_261_312,
        "architecture": "llama",
        "context_length": 131072,
        "bos_token": "<|begin_of_text|>",
        "eos_token": "<|eot_id|>",
    }
    assert info.safetensors is None


def test_model_info_at_a_revision(api: HfApi, mirror: RunningMirror) -> None:
    sha = mirror.repos["Qwen/Qwen2.5-7B-Instruct"].sha
    assert api.model_info("Qwen/Qwen2.5-7B-Instruct", revision=sha).sha == sha
    with pytest.raises(RevisionNotFoundError):
        api.model_info("Qwen/Qwen2.5-7B-Instruct", revision="no-such-branch")


def test_head_of_a_file_gives_commit_etag_and_size(mirror: RunningMirror) -> None:
    url = hf_hub_url("Qwen/Qwen2.5-7B-Instruct", "model-00001-of-00004.safetensors", endpoint=mirror.url)
    meta = get_hf_file_metadata(url, token=False)
    shard = mirror.repos["Qwen/Qwen2.5-7B-Instruct"].files["model-00001-of-00004.safetensors"]
    assert meta.commit_hash == mirror.repos["Qwen/Qwen2.5-7B-Instruct"].sha
    assert meta.size == shard.size
    assert meta.etag == shard.etag


def test_config_json_downloads_as_the_real_config(api: HfApi, mirror: RunningMirror) -> None:
    path = api.hf_hub_download("Qwen/Qwen2.5-32B-Instruct-AWQ", "config.json")
    config = json.loads(Path(path).read_text())
    assert config == mirror.repos["Qwen/Qwen2.5-32B-Instruct-AWQ"].facts["config"]
    assert config["quantization_config"]["quant_method"] == "awq"


def test_a_range_request_answers_206_with_the_safetensors_header(mirror: RunningMirror) -> None:
    url = hf_hub_url("Qwen/Qwen2.5-0.5B-Instruct", "model.safetensors", endpoint=mirror.url)
    resp = httpx.get(url, headers={"Range": "bytes=0-100000"})
    assert resp.status_code == 206
    size = mirror.repos["Qwen/Qwen2.5-0.5B-Instruct"].files["model.safetensors"].size
    assert resp.headers["Content-Range"] == f"bytes 0-100000/{size}"
    (length,) = struct.unpack("<Q", resp.content[:8])
    header = json.loads(resp.content[8 : 8 + length])
    assert header["model.embed_tokens.weight"]["shape"] == [151936, 896]
    assert "lm_head.weight" not in header  # Qwen2.5-0.5B ties its embeddings


def test_an_unsatisfiable_range_answers_416(mirror: RunningMirror) -> None:
    url = hf_hub_url("Qwen/Qwen2.5-0.5B-Instruct", "config.json", endpoint=mirror.url)
    assert httpx.get(url, headers={"Range": "bytes=999999-"}).status_code == 416


def test_errors_are_typed_by_x_error_code(mirror: RunningMirror, api: HfApi) -> None:
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("nobody/nothing")
    with pytest.raises(RemoteEntryNotFoundError):
        get_hf_file_metadata(
            hf_hub_url("Qwen/Qwen2.5-7B-Instruct", "nope.txt", endpoint=mirror.url), token=False
        )


def test_gated_files_need_a_known_token_but_gated_model_info_is_public(
    mirror: RunningMirror, api: HfApi
) -> None:
    repo = "meta-llama/Llama-3.1-8B"
    assert api.model_info(repo).gated == "manual"
    url = hf_hub_url(repo, "config.json", endpoint=mirror.url)
    with pytest.raises(GatedRepoError):
        get_hf_file_metadata(url, token=False)
    with pytest.raises(GatedRepoError):
        get_hf_file_metadata(url, token="hf_not_granted")
    assert get_hf_file_metadata(url, token=DEFAULT_TOKEN).commit_hash == mirror.repos[repo].sha


def test_an_injected_fault_answers_every_hub_call_until_cleared(mirror: RunningMirror) -> None:
    with httpx.Client(base_url=mirror.url) as http:
        assert http.post("/_mirror/faults", json={"status": 503}).status_code == 200
        assert http.get("/api/models/Qwen/Qwen2.5-7B-Instruct").status_code == 503
        assert http.delete("/_mirror/faults").status_code == 200
        assert http.get("/api/models/Qwen/Qwen2.5-7B-Instruct").status_code == 200
        log = http.get("/_mirror/requests").json()["requests"]
    assert [r["status"] for r in log[-2:]] == [503, 200]


def test_a_fault_can_carry_retry_after_and_clear_itself_after_n_requests(mirror: RunningMirror) -> None:
    with httpx.Client(base_url=mirror.url) as http:
        body = {"status": 429, "retryAfter": "7", "times": 2}
        assert http.post("/_mirror/faults", json=body).status_code == 200
        answers = [http.get("/api/models/Qwen/Qwen2.5-7B-Instruct") for _ in range(3)]
    assert [a.status_code for a in answers] == [429, 429, 200]
    assert [a.headers.get("retry-after") for a in answers] == ["7", "7", None]
    assert mirror.request_count("model_info") >= 3


# ---- the tree listing, in pages as on the Hub

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def test_a_tree_page_links_to_the_next_with_a_cursor_until_the_last(mirror: RunningMirror) -> None:
    with start_mirror(tree_page=4) as small:
        url: str | None = f"{small.url}/api/models/{MINILM}/tree/main?recursive=true&expand=false"
        pages: list[list[dict[str, object]]] = []
        while url is not None:
            resp = httpx.get(url)
            assert resp.status_code == 200
            pages.append(resp.json())
            url = resp.links.get("next", {}).get("url")
            if url is not None:
                assert url.startswith(f"{small.url}/api/models/{MINILM}/tree/main?")
                assert "recursive=true" in url and "expand=false" in url and "cursor=" in url
    whole = mirror.repos[MINILM].tree(recursive=True)
    assert whole is not None and len(whole) > 8
    assert [len(p) for p in pages[:-1]] == [4] * (len(pages) - 1) and 1 <= len(pages[-1]) <= 4
    assert [e for p in pages for e in p] == whole


def test_a_tree_page_holds_1000_entries_and_50_with_expand(mirror: RunningMirror) -> None:
    repo = "meta-llama/Llama-3.1-405B-Instruct"
    whole = mirror.repos[repo].tree(recursive=True)
    assert whole is not None and 50 < len(whole) < 1000
    plain = httpx.get(f"{mirror.url}/api/models/{repo}/tree/main", params={"recursive": "true"})
    assert len(plain.json()) == len(whole) and "next" not in plain.links
    expanded = httpx.get(
        f"{mirror.url}/api/models/{repo}/tree/main", params={"recursive": "1", "expand": "1"}
    )
    assert len(expanded.json()) == 50 and "next" in expanded.links


def test_a_cursor_the_mirror_did_not_issue_answers_400(mirror: RunningMirror) -> None:
    for cursor in ("not-base64!", "eyJ4IjogMX0=", "W10="):  # junk, {"x": 1}, []
        resp = httpx.get(f"{mirror.url}/api/models/{MINILM}/tree/main", params={"cursor": cursor})
        assert resp.status_code == 400, cursor


def test_huggingface_hub_follows_the_pages_of_a_folder_and_of_the_whole_tree(tmp_path: Path) -> None:
    with start_mirror(tree_page=2) as small:
        api = HfApi(endpoint=small.url, token=False)
        listed = [f.path for f in api.list_repo_tree(MINILM, recursive=True)]
        assert listed == [e["path"] for e in small.repos[MINILM].tree(recursive=True) or []]
        folder = [f.path for f in api.list_repo_tree(MINILM, path_in_repo="onnx")]
        assert folder and all(p.startswith("onnx/") for p in folder)
        assert small.request_count("tree") > len(listed) // 2


def test_snapshot_download_with_patterns_lists_the_tree_and_fetches_only_the_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """huggingface_hub 2.4's ``snapshot_download`` (``hf download`` with patterns) lists the repository
    with the paged tree endpoint and downloads what one pattern matches."""
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    with start_mirror(tree_page=3) as small:
        api = HfApi(endpoint=small.url, token=False)
        want = ["config.json", "1_Pooling/config.json", "modules.json", "tokenizer*.json"]
        api.snapshot_download(MINILM, allow_patterns=want, local_dir=tmp_path / "model")
        assert small.request_count("tree") >= 4
    got = sorted(
        str(p.relative_to(tmp_path / "model")) for p in (tmp_path / "model").rglob("*") if p.is_file()
    )
    got = [p for p in got if not p.startswith(".cache")]
    assert got == [
        "1_Pooling/config.json",
        "config.json",
        "modules.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]


def test_the_command_line_prints_its_url_first() -> None:
    cmd = [
        sys.executable,
        "-m",
        "standins.hub_mirror",
        "--port",
        "0",
        "--host",
        "127.0.0.1",
        "--token",
        "hf_x",
    ]
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            assert line.startswith("HF mirror listening on http://127.0.0.1:")
            url = line.rsplit(" ", 1)[1]
            info = httpx.get(f"{url}/api/models/meta-llama/Llama-3.1-8B/revision/main").json()
            assert info["gated"] == "manual"
            config = f"{url}/meta-llama/Llama-3.1-8B/resolve/main/config.json"
            assert httpx.head(config, headers={"Authorization": "Bearer hf_x"}).status_code == 200
            assert httpx.head(config).status_code == 401
        finally:
            proc.terminate()
            proc.wait(timeout=10)
