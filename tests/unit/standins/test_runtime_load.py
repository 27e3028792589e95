"""The stand-in's load model (``standins.runtime.load``) and its exposition in vLLM's metric names
(``standins.runtime.metrics``), without servers: admissions and finishes by hand."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from standins.runtime.load import Load, LoadConfig, PodLoad
from standins.runtime.metrics import exposition
from standins.runtime.orders import LWS_WORKER_INDEX_LABEL, pod_is_ready, serves

ORDER = ("team-a", "chat")


def numbers(load: Load, pod: str) -> tuple[int, int, int]:
    got = load.pod_load(ORDER, pod)
    return got.running, got.waiting, got.success


def test_a_queue_forms_beyond_the_slots_and_drains_first_in_first_out() -> None:
    load = Load(LoadConfig(slots=4))
    tickets = [load.admit(ORDER, ["p-0"]) for _ in range(6)]
    assert all(t is not None for t in tickets)
    granted = [t.granted.is_set() for t in tickets if t is not None]
    assert granted == [True] * 4 + [False] * 2
    assert numbers(load, "p-0") == (4, 2, 0)
    assert load.pod_load(ORDER, "p-0").kv_cache_usage == 1.0
    first, *_, fifth, sixth = [t for t in tickets if t is not None]
    load.finish(first, prompt_tokens=3, generation_tokens=7)
    assert fifth.granted.is_set() and not sixth.granted.is_set()  # the first waiting goes first
    assert numbers(load, "p-0") == (4, 1, 1)
    for t in tickets[1:]:
        assert t is not None
        load.finish(t, prompt_tokens=1, generation_tokens=2)
    assert sixth.granted.is_set()
    done = load.pod_load(ORDER, "p-0")
    assert (done.running, done.waiting, done.success) == (0, 0, 6)
    assert (done.prompt_tokens, done.generation_tokens, done.kv_cache_usage) == (8, 17, 0.0)


def test_requests_go_to_the_least_loaded_ready_pod() -> None:
    load = Load(LoadConfig(slots=2))
    pods = ["p-0", "p-1", "p-2"]
    placed = [str(t.pod) for t in (load.admit(ORDER, pods) for _ in range(7)) if t is not None]
    assert sorted(placed) == ["p-0", "p-0", "p-0", "p-1", "p-1", "p-2", "p-2"]
    assert sum(numbers(load, p)[1] for p in pods) == 1  # 6 slots taken, one waits
    assert load.admit(ORDER, ["p-3"]) is not None and numbers(load, "p-3") == (1, 0, 0)


def test_without_a_ready_pod_the_order_has_one_implicit_replica() -> None:
    load = Load(LoadConfig(slots=1))
    first, second = load.admit(ORDER, []), load.admit(ORDER, [])
    assert first is not None and second is not None
    assert (first.pod, first.granted.is_set(), second.granted.is_set()) == (None, True, False)
    assert load.pod_load(ORDER, "p-0") == PodLoad(slots=1)  # no pod of the order shows its numbers
    assert load.pod_load(("team-b", "other"), "p-0") == PodLoad(slots=1)


def test_a_full_queue_refuses_and_an_abandoned_request_gives_its_place_up() -> None:
    load = Load(LoadConfig(slots=1, queue_limit=2))
    tickets = [load.admit(ORDER, ["p-0"]) for _ in range(3)]
    assert load.admit(ORDER, ["p-0"]) is None
    running, waiting, last = tickets
    assert running is not None and waiting is not None and last is not None
    load.abandon(waiting)  # a client gone while it waited
    assert numbers(load, "p-0") == (1, 1, 0)
    load.abandon(running)  # an error while it ran: not a success
    assert last.granted.is_set() and numbers(load, "p-0") == (1, 0, 0)


def test_more_slots_grant_the_waiting_at_once_fewer_let_the_running_finish() -> None:
    load = Load(LoadConfig(slots=1))
    tickets = [load.admit(ORDER, ["p-0"]) for _ in range(3)]
    load.configure(LoadConfig(slots=3))
    assert all(t is not None and t.granted.is_set() for t in tickets)
    load.configure(LoadConfig(slots=1))
    assert numbers(load, "p-0") == (3, 0, 0)
    assert load.pod_load(ORDER, "p-0").kv_cache_usage == 1.0
    extra = load.admit(ORDER, ["p-0"])
    assert extra is not None and not extra.granted.is_set()


def test_a_hold_lasts_the_decode_time_of_the_moment() -> None:
    load = Load(LoadConfig(decode_seconds=60))
    start = time.monotonic()
    holding = threading.Thread(target=load.hold, args=(start,))
    holding.start()
    holding.join(timeout=0.1)
    assert holding.is_alive()
    load.configure(LoadConfig(decode_seconds=0.2))  # shortened: it ends 0.2 s after its start
    holding.join(timeout=5)
    assert not holding.is_alive() and 0.2 <= time.monotonic() - start < 2
    load.hold(time.monotonic() - 1)  # already past: returns at once


@pytest.mark.parametrize(
    "kwargs", [{"slots": 0}, {"decode_seconds": -1.0}, {"decode_seconds": 601.0}, {"queue_limit": -1}]
)
def test_a_bad_configuration_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        LoadConfig(**kwargs)  # type: ignore[arg-type]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_the_exposition_parses_with_vllms_names_and_labels() -> None:
    load = PodLoad(running=3, waiting=5, slots=4, success=11, prompt_tokens=20, generation_tokens=90)
    got = samples(exposition("Qwen/Qwen2.5-7B-Instruct", load).decode())
    labels = (("engine", "0"), ("model_name", "Qwen/Qwen2.5-7B-Instruct"))
    assert got[("vllm:num_requests_running", labels)] == 3
    assert got[("vllm:num_requests_waiting", labels)] == 5
    assert got[("vllm:kv_cache_usage_perc", labels)] == 0.75
    assert got[("vllm:prompt_tokens_total", labels)] == 20
    assert got[("vllm:generation_tokens_total", labels)] == 90
    success = {
        dict(k[1])["finished_reason"]: v for k, v in got.items() if k[0] == "vllm:request_success_total"
    }
    assert success == {"stop": 11, "length": 0, "abort": 0, "error": 0, "repetition": 0}
    families = {f.name: f.type for f in text_string_to_metric_families(exposition("m", PodLoad()).decode())}
    assert families == {
        "vllm:num_requests_running": "gauge",
        "vllm:num_requests_waiting": "gauge",
        "vllm:kv_cache_usage_perc": "gauge",
        "vllm:prompt_tokens": "counter",
        "vllm:generation_tokens": "counter",
        "vllm:request_success": "counter",
    }


def pod(*, ready: str | None, deleting: bool = False, worker: str | None = None) -> k8s.V1Pod:
    conditions = [k8s.V1PodCondition(type="Ready", status=ready)] if ready else None
    meta = k8s.V1ObjectMeta(
        name="p",
        deletion_timestamp="2026-12-03T00:00:00Z" if deleting else None,
        labels={LWS_WORKER_INDEX_LABEL: worker} if worker is not None else None,
    )
    return k8s.V1Pod(metadata=meta, status=k8s.V1PodStatus(conditions=conditions))


def test_a_replica_is_a_ready_pod_not_being_deleted_and_a_groups_leader() -> None:
    assert pod_is_ready(pod(ready="True"))
    assert not pod_is_ready(pod(ready="False"))
    assert not pod_is_ready(pod(ready=None))
    assert not pod_is_ready(pod(ready="True", deleting=True))
    assert pod_is_ready(pod(ready="True", worker="0"))  # the leader runs vllm serve
    assert not pod_is_ready(pod(ready="True", worker="1")) and not serves(pod(ready="True", worker="1"))
