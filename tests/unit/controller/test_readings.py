"""Reading the live workload: WorkloadReady, ScalingHealthy, scheduler feedback."""

from __future__ import annotations

from typing import Any

import pytest

from controller.live import workload as observe
from shared import reasons as r

T = "2026-01-01T00:00:00Z"
T_EPOCH = 1767225600.0


def deployment(
    *, available: int = 0, replicas: int = 1, generation: int = 1, observed: int = 1
) -> dict[str, Any]:
    return {
        "metadata": {"name": "o", "generation": generation},
        "spec": {"replicas": replicas},
        "status": {
            "availableReplicas": available,
            "updatedReplicas": available,
            "observedGeneration": observed,
        },
    }


def pod(name: str, *, unschedulable: bool, since: str = T, claim: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": []}
    if unschedulable:
        status["conditions"].append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "lastTransitionTime": since,
                "message": "0/8 nodes are available: 8 cannot allocate all claims.",
            }
        )
    if claim:
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim}]
    return {"metadata": {"name": name}, "status": status}


def test_no_deployment_yet_is_progressing() -> None:
    assert observe.workload_verdict(None, []).reason == r.PROGRESSING


def test_an_available_replica_of_the_current_rollout_is_available() -> None:
    v = observe.workload_verdict(deployment(available=1), [])
    assert (v.status, v.reason) == ("True", r.AVAILABLE)


def test_an_old_rollout_is_not_available_yet() -> None:
    v = observe.workload_verdict(deployment(available=1, generation=2, observed=1), [])
    assert v.status == "False"


def test_an_unschedulable_pod_is_reported_with_the_scheduler_message() -> None:
    v = observe.workload_verdict(deployment(), [pod("o-1", unschedulable=True)])
    assert (v.reason, "cannot allocate all claims" in v.message) == (r.UNSCHEDULABLE, True)


def test_the_claim_is_stuck_only_when_every_pod_is_unschedulable_and_none_available() -> None:
    pods = [pod("o-1", unschedulable=True)]
    assert observe.claim_stuck_since(deployment(), pods) == T_EPOCH
    assert observe.claim_stuck_since(deployment(available=1), pods) is None
    assert observe.claim_stuck_since(deployment(), [*pods, pod("o-2", unschedulable=False)]) is None


PREEMPTION = " preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling."


@pytest.mark.parametrize(
    "reasons",
    [
        "0/8 nodes are available: 8 cannot allocate all claims.",
        # cordoned, tainted or unselected nodes are out of play: the claim failed on all the others
        "0/8 nodes are available: 2 node(s) were unschedulable, 6 cannot allocate all claims.",
        "0/8 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "7 cannot allocate all claims.",
        "0/8 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 5 cannot allocate all claims.",
    ],
)
def test_the_claim_is_blamed_when_the_other_nodes_are_out_of_play(reasons: str) -> None:
    assert observe.claim_unallocatable(reasons + PREEMPTION)


@pytest.mark.parametrize(
    "reasons",
    [
        # the real scheduler, the planned L4s free but their nodes short: only nodes without an L4
        # name the claim (its resource filter runs before the DRA plugin)
        "0/8 nodes are available: 2 Insufficient cpu, 2 Insufficient memory, 4 cannot allocate all claims.",
        "0/8 nodes are available: 1 Insufficient nvidia.com/gpu, 7 cannot allocate all claims.",
        "0/8 nodes are available: 1 Too many pods, 7 cannot allocate all claims.",
        "0/8 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "7 cannot allocate all claims.",
        "0/8 nodes are available: 2 node(s) didn't find available persistent volumes to bind, "
        "6 cannot allocate all claims.",
        "0/8 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity, "
        "6 cannot allocate all claims.",
        "0/8 nodes are available: 1 node(s) did not have enough free storage, 7 cannot allocate all claims.",
        # no claim words at all
        "0/8 nodes are available: 8 Insufficient cpu.",
        "0/8 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
        "0/8 nodes are available: 8 node(s) had untolerated taint {e2e-hold: 1}.",
    ],
)
def test_the_claim_is_not_blamed_when_a_node_lacked_something_else_the_pod_asks(reasons: str) -> None:
    assert not observe.claim_unallocatable(reasons + PREEMPTION)


def test_claim_words_in_the_preemption_part_alone_do_not_blame_the_claim() -> None:
    assert not observe.claim_unallocatable(
        "0/8 nodes are available: 8 Insufficient cpu. preemption: 0/8 nodes are available: "
        "8 cannot allocate all claims."
    )


def test_a_pod_short_of_cpu_where_its_devices_are_is_unschedulable_but_its_claim_is_not_stuck() -> None:
    message = (
        "0/8 nodes are available: 2 Insufficient cpu, 2 Insufficient memory, 4 cannot allocate all claims."
    )
    stuck = pod("o-1", unschedulable=True)
    stuck["status"]["conditions"][0]["message"] = message + PREEMPTION
    v = observe.workload_verdict(deployment(), [stuck])
    assert (v.status, v.reason) == ("False", r.UNSCHEDULABLE)
    assert message in v.message
    assert observe.claim_stuck_since(deployment(), [stuck]) is None


def test_scale_up_blocked_after_the_grace_period() -> None:
    hpa = {"status": {"desiredReplicas": 2}}
    pods = [pod("o-1", unschedulable=False), pod("o-2", unschedulable=True)]
    early, again = observe.scaling_verdict(deployment(available=1), hpa, pods, now=T_EPOCH + 10, grace=60)
    assert (early.status, again) == ("True", 50.0)
    late, again = observe.scaling_verdict(deployment(available=1), hpa, pods, now=T_EPOCH + 61, grace=60)
    assert (late.status, late.reason, again) == ("False", r.SCALE_UP_BLOCKED, None)


def test_scaling_is_healthy_when_the_desired_replicas_are_available() -> None:
    v, _ = observe.scaling_verdict(
        deployment(available=2), {"status": {"desiredReplicas": 2}}, [], now=0, grace=1
    )
    assert (v.status, v.reason) == ("True", r.SCALING_HEALTHY_OK)


def test_own_claims_come_from_the_pods_status() -> None:
    assert observe.own_claim_names([pod("o-1", unschedulable=False, claim="o-1-gpu-x")]) == {"o-1-gpu-x"}


def test_a_deployment_that_cannot_create_pods_has_failed() -> None:
    dep = deployment()
    dep["status"]["conditions"] = [
        {"type": "ReplicaFailure", "status": "True", "message": "no PriorityClass with name nope was found"}
    ]
    v = observe.workload_verdict(dep, [])
    assert (v.reason, "PriorityClass" in v.message) == (r.WORKLOAD_FAILED, True)
