"""HubClient against hostile repositories (``standins.hub_mirror.hostile``): every answer is read
within its bound, the refusal is ModelNotReady naming the file or field, and it is remembered.

Real HTTP on loopback; the mirror generates its big files lazily, so a 300 MB config.json costs
nothing until it is served.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator

import httpx2
import pytest

from controller.modelhub.client import HubClient, HubLimits, ModelNotReady
from controller.modelhub.read import get_bounded
from standins.hub_mirror import RunningMirror, start_mirror
from tests.unit.hub_support import Clock

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def hostile() -> Iterator[RunningMirror]:
    with start_mirror(hostile=True) as m:
        yield m


@pytest.fixture
def mirror(hostile: RunningMirror) -> RunningMirror:
    hostile.clear_requests()
    return hostile


def refusal(mirror: RunningMirror, repo: str, **changes: object) -> str:
    client = HubClient(endpoint=mirror.url, clock=Clock(), **changes)  # type: ignore[arg-type]
    with pytest.raises(ModelNotReady) as err:
        client.fetch_facts(repo_id=repo, revision=None, token=None)
    return str(err.value)


def received_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.mark.parametrize(
    ("repo", "names"),
    [
        ("hostile/huge-config", ["`config.json`", "4 MiB"]),
        ("hostile/huge-config-unannounced", ["`config.json`", "4 MiB"]),
        ("hostile/huge-index", ["`model.safetensors.index.json`", "32 MiB"]),
        ("hostile/many-shards", ["`model.safetensors.index.json`", "4000 shards", "1024"]),
        ("hostile/huge-header", ["`model.safetensors`", "header of 200000000 bytes"]),
        ("hostile/big-headers", ["headers together", "64 MiB"]),
        ("hostile/many-files", ["The model info", "30002 files", "20000"]),
        ("hostile/negative-layers", ["`num_hidden_layers` of `config.json`", "-1000000"]),
        ("hostile/zero-heads", ["`num_attention_heads` of `config.json` is 0"]),
        ("hostile/huge-number", ["`hidden_size` of `config.json`", "401-digit number"]),
        ("hostile/deep-json", ["`config.json`", "nesting"]),
        ("hostile/nested-gguf", ["`model-Q4_K_M.gguf`", "arrays nest"]),
        ("hostile/huge-sentence-config", ["`sentence_bert_config.json`", "4 MiB"]),
        ("hostile/zero-seq-length", ["sentence-transformers `max_seq_length` is 0"]),
    ],
)
def test_a_hostile_repository_is_refused_naming_the_file_or_field(
    mirror: RunningMirror, repo: str, names: list[str]
) -> None:
    message = refusal(mirror, repo)
    for name in names:
        assert name in message
    assert repo in message


def test_a_huge_config_is_not_read_whole(mirror: RunningMirror) -> None:
    """The body stops at the bound: the process grows by far less than the 300 MB served."""
    before = received_bytes()
    refusal(mirror, "hostile/huge-config-unannounced")
    assert received_bytes() - before < 100 * MiB


def test_a_4000_shard_index_costs_no_header_request(mirror: RunningMirror) -> None:
    refusal(mirror, "hostile/many-shards")
    assert mirror.request_count("file_range") == 0


def test_the_total_header_bound_stops_the_header_requests(mirror: RunningMirror) -> None:
    refusal(mirror, "hostile/big-headers", limits=HubLimits(headers_total_bytes=8 * MiB))
    assert mirror.request_count("file_range") <= 2 * 6  # 5 headers of 1.5 MB fit; at most 2 reads each


def test_a_refusal_is_remembered_for_the_revision(mirror: RunningMirror) -> None:
    clock = Clock()
    client = HubClient(endpoint=mirror.url, clock=clock)
    for _ in range(50):
        with pytest.raises(ModelNotReady, match="num_hidden_layers"):
            client.fetch_facts(repo_id="hostile/negative-layers", revision=None, token=None)
        clock.now += 6  # five minutes of requeues
    assert mirror.request_count() == 2  # the model info and config.json, once
    clock.now += 900  # past the revision's memory: the model info again, and the commit is still refused
    with pytest.raises(ModelNotReady):
        client.fetch_facts(repo_id="hostile/negative-layers", revision=None, token=None)
    assert [r.kind for r in mirror.requests()] == ["model_info", "file_get", "model_info"]


def test_the_commit_refusal_holds_for_its_sha_too(mirror: RunningMirror) -> None:
    client = HubClient(endpoint=mirror.url, clock=Clock())
    sha = mirror.repos["hostile/huge-config"].sha
    with pytest.raises(ModelNotReady):
        client.fetch_facts(repo_id="hostile/huge-config", revision=None, token=None)
    mirror.clear_requests()
    with pytest.raises(ModelNotReady, match=r"config\.json"):
        client.fetch_facts_pinned(repo_id="hostile/huge-config", sha=sha, token=None)
    assert [r.kind for r in mirror.requests()] == ["model_info"]


def test_the_real_models_fit_within_the_bounds(mirror: RunningMirror) -> None:
    client = HubClient(endpoint=mirror.url, clock=Clock())
    facts = client.fetch_facts(repo_id="deepseek-ai/DeepSeek-V3", revision=None, token=None)
    assert facts.num_hidden_layers == 61


def test_a_body_trickling_in_is_cut_at_the_deadline() -> None:
    """The client's timeout is per read: a body that keeps coming slowly must still end."""
    with start_mirror(throttle=200_000) as slow:
        repo = slow.repos["Qwen/Qwen2.5-0.5B-Instruct"]
        url = f"{slow.url}/Qwen/Qwen2.5-0.5B-Instruct/resolve/{repo.sha}/model.safetensors"
        start = time.monotonic()
        with pytest.raises(httpx2.ReadTimeout, match="took more than 1s"):
            get_bounded(url, headers={}, timeout=10.0, limit=10**12, deadline=1.0)
        assert time.monotonic() - start < 5.0
