"""HubClient against the HF mirror stand-in on loopback: real HTTP through huggingface_hub, no mocks.

Request counts are read from the mirror's own request log. The clients run on a fake clock whose
``sleep`` advances it, so backoff costs no time (tests/unit/controller/test_hub_backoff.py has the
retries; test_hub_facts_store.py the second-level cache).
"""

from __future__ import annotations

import socket
import threading

import pytest

from controller.modelhub.client import HubClient, ModelAccessDenied, ModelNotFound, ModelSourceUnavailable
from standins.hub_mirror import DEFAULT_TOKEN, RunningMirror
from tests.unit.hub_support import LLAMA_8B, QWEN_7B, Clock, hub_mirror, make_client, mirror

__all__ = ["hub_mirror", "mirror"]  # fixtures


def test_a_missing_repository_is_model_not_found(hub_mirror: RunningMirror) -> None:
    with pytest.raises(ModelNotFound, match=r"`nobody/nothing` does not exist.*`spec.model.ref.name`"):
        make_client(hub_mirror).fetch_facts(repo_id="nobody/nothing", revision=None, token=None)


def test_a_missing_revision_is_model_not_found(hub_mirror: RunningMirror) -> None:
    with pytest.raises(ModelNotFound, match=r"Revision `v0.0.0-nope`.*`spec.model.ref.revision`"):
        make_client(hub_mirror).fetch_facts(repo_id=QWEN_7B, revision="v0.0.0-nope", token=None)


def test_a_gated_repository_without_a_token_is_access_denied(hub_mirror: RunningMirror) -> None:
    with pytest.raises(ModelAccessDenied, match=r"is gated.*`spec.model.authSecretRef`"):
        make_client(hub_mirror).fetch_facts(repo_id=LLAMA_8B, revision=None, token=None)


def test_a_gated_repository_with_a_bad_token_is_access_denied_and_the_token_is_not_shown(
    hub_mirror: RunningMirror,
) -> None:
    with pytest.raises(ModelAccessDenied, match="has no access") as err:
        make_client(hub_mirror).fetch_facts(repo_id=LLAMA_8B, revision=None, token="hf_wrong_secret_value")
    assert "hf_wrong_secret_value" not in str(err.value)


def test_a_gated_repository_with_a_good_token_resolves(hub_mirror: RunningMirror) -> None:
    facts = make_client(hub_mirror).fetch_facts(repo_id=LLAMA_8B, revision=None, token=DEFAULT_TOKEN)
    assert facts.gated
    assert facts.parameter_count == 8_030_261_248
    assert facts.revision == hub_mirror.repos[LLAMA_8B].sha


def test_cached_facts_of_a_gated_repository_do_not_open_it_to_another_token(
    hub_mirror: RunningMirror,
) -> None:
    client = make_client(hub_mirror)
    client.fetch_facts(repo_id=LLAMA_8B, revision=None, token=DEFAULT_TOKEN)
    hub_mirror.clear_requests()
    with pytest.raises(ModelAccessDenied):
        client.fetch_facts(repo_id=LLAMA_8B, revision=None, token=None)
    with pytest.raises(ModelAccessDenied):
        client.fetch_facts(repo_id=LLAMA_8B, revision=None, token="hf_other")
    # each refused token cost the model info and one HEAD of a file, and no facts requests
    assert [r.kind for r in hub_mirror.requests()] == ["model_info", "file_head"] * 2


def test_the_process_login_is_never_used_on_a_users_behalf(
    hub_mirror: RunningMirror, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", DEFAULT_TOKEN)
    with pytest.raises(ModelAccessDenied, match="is gated"):
        make_client(hub_mirror).fetch_facts(repo_id=LLAMA_8B, revision=None, token=None)
    assert not any(r.authorized for r in hub_mirror.requests())


def test_a_hub_answering_503_is_model_source_unavailable(hub_mirror: RunningMirror) -> None:
    outcomes: list[str] = []
    hub_mirror.inject_fault(503)
    with pytest.raises(ModelSourceUnavailable, match=r"answered HTTP 503.*retrying") as err:
        make_client(hub_mirror, on_call=outcomes.append).fetch_facts(
            repo_id=QWEN_7B, revision=None, token=None
        )
    assert outcomes == ["unavailable"]
    assert err.value.status == 503


def test_a_503_on_one_shard_caches_nothing_and_the_next_call_recovers(hub_mirror: RunningMirror) -> None:
    clock = Clock()
    client = make_client(hub_mirror, clock=clock)
    hub_mirror.inject_fault(503, match="model-00003-of-00004")
    with pytest.raises(ModelSourceUnavailable) as err:
        client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
    hub_mirror.clear_faults()
    assert err.value.retry_after is not None
    clock.now += err.value.retry_after
    assert client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None).parameter_count == 7_615_616_512


def test_an_unreachable_hub_is_model_source_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = HubClient(endpoint=f"http://127.0.0.1:{port}", timeout=5.0, clock=Clock())
    with pytest.raises(ModelSourceUnavailable, match="could not be reached"):
        client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)


def test_a_hundred_orders_of_one_model_cost_one_resolution_and_one_facts_fetch(
    hub_mirror: RunningMirror,
) -> None:
    outcomes: list[str] = []
    client = make_client(hub_mirror, on_call=outcomes.append)
    results = [client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None) for _ in range(100)]
    assert all(r is results[0] for r in results)
    kinds = [r.kind for r in hub_mirror.requests()]
    assert kinds.count("model_info") == 1
    assert kinds.count("file_get") == 2  # config.json and model.safetensors.index.json
    assert kinds.count("file_range") == 4  # one header read per shard
    assert len(kinds) == 7
    assert outcomes == ["ok"] * 7


def test_concurrent_orders_of_one_model_share_one_fetch(hub_mirror: RunningMirror) -> None:
    client = make_client(hub_mirror)
    barrier = threading.Barrier(16)
    counts: list[int] = []

    def order() -> None:
        barrier.wait()
        counts.append(client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None).parameter_count)

    threads = [threading.Thread(target=order) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts == [7_615_616_512] * 16
    assert len(hub_mirror.requests()) == 7


def test_after_the_revision_ttl_only_the_revision_is_resolved_again(hub_mirror: RunningMirror) -> None:
    clock = Clock()
    client = make_client(hub_mirror, clock=clock, revision_ttl=60.0)
    client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
    clock.now += 59
    client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
    assert len(hub_mirror.requests()) == 7
    clock.now += 2
    client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
    assert [r.kind for r in hub_mirror.requests()[7:]] == ["model_info"]


def test_a_branch_and_its_commit_share_the_facts_of_the_commit(hub_mirror: RunningMirror) -> None:
    client = make_client(hub_mirror)
    sha = hub_mirror.repos[QWEN_7B].sha
    by_branch = client.fetch_facts(repo_id=QWEN_7B, revision="main", token=None)
    by_commit = client.fetch_facts(repo_id=QWEN_7B, revision=sha, token=None)
    assert by_branch == by_commit
    assert by_commit.revision == sha
    assert [r.kind for r in hub_mirror.requests()].count("model_info") == 2
    assert len(hub_mirror.requests()) == 8


@pytest.mark.parametrize(
    ("repo_id", "requests"),
    [
        ("Qwen/Qwen2.5-0.5B-Instruct", 3),  # info, config.json, one header range
        ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", 2),  # info, then the served file's header range
        ("meta-llama/Llama-3.1-70B-Instruct", 33),  # info, config, index, 30 shard headers
        ("sentence-transformers/all-MiniLM-L6-v2", 4),  # info, config, sentence_bert_config, header
    ],
    ids=[
        "a single-file model",
        "a GGUF repository",
        "a 30-shard gated model",
        "a sentence-transformers model",
    ],
)
def test_what_the_first_order_of_a_model_costs(
    hub_mirror: RunningMirror, repo_id: str, requests: int
) -> None:
    token = DEFAULT_TOKEN if hub_mirror.repos[repo_id].gated else None
    facts = make_client(hub_mirror).fetch_facts(repo_id=repo_id, revision=None, token=token)
    assert facts.name == repo_id
    assert len(hub_mirror.requests()) == requests


def test_the_sentence_transformers_max_seq_length_is_read_from_the_hub(hub_mirror: RunningMirror) -> None:
    facts = make_client(hub_mirror).fetch_facts(
        repo_id="sentence-transformers/all-MiniLM-L6-v2", revision=None, token=None
    )
    assert (facts.context_length, facts.max_seq_length) == (512, 256)


def test_a_refusal_is_remembered_for_the_refusal_ttl(hub_mirror: RunningMirror) -> None:
    clock = Clock()
    client = make_client(hub_mirror, clock=clock, refusal_ttl=10.0)
    for _ in range(50):
        with pytest.raises(ModelNotFound):
            client.fetch_facts(repo_id="nobody/nothing", revision=None, token=None)
    assert len(hub_mirror.requests()) == 1
    clock.now += 11
    with pytest.raises(ModelNotFound):
        client.fetch_facts(repo_id="nobody/nothing", revision=None, token=None)
    assert len(hub_mirror.requests()) == 2


def test_a_new_token_is_tried_at_once_after_a_refusal(hub_mirror: RunningMirror) -> None:
    client = make_client(hub_mirror)
    with pytest.raises(ModelAccessDenied):
        client.fetch_facts(repo_id=LLAMA_8B, revision=None, token="hf_not_granted")
    assert client.fetch_facts(repo_id=LLAMA_8B, revision=None, token=DEFAULT_TOKEN).gated


def test_an_unavailable_hub_is_asked_again_only_after_the_backoff(hub_mirror: RunningMirror) -> None:
    """A fast failure (a 5xx) holds the key for the first step each time (a slow one, which held a
    worker, grows: tests/unit/controller/test_hub_backoff.py)."""
    clock = Clock()
    client = make_client(hub_mirror, clock=clock, rand=lambda: 0.0)
    hub_mirror.inject_fault(502)
    waits = []
    for _ in range(4):
        for _ in range(5):  # the order's requeues within the wait do not reach the Hub
            with pytest.raises(ModelSourceUnavailable, match="HTTP 502") as err:
                client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
        assert err.value.retry_after is not None
        waits.append(err.value.retry_after)
        clock.now += 1000
    assert len(hub_mirror.requests()) == 4
    assert waits == [5.0, 5.0, 5.0, 5.0]  # half of the 10 s step, with no jitter
