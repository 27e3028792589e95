"""Reading the live workload: WorkloadReady, ScalingHealthy, scheduler feedback."""

from __future__ import annotations

from typing import Any

from controller import readings as observe
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
