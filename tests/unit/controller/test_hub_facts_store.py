"""The facts cache keyed by (repo, commit sha), its second level (FactsStore) and the pinned path.

Against the HF mirror stand-in on loopback; Hub calls are counted at the mirror. "A restart" is a
new HubClient on the same store, as a new controller process on the same ConfigMap would be.
"""

from __future__ import annotations

import threading

import pytest

from controller.model_facts.facts import ModelFacts
from controller.modelhub.cache import InMemoryFactsStore
from controller.modelhub.client import ModelAccessDenied, ModelSourceUnavailable
from standins.hub_mirror import DEFAULT_TOKEN, RunningMirror
from tests.unit.hub_support import LLAMA_8B, QWEN_7B, hub_mirror, make_client, mirror

__all__ = ["hub_mirror", "mirror"]  # fixtures


def test_twenty_orders_after_a_restart_cost_no_hub_call_on_the_pinned_path(hub_mirror: RunningMirror) -> None:
    store = InMemoryFactsStore()
    first = make_client(hub_mirror, store=store).fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
    assert hub_mirror.request_count() == 7
    assert (store.gets, store.puts) == (1, 1)  # a miss, then the fetched facts kept
    hub_mirror.clear_requests()

    restarted = make_client(hub_mirror, store=store)
    sha = hub_mirror.repos[QWEN_7B].sha
    results = [restarted.fetch_facts_pinned(repo_id=QWEN_7B, sha=sha, token=None) for _ in range(20)]
    assert all(r == first for r in results)
    assert hub_mirror.request_count() == 0
    assert store.gets == 2  # one read after the restart, then the process cache answers


def test_the_pinned_path_serves_with_the_hub_down(hub_mirror: RunningMirror) -> None:
    store = InMemoryFactsStore()
    make_client(hub_mirror, store=store).fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
    hub_mirror.inject_fault(503)
    sha = hub_mirror.repos[QWEN_7B].sha
    facts = make_client(hub_mirror, store=store).fetch_facts_pinned(repo_id=QWEN_7B, sha=sha, token=None)
    assert facts.revision == sha


def test_twenty_orders_of_main_after_a_restart_cost_one_resolution(hub_mirror: RunningMirror) -> None:
    store = InMemoryFactsStore()
    make_client(hub_mirror, store=store).fetch_facts(repo_id=QWEN_7B, revision="main", token=None)
    hub_mirror.clear_requests()
    restarted = make_client(hub_mirror, store=store)
    barrier = threading.Barrier(20)
    names: list[str] = []

    def order() -> None:
        barrier.wait()
        names.append(restarted.fetch_facts(repo_id=QWEN_7B, revision="main", token=None).name)

    threads = [threading.Thread(target=order) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert names == [QWEN_7B] * 20
    assert [r.kind for r in hub_mirror.requests()] == ["model_info"]  # main -> sha once; facts from the store


def test_a_branch_resolves_once_and_its_commit_is_then_served_pinned(hub_mirror: RunningMirror) -> None:
    client = make_client(hub_mirror)
    by_branch = client.fetch_facts(repo_id=QWEN_7B, revision="main", token=None)
    assert by_branch.revision is not None
    hub_mirror.clear_requests()
    assert client.fetch_facts_pinned(repo_id=QWEN_7B, sha=by_branch.revision, token=None) is by_branch
    assert client.cached_facts(repo_id=QWEN_7B, sha=by_branch.revision) is by_branch
    assert hub_mirror.request_count() == 0


def test_a_pinned_commit_no_cache_has_is_fetched_once(hub_mirror: RunningMirror) -> None:
    store = InMemoryFactsStore()
    client = make_client(hub_mirror, store=store)
    sha = hub_mirror.repos[QWEN_7B].sha
    assert client.cached_facts(repo_id=QWEN_7B, sha=sha) is None
    for _ in range(5):
        assert client.fetch_facts_pinned(repo_id=QWEN_7B, sha=sha, token=None).revision == sha
    assert hub_mirror.request_count() == 7
    assert store.puts == 1


def test_a_pinned_commit_no_cache_has_is_unavailable_while_the_hub_is_down(hub_mirror: RunningMirror) -> None:
    hub_mirror.inject_fault(503)
    with pytest.raises(ModelSourceUnavailable):
        make_client(hub_mirror).fetch_facts_pinned(
            repo_id=QWEN_7B, sha=hub_mirror.repos[QWEN_7B].sha, token=None
        )


def test_stored_facts_of_a_gated_repository_do_not_open_it_to_another_token(
    hub_mirror: RunningMirror,
) -> None:
    store = InMemoryFactsStore()
    make_client(hub_mirror, store=store).fetch_facts(repo_id=LLAMA_8B, revision=None, token=DEFAULT_TOKEN)
    hub_mirror.clear_requests()
    with pytest.raises(ModelAccessDenied):
        make_client(hub_mirror, store=store).fetch_facts(repo_id=LLAMA_8B, revision=None, token="hf_other")
    assert [r.kind for r in hub_mirror.requests()] == ["model_info", "file_head"]


class BrokenStore:
    def get(self, repo_id: str, sha: str) -> ModelFacts | None:
        raise ConnectionError("the API server is away")

    def put(self, repo_id: str, sha: str, facts: ModelFacts) -> None:
        raise ConnectionError("the API server is away")


def test_a_failing_store_is_a_miss_and_the_hub_answers(
    hub_mirror: RunningMirror, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client(hub_mirror, store=BrokenStore())
    assert client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None).name == QWEN_7B
    assert hub_mirror.request_count() == 7
    assert "facts store" in caplog.text


def test_the_in_memory_store_is_bounded() -> None:
    store = InMemoryFactsStore(max_entries=2)
    facts = ModelFacts(source="HuggingFace", name="a/b", parameter_count=1)
    for sha in ("1", "2", "3"):
        store.put("a/b", sha, facts)
    assert len(store) == 2
    assert store.get("a/b", "1") is None
    assert store.get("a/b", "3") == facts
