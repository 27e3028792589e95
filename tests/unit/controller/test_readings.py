"""Reading the live workload: WorkloadReady, ScalingHealthy, scheduler feedback."""

from __future__ import annotations

from typing import Any

import pytest

from controller.live import workload as observe
from controller.live.group_status import GROUP_INDEX_LABEL
from controller.planner.headroom import Room
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


# ------------------------------------------------------------------ capacity-aware scaling (the ledger's room)

L4_SHAPE = "1 x NVIDIA L4 from gpu.nvidia.com"


def room(placed: int, more: int, limit: int = 5) -> Room:
    return Room(placed=placed, more=more, limit=limit, looked_at=L4_SHAPE)


def test_scale_up_is_blocked_at_once_when_the_ledger_has_no_room() -> None:
    """The HPA wants 3, 1 serves, the free devices hold none: blocked in the reconcile that reads the
    HPA's decision, before any extra pod exists, let alone waited the grace."""
    v, again = observe.scaling_verdict(
        deployment(available=1, replicas=1),
        {"status": {"desiredReplicas": 3}},
        [],
        now=T_EPOCH,
        grace=120,
        room=room(placed=1, more=0, limit=2),
    )
    assert (v.status, v.reason, again) == ("False", r.SCALE_UP_BLOCKED, None)
    assert v.message == (
        "The autoscaler wants 3 replica(s) but 1 are available; the free devices hold 0 more of "
        f"{L4_SHAPE}: 2 short."
    )


def test_scale_up_is_blocked_when_the_room_is_short_of_what_is_wanted() -> None:
    v, _ = observe.scaling_verdict(
        deployment(available=1), {"status": {"desiredReplicas": 4}}, [], now=0, grace=120, room=room(1, 1)
    )
    assert (v.status, v.reason) == ("False", r.SCALE_UP_BLOCKED)
    assert "hold 1 more" in v.message and "2 short" in v.message


def test_scaling_is_healthy_again_when_the_wish_drops_or_the_room_appears() -> None:
    hpa = {"status": {"desiredReplicas": 2}}
    dropped, _ = observe.scaling_verdict(
        deployment(available=2), hpa, [], now=0, grace=120, room=room(placed=2, more=0, limit=0)
    )
    assert (dropped.status, dropped.reason) == ("True", r.SCALING_HEALTHY_OK)
    grown, again = observe.scaling_verdict(
        deployment(available=1), hpa, [], now=0, grace=120, room=room(placed=1, more=1, limit=1)
    )
    assert (grown.status, grown.reason, again) == ("True", r.SCALING_HEALTHY_OK, None)


def test_a_replica_loading_its_model_holds_its_place_but_is_not_available() -> None:
    """2 wanted, 1 Ready and 1 loading on its allocated devices, no room for more: nothing is
    blocked (the loading replica needs no more devices), and it is not counted as available."""
    v, _ = observe.scaling_verdict(
        deployment(available=1, replicas=2),
        {"status": {"desiredReplicas": 2}},
        [],
        now=0,
        grace=120,
        room=room(placed=2, more=0, limit=0),
    )
    assert (v.status, v.reason) == ("True", r.SCALING_HEALTHY_OK)
    assert "from 1 to 2" in v.message
    blocked, _ = observe.scaling_verdict(
        deployment(available=1, replicas=3),
        {"status": {"desiredReplicas": 3}},
        [],
        now=0,
        grace=120,
        room=room(placed=2, more=0, limit=1),
    )
    assert "1 are available, 1 more starting" in blocked.message and "1 short" in blocked.message


def test_when_the_ledger_says_it_fits_the_grace_still_judges_stuck_pods() -> None:
    """What the ledger cannot see (cpu, taints, a device taken meanwhile): the old grace path."""
    hpa = {"status": {"desiredReplicas": 2}}
    pods = [pod("o-1", unschedulable=False), pod("o-2", unschedulable=True)]
    fits = room(placed=1, more=1, limit=1)
    early, again = observe.scaling_verdict(
        deployment(available=1), hpa, pods, now=T_EPOCH + 10, grace=60, room=fits
    )
    assert (early.status, again) == ("True", 50.0)
    late, again = observe.scaling_verdict(
        deployment(available=1), hpa, pods, now=T_EPOCH + 61, grace=60, room=fits
    )
    assert (late.status, late.reason, again) == ("False", r.SCALE_UP_BLOCKED, None)
    assert "unschedulable for 61s" in late.message


def claimed_pod(
    name: str, template: str, claim: str, *, group: str | None = None, deleting: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {} if group is None else {GROUP_INDEX_LABEL: group}}
    if deleting:
        meta["deletionTimestamp"] = T
    return {
        "metadata": meta,
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]},
        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim}]},
    }


def test_placed_replicas_are_the_plans_pods_whose_claims_are_allocated() -> None:
    pods = [
        claimed_pod("ready", "tpl", "ready-gpu"),
        claimed_pod("loading", "tpl", "loading-gpu"),  # scheduled, its claim allocated, not Ready yet
        claimed_pod("pending", "tpl", "pending-gpu"),  # its claim not allocated
        claimed_pod("old-plan", "old-tpl", "old-gpu"),
        claimed_pod("going", "tpl", "going-gpu", deleting=True),
        pod("no-claim-yet", unschedulable=True),
    ]
    allocated = {"ready-gpu", "loading-gpu", "old-gpu", "going-gpu"}
    assert observe.placed_replicas(pods, {"tpl"}, allocated) == 2


def test_a_group_is_placed_once_for_all_its_pods() -> None:
    pods = [
        claimed_pod("set-0", "leader", "l0", group="0"),
        claimed_pod("set-0-1", "worker", "w0", group="0"),
        claimed_pod("set-1", "leader", "l1", group="1"),
        claimed_pod("set-1-1", "worker", "w1", group="1"),  # not allocated: the group counts all the same
        claimed_pod("set-2", "leader", "l2", group="2"),  # not allocated
    ]
    assert observe.placed_replicas(pods, {"leader", "worker"}, {"l0", "w0", "l1"}) == 2
