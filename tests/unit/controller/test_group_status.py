"""WorkloadReady of a multi-node order: True only when a whole group is ready, naming a lost pod."""

from __future__ import annotations

from typing import Any

from controller.live.workload import workload_verdict
from shared import reasons as r

SET = "big-group"


def lws(ready: int = 1, size: int = 2) -> dict[str, Any]:
    return {
        "kind": "LeaderWorkerSet",
        "metadata": {"name": SET},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": size}},
        "status": {"readyReplicas": ready, "replicas": 1},
    }


def pod(name: str, *, ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"leaderworkerset.sigs.k8s.io/name": SET}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_a_whole_ready_group_is_available() -> None:
    v = workload_verdict(lws(), [pod(SET + "-0"), pod(SET + "-0-1")])
    assert v.ok and v.reason == r.AVAILABLE


def test_a_lost_worker_is_not_ready_and_named_even_before_lws_counts_it() -> None:
    v = workload_verdict(lws(ready=1), [pod(SET + "-0")])
    assert not v.ok and v.reason == r.PROGRESSING
    assert f"worker pod {SET}-0-1 is missing" in v.message
    v = workload_verdict(lws(ready=1), [pod(SET + "-0"), pod(SET + "-0-1", deleting=True)])
    assert not v.ok and f"worker pod {SET}-0-1 is being deleted" in v.message


def test_ready_pods_without_lws_counting_the_group_are_not_enough() -> None:
    v = workload_verdict(lws(ready=0), [pod(SET + "-0"), pod(SET + "-0-1")])
    assert not v.ok


def test_an_unready_leader_is_named() -> None:
    v = workload_verdict(lws(ready=0), [pod(SET + "-0", ready=False), pod(SET + "-0-1")])
    assert not v.ok and f"leader pod {SET}-0 is not ready" in v.message
