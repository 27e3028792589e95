"""Table tests of ``decide`` at the level of snapshots: every row of api.md section 3's reasons table
that decide produces, and the cases of the load issue (reasons judged from what is observed now).

Each case builds the snapshot ``observe`` would read, runs the pure pipeline (``plan_decision``,
the planner where the reconciler would ask the ledger, ``decide``) and builds the status ``act``
would write with ``build_status``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from controller.decide import APPLIED_HASH, decide
from controller.intents import Intents
from controller.live import drift
from controller.planner import LaunchPlan
from controller.planning import plan_decision
from controller.snapshot import Capacity, ModelObservation, Planning, ProbeState, Snapshot
from shared import reasons as r
from shared.conditions import false
from tests.unit.controller.snapshots import (
    CLAIMS_FAIL,
    GPU,
    MIG,
    NO_CPU,
    NO_CPU_WHERE_THE_DEVICES_ARE,
    NOW,
    READY_STATUS,
    SMALL,
    TAINTED,
    UNBOUND_VOLUME,
    URL,
    conditions_of,
    decide_and_build,
    deployment,
    failed,
    first_passes,
    hpa,
    klass,
    order_with,
    plan_on,
    pod,
    resolved_for,
    run_planner,
    serving,
    snap,
    status,
)

# ------------------------------------------------------------------ ClassResolved


def test_class_not_found_holds_the_chain_and_reports_no_model_error() -> None:
    s = snap(klass=None, model=None)
    intents, st = decide_and_build(s, Planning())
    c = conditions_of(st)
    assert c[r.CLASS_RESOLVED] == ("False", r.CLASS_NOT_FOUND)
    assert c[r.MODEL_RESOLVED] == ("Unknown", r.AWAITING)
    assert c[r.PLANNED] == ("Unknown", r.AWAITING)
    assert c[r.READY] == ("False", r.CLASS_NOT_FOUND)
    assert st.phase == "Pending"
    assert intents.apply == () and intents.plan is None


def test_class_not_ready_when_a_named_recipe_does_not_exist() -> None:
    s = snap(klass=klass(spec={"recipes": ["sglang"]}))
    intents, st = decide_and_build(s, Planning())
    assert conditions_of(st)[r.CLASS_RESOLVED] == ("False", r.CLASS_NOT_READY)
    assert "sglang" in intents.verdicts[r.CLASS_RESOLVED].message
    assert conditions_of(st)[r.READY] == ("False", r.CLASS_NOT_READY)
    assert st.phase == "Pending"


def test_the_status_constraints_show_the_effective_scaling_policy() -> None:
    """status.constraints: the class's bounds and the signal its autoscaler follows, defaults filled in."""
    _, st = decide_and_build(snap(), Planning())
    assert st.constraints is not None
    assert (st.constraints.metric, st.constraints.target) == ("QueueDepth", 2)
    s = snap(klass=klass(spec={"scaling": {"metric": "KVCacheUtilization", "target": 70}}))
    _, st = decide_and_build(s, Planning())
    assert st.constraints is not None
    assert (st.constraints.min_replicas, st.constraints.max_replicas) == (1, 4)
    assert (st.constraints.metric, st.constraints.target) == ("KVCacheUtilization", 70)
    assert st.constraints.to_wire() == {
        "minReplicas": 1,
        "maxReplicas": 4,
        "priorityClassName": "inference-default",
        "metric": "KVCacheUtilization",
        "target": 70,
    }


# ------------------------------------------------------------------ ModelResolved

MODEL_REASONS = [
    (r.MODEL_NOT_FOUND, "Failed"),
    (r.MODEL_NOT_READY, "Pending"),
    (r.MODEL_ACCESS_DENIED, "Failed"),
    (r.AUTH_SECRET_NOT_FOUND, "Pending"),
    (r.MODEL_SOURCE_UNAVAILABLE, "Pending"),
    (r.ENDPOINT_TYPE_POLICY_CONFLICT, "Failed"),
    (r.FORMAT_NOT_ALLOWED, "Failed"),
    (r.PARAMETER_COUNT_NOT_ALLOWED, "Failed"),
    (r.CATALOG_DISABLED, "Failed"),
]


@pytest.mark.parametrize(("reason", "phase"), MODEL_REASONS)
def test_each_model_reason_is_reported_and_nothing_is_planned(reason: str, phase: str) -> None:
    s = snap(model=ModelObservation(false(reason, f"the model: {reason}")))
    intents, st = decide_and_build(s, Planning())
    c = conditions_of(st)
    assert c[r.CLASS_RESOLVED] == ("True", r.RESOLVED)
    assert c[r.MODEL_RESOLVED] == ("False", reason)
    assert c[r.PLANNED] == ("Unknown", r.AWAITING)
    assert c[r.READY] == ("False", reason)
    assert st.phase == phase
    assert intents.apply == () and intents.plan is None
    if reason == r.MODEL_SOURCE_UNAVAILABLE:
        assert intents.requeue is not None and intents.requeue <= 10.0, "the source is asked again soon"


def test_an_unavailable_source_is_looked_at_again_when_the_hub_client_says() -> None:
    unavailable = false(r.MODEL_SOURCE_UNAVAILABLE, "The model hub answered HTTP 503.")
    intents, _ = decide_and_build(snap(model=ModelObservation(unavailable, look_again=160.0)), Planning())
    assert intents.requeue == 160.0, "the Hub client's backoff, not a fixed 10 s"


def test_a_resolved_model_is_recorded_in_the_status() -> None:
    s = snap()
    p = run_planner(s, plan_decision(s))
    _, st = decide_and_build(s, p)
    assert conditions_of(st)[r.MODEL_RESOLVED] == ("True", r.RESOLVED)
    assert st.model is not None and st.model.revision == SMALL.revision
    assert st.model.endpoint_type == "Chat"


# ------------------------------------------------------------------ Planned

PLAN_FAILURES = [
    (r.NO_CAPACITY, "Pending", True),
    (r.NO_ACCELERATOR_WITH_ENOUGH_MEMORY, "Pending", False),
    (r.QUANTIZATION_MISMATCH, "Failed", False),
    (r.NO_COMPATIBLE_RUNTIME_AVAILABLE, "Failed", False),
    (r.RESOURCE_CLAIM_EXHAUSTED, "Pending", True),
    (r.PLACEMENT_UNDECIDABLE, "Failed", False),
]


@pytest.mark.parametrize(("reason", "phase", "waits"), PLAN_FAILURES)
def test_each_planner_refusal_is_reported_for_a_new_order(reason: str, phase: str, waits: bool) -> None:
    s = snap()
    d = plan_decision(s)
    assert (d.compute, d.count, d.trigger) == (True, False, "no plan yet")
    intents, st = decide_and_build(s, Planning(outcome=failed(reason, "why"), trigger=d.trigger))
    c = conditions_of(st)
    assert c[r.PLANNED] == ("False", reason)
    assert c[r.WORKLOAD_READY] == ("Unknown", r.AWAITING)
    assert c[r.READY] == ("False", reason)
    assert st.phase == phase
    assert intents.apply == () and intents.plan is None
    assert intents.waiting is waits, "only capacity reasons wait for capacity"


def test_a_new_order_records_its_plan_first_then_applies_its_workload() -> None:
    s = snap()
    p = run_planner(s, plan_decision(s))
    assert p.outcome is not None and p.outcome.plan is not None
    first, st, second = first_passes(s)
    c = conditions_of(st)
    assert c[r.PLANNED] == ("True", r.PLANNED_OK)
    assert c[r.WORKLOAD_READY] == ("Unknown", r.PROGRESSING)
    assert st.resolved is not None and st.resolved.device_class == GPU
    assert st.resolved.replan_count == 0
    assert first.apply == () and first.requeue == 0.0, "Planned is written before the workload"
    assert first.plan == p.outcome.plan
    assert st.endpoint is not None and st.endpoint.url == URL
    assert st.phase == "Pending"
    kinds = {o["kind"] for o in second.apply}
    assert {"Deployment", "ResourceClaimTemplate", "Service", "ScaledObject"} <= kinds
    assert "HorizontalPodAutoscaler" not in kinds, "KEDA makes the HPA"
    assert second.plan == p.outcome.plan
    assert second.verdicts[r.PLANNED] == first.verdicts[r.PLANNED], "the second pass writes no new status"


def test_a_stale_auth_secret_of_a_previous_order_of_the_name_gets_a_token_minted_for_this_one() -> None:
    """The token is minted with the workload's apply (the pass after Planned), into a Secret of the
    name only when an earlier order of the name controls it (``controller.live.takeover``)."""
    previous: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "support-llm-auth",
            "resourceVersion": "77",
            "ownerReferences": [
                {"kind": "InferenceService", "name": "support-llm", "uid": "u-0", "controller": True}
            ],
        },
    }
    s = snap(has_token=False, token=None, stale_auth_version="77", owned=(previous,))
    first, _, second = first_passes(s)
    assert not first.mint_token and second.mint_token
    own = snap()
    assert not first_passes(own)[2].mint_token
    tenants = {**previous, "metadata": {**previous["metadata"], "ownerReferences": []}}
    _, _, second = first_passes(replace(s, owned=(tenants,)))
    assert not second.mint_token and second.apply == ()
    assert second.verdicts[r.WORKLOAD_READY].reason == r.NAME_CONFLICT


def test_a_new_storage_class_setting_leaves_an_existing_model_volume_as_it_is() -> None:
    """storageClassName and accessModes of a claim never change: applying the new setting to a
    stored claim would be refused (and reported as WorkloadFailed)."""
    s = snap()
    first, st, second = first_passes(s)
    live = next(o for o in second.apply if o["kind"] == "PersistentVolumeClaim")
    assert "storageClassName" not in live["spec"]
    live["spec"]["storageClassName"] = "standard"  # the default class, as the API server stores it
    applied = replace(s, order=s.order.model_copy(update={"status": st}), plan_in_force=first.plan)
    moved = replace(
        applied, owned=(live,), settings=s.settings.model_copy(update={"model_storage_class": "fast-nvme"})
    )
    steady = replace(applied, owned=(live,))

    def decided(x: Snapshot) -> Intents:
        return decide(x, run_planner(x, plan_decision(x)))

    assert "PersistentVolumeClaim" not in {o["kind"] for o in decided(steady).apply}
    kept = next(o for o in decided(moved).apply if o["kind"] == "PersistentVolumeClaim")
    assert (kept["metadata"]["name"], kept["spec"]["storageClassName"]) == (
        live["metadata"]["name"],
        "standard",
    )
    new = decided(replace(applied, settings=moved.settings))
    claim = next(o for o in new.apply if o["kind"] == "PersistentVolumeClaim")
    assert claim["spec"]["storageClassName"] == "fast-nvme"


def test_a_failed_recomputation_of_a_serving_order_keeps_the_plan_in_force() -> None:
    plan = plan_on(GPU)
    s = serving(
        plan, order=order_with(status(READY_STATUS, resolved=resolved_for(plan)), metadata={"generation": 2})
    )
    d = plan_decision(s)
    assert (d.compute, d.count, d.trigger) == (True, True, "order edit")
    intents, st = decide_and_build(
        s, Planning(outcome=failed(r.NO_CAPACITY, "no L4 is free"), trigger=d.trigger)
    )
    c = conditions_of(st)
    assert c[r.PLANNED] == ("True", r.LAUNCH_PLAN_IN_FORCE)
    assert "NoCapacity" in intents.verdicts[r.PLANNED].message
    assert c[r.READY] == ("True", r.SERVING)
    assert st.phase == "Ready"
    assert intents.plan == plan
    assert not [o for o in intents.apply if o["kind"] == "Deployment"], "the plan in force is left as it is"


# ------------------------------------------------------------------ WorkloadReady


def test_progressing_while_no_replica_is_available() -> None:
    plan = plan_on(GPU)
    s = snap(
        order=order_with(status(resolved=resolved_for(plan))),
        plan_in_force=plan,
        deployment=deployment(plan, available=0),
        pods=(pod("p-1", plan),),
    )
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.WORKLOAD_READY] == ("False", r.PROGRESSING)
    assert conditions_of(st)[r.READY] == ("False", r.PROGRESSING)
    assert intents.probe is None, "nothing to probe before a replica is available"


def test_unschedulable_pod_is_reported_with_the_schedulers_message() -> None:
    plan = plan_on(GPU)
    s = snap(
        order=order_with(status(resolved=resolved_for(plan))),
        plan_in_force=plan,
        deployment=deployment(plan),
        pods=(pod("p-1", plan, unschedulable=NO_CPU),),
    )
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.WORKLOAD_READY] == ("False", r.UNSCHEDULABLE)
    assert "Insufficient cpu" in intents.verdicts[r.WORKLOAD_READY].message


@pytest.mark.parametrize(
    "cond",
    [
        {
            "type": "Progressing",
            "status": "False",
            "reason": "ProgressDeadlineExceeded",
            "message": "too slow",
        },
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "quota exceeded"},
    ],
)
def test_a_failing_deployment_is_workload_failed(cond: dict[str, str]) -> None:
    plan = plan_on(GPU)
    s = snap(
        order=order_with(status(resolved=resolved_for(plan))),
        plan_in_force=plan,
        deployment=deployment(plan, conditions=[cond]),
    )
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.WORKLOAD_READY] == ("False", r.WORKLOAD_FAILED)
    assert cond["message"] in intents.verdicts[r.WORKLOAD_READY].message
    assert st.phase == "Pending"


# ------------------------------------------------------------------ Ready and probes


def test_the_first_probe_is_asked_for_and_awaited() -> None:
    plan = plan_on(GPU)
    s = serving(plan, prior=status(resolved=resolved_for(plan)), probe=ProbeState())
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.READY] == ("Unknown", r.AWAITING)
    assert intents.probe is not None and intents.probe.url == URL
    assert st.phase == "Pending"


def test_health_check_failed_before_the_first_ready() -> None:
    plan = plan_on(GPU)
    s = serving(
        plan,
        prior=status(resolved=resolved_for(plan)),
        probe=ProbeState(ok=False, detail="connection refused", failures=5, at=NOW - 1),
    )
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.READY] == ("False", r.HEALTH_CHECK_FAILED)
    assert "connection refused" in intents.verdicts[r.READY].message
    assert st.phase == "Pending"


@pytest.mark.parametrize(("failures", "expected", "phase"), [(2, "True", "Ready"), (3, "False", "Failed")])
def test_service_unhealthy_after_the_threshold_of_failures_following_ready(
    failures: int, expected: str, phase: str
) -> None:
    plan = plan_on(GPU)
    s = serving(plan, probe=ProbeState(ok=False, detail="503", failures=failures, at=NOW - 1))
    _, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    want = r.SERVING if expected == "True" else r.SERVICE_UNHEALTHY
    assert conditions_of(st)[r.READY] == (expected, want)
    assert st.phase == phase


def test_serving_when_the_probe_passes() -> None:
    plan = plan_on(GPU)
    s = serving(plan, prior=status(resolved=resolved_for(plan)))
    _intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    c = conditions_of(st)
    assert c[r.WORKLOAD_READY] == ("True", r.AVAILABLE)
    assert c[r.READY] == ("True", r.SERVING)
    assert c[r.SCALING_HEALTHY] == ("True", r.SCALING_HEALTHY_OK)
    assert st.phase == "Ready"


# ------------------------------------------------------------------ ScalingHealthy


def test_scale_up_blocked_past_the_grace_makes_the_order_degraded() -> None:
    plan = plan_on(GPU)
    stuck = pod("p-2", plan, unschedulable=CLAIMS_FAIL, since=NOW - 600)
    base = serving(plan)
    s = serving(
        plan, hpa=hpa(2), deployment=deployment(plan, available=1, replicas=2), pods=(*base.pods, stuck)
    )
    _intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.SCALING_HEALTHY] == ("False", r.SCALE_UP_BLOCKED)
    assert conditions_of(st)[r.READY] == ("True", r.SERVING)
    assert st.phase == "Degraded"


def test_a_scale_up_inside_the_grace_is_healthy_and_looked_at_again() -> None:
    plan = plan_on(GPU)
    stuck = pod("p-2", plan, unschedulable=CLAIMS_FAIL, since=NOW - 30)
    base = serving(plan)
    s = serving(
        plan, hpa=hpa(2), deployment=deployment(plan, available=1, replicas=2), pods=(*base.pods, stuck)
    )
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.SCALING_HEALTHY] == ("True", r.SCALING_HEALTHY_OK)
    assert intents.requeue is not None and intents.requeue <= 90.0 + 1
    assert st.phase == "Ready"


@pytest.mark.parametrize(
    "cond",
    [
        {
            "type": "Progressing",
            "status": "False",
            "reason": "ProgressDeadlineExceeded",
            "message": "timed out",
        },
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "exceeded quota"},
    ],
)
def test_a_scale_up_the_deployment_cannot_carry_out_leaves_a_serving_order_ready_but_degraded(
    cond: dict[str, str],
) -> None:
    """The Deployment's failure conditions speak of the replicas it could not add, not of the one
    that serves: WorkloadReady stays Available and ScalingHealthy says ScaleUpBlocked."""
    plan = plan_on(GPU)
    s = serving(plan, hpa=hpa(2), deployment=deployment(plan, available=1, replicas=2, conditions=[cond]))
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    c = conditions_of(st)
    assert c[r.WORKLOAD_READY] == ("True", r.AVAILABLE)
    assert c[r.READY] == ("True", r.SERVING)
    assert c[r.SCALING_HEALTHY] == ("False", r.SCALE_UP_BLOCKED)
    assert cond["message"] in intents.verdicts[r.SCALING_HEALTHY].message
    assert st.phase == "Degraded"


# ------------------------------------------------------------------ (a) no reason outlives its cause


@pytest.mark.parametrize(
    ("type_", "stale"),
    [
        (r.PLANNED, ("False", r.RESOURCE_CLAIM_EXHAUSTED)),
        (r.PLANNED, ("False", r.NO_CAPACITY)),
        (r.PLANNED, ("True", r.LAUNCH_PLAN_IN_FORCE)),
        (r.WORKLOAD_READY, ("False", r.WORKLOAD_FAILED)),
    ],
)
@pytest.mark.parametrize("device_class", [GPU, MIG])
def test_an_order_whose_pods_run_and_probe_passes_is_ready_whatever_it_said(
    type_: str, stale: tuple[str, str], device_class: str
) -> None:
    plan = plan_on(device_class)
    prior = {
        r.CLASS_RESOLVED: ("True", r.RESOLVED),
        r.MODEL_RESOLVED: ("True", r.RESOLVED),
        r.PLANNED: ("Unknown", r.AWAITING),
        r.WORKLOAD_READY: ("Unknown", r.AWAITING),
        r.READY: ("False", stale[1]),
    }
    prior[type_] = stale
    # the fallback walked every class: the sticky state of the load issue
    s = serving(plan, prior=status(prior, resolved=resolved_for(plan, tried=[GPU, MIG], replans=1)))
    d = plan_decision(s)
    assert not d.compute, "a serving plan is not recomputed on a stale reason"
    intents, st = decide_and_build(s, run_planner(s, d))
    c = conditions_of(st)
    assert c[r.PLANNED][0] == "True"
    assert c[r.WORKLOAD_READY] == ("True", r.AVAILABLE)
    assert c[r.READY] == ("True", r.SERVING)
    assert st.phase == "Ready"
    # Only a kept plan whose recomputation failed waits for capacity (to try that recomputation again).
    assert intents.waiting is (stale[1] == r.LAUNCH_PLAN_IN_FORCE)


# ------------------------------------------------------------------ (b) an old pod never fails the new plan


def test_an_old_pods_unallocatable_claim_does_not_fall_back_from_the_new_plan() -> None:
    old, new = plan_on(GPU), plan_on(MIG)
    prior = status(
        {r.PLANNED: ("True", r.PLANNED_OK), r.WORKLOAD_READY: ("False", r.UNSCHEDULABLE)},
        resolved=resolved_for(new, tried=[GPU], replans=1),
    )
    s = snap(
        order=order_with(prior),
        plan_in_force=new,
        deployment=deployment(new, generation=2),
        pods=(
            pod("old-gpu-pod", old, unschedulable=CLAIMS_FAIL, since=NOW - 3600),
            pod("new-mig-pod", new),
        ),
    )
    d = plan_decision(s)
    assert not d.compute, "the old plan's pod says nothing about the new device class"
    intents, st = decide_and_build(s, run_planner(s, d))
    c = conditions_of(st)
    assert c[r.PLANNED] == ("True", r.PLANNED_OK)
    assert st.resolved is not None and st.resolved.tried_device_classes == [GPU]
    assert st.resolved.replan_count == 1
    assert intents.plan == new


# ------------------------------------------------------------------ (c) other unschedulable causes


@pytest.mark.parametrize("message", [TAINTED, NO_CPU, NO_CPU_WHERE_THE_DEVICES_ARE, UNBOUND_VOLUME])
def test_a_pod_unschedulable_for_another_cause_is_unschedulable_and_never_replans(message: str) -> None:
    plan = plan_on(GPU)
    s = snap(
        order=order_with(status({r.PLANNED: ("True", r.PLANNED_OK)}, resolved=resolved_for(plan))),
        plan_in_force=plan,
        deployment=deployment(plan),
        pods=(pod("p-1", plan, unschedulable=message, since=NOW - 3600),),
    )
    d = plan_decision(s)
    assert not d.compute, "a taint or missing cpu is not a reason to try another device class"
    intents, st = decide_and_build(s, run_planner(s, d))
    v = intents.verdicts[r.WORKLOAD_READY]
    assert (v.status, v.reason) == ("False", r.UNSCHEDULABLE)
    assert message in v.message
    assert conditions_of(st)[r.PLANNED] == ("True", r.PLANNED_OK)
    assert st.resolved is not None and st.resolved.replan_count == 0 and not st.resolved.tried_device_classes


# ------------------------------------------------------------------ (d) fallback after the grace


def _stuck_on(plan_class: str, *, since: float, tried: list[str]) -> tuple[LaunchPlan, Snapshot]:
    plan = plan_on(plan_class)
    prior = status(
        {r.PLANNED: ("True", r.PLANNED_OK), r.WORKLOAD_READY: ("False", r.UNSCHEDULABLE)},
        resolved=resolved_for(plan, tried=tried, replans=len(tried)),
    )
    s = snap(
        order=order_with(prior),
        plan_in_force=plan,
        deployment=deployment(plan),
        pods=(pod("p-1", plan, unschedulable=CLAIMS_FAIL, since=since),),
    )
    return plan, s


def test_no_fallback_inside_the_claim_grace() -> None:
    _, s = _stuck_on(GPU, since=NOW - 30, tried=[])
    d = plan_decision(s)
    assert not d.compute
    intents = decide(s, run_planner(s, d))
    assert intents.requeue is not None and 29.0 <= intents.requeue <= 31.0, (
        "looked at again when the grace ends"
    )


def test_fallback_after_the_claim_grace_moves_to_the_next_device_class_and_counts() -> None:
    _, s = _stuck_on(GPU, since=NOW - 61, tried=[])
    d = plan_decision(s)
    assert (d.compute, d.count, d.trigger, d.tried) == (True, True, "fallback", (GPU,))
    p = run_planner(s, d)
    intents, st = decide_and_build(s, p)
    assert conditions_of(st)[r.PLANNED] == ("True", r.PLANNED_OK)
    assert st.resolved is not None
    assert st.resolved.device_class == MIG
    assert st.resolved.tried_device_classes == [GPU]
    assert st.resolved.replan_count == 1
    assert intents.plan is not None and intents.plan.device_class == MIG
    templates = [o["metadata"]["name"] for o in intents.apply if o["kind"] == "ResourceClaimTemplate"]
    assert templates, "the new plan gets its own claim template"


# ------------------------------------------------------------------ (e) exhausted, then capacity grows


def test_resource_claim_exhausted_when_every_class_was_tried_and_pods_are_still_stuck() -> None:
    _, s = _stuck_on(MIG, since=NOW - 61, tried=[GPU])
    d = plan_decision(s)
    assert (d.compute, d.trigger, d.tried) == (True, "fallback", (GPU, MIG))
    intents, st = decide_and_build(s, run_planner(s, d))
    c = conditions_of(st)
    assert c[r.PLANNED] == ("False", r.RESOURCE_CLAIM_EXHAUSTED)
    assert c[r.READY] == ("False", r.RESOURCE_CLAIM_EXHAUSTED)
    assert st.phase == "Pending"
    assert intents.waiting, "an exhausted order waits for capacity"
    assert st.resolved is not None and st.resolved.tried_device_classes == [GPU, MIG]
    assert st.resolved.replan_count == 2

    # Next reconcile, nothing grew: still exhausted, and not counted again.
    s2 = snap(
        order=order_with(st),
        plan_in_force=s.plan_in_force,
        deployment=s.deployment,
        pods=s.pods,
        capacity=Capacity(epoch=5, exhausted_since=5),
    )
    d2 = plan_decision(s2)
    _, st2 = decide_and_build(s2, run_planner(s2, d2))
    assert conditions_of(st2)[r.PLANNED] == ("False", r.RESOURCE_CLAIM_EXHAUSTED)
    assert st2.resolved is not None and st2.resolved.replan_count == 2

    # Capacity grew after the order was exhausted: replanned from the first class, and counted.
    s3 = snap(
        order=order_with(st2),
        plan_in_force=s2.plan_in_force,
        deployment=s2.deployment,
        pods=s2.pods,
        capacity=Capacity(epoch=6, exhausted_since=5),
    )
    d3 = plan_decision(s3)
    assert (d3.compute, d3.count, d3.trigger, d3.tried) == (True, True, "capacity change", ())
    intents3, st3 = decide_and_build(s3, run_planner(s3, d3))
    assert conditions_of(st3)[r.PLANNED] == ("True", r.PLANNED_OK)
    assert st3.resolved is not None
    assert st3.resolved.device_class == GPU, "tried again from the first device class"
    assert not st3.resolved.tried_device_classes
    assert st3.resolved.replan_count == 3
    assert not intents3.waiting


# ------------------------------------------------------------------ (f) advisory failures of a serving order


def test_a_serving_order_whose_class_is_deleted_keeps_serving_and_says_so() -> None:
    plan = plan_on(GPU)
    s = serving(plan, klass=None, model=None)
    intents, st = decide_and_build(s, Planning())
    c = conditions_of(st)
    assert c[r.CLASS_RESOLVED] == ("False", r.CLASS_NOT_FOUND)
    assert c[r.PLANNED] == ("True", r.LAUNCH_PLAN_IN_FORCE)
    assert c[r.WORKLOAD_READY] == ("True", r.AVAILABLE)
    assert c[r.READY] == ("True", r.SERVING)
    assert st.phase == "Ready"
    assert r.CLASS_RESOLVED in intents.advisory
    assert intents.apply == () and intents.delete == (), "nothing of the serving workload is touched"


def test_a_serving_order_whose_model_source_is_unavailable_keeps_serving_and_says_so() -> None:
    plan = plan_on(GPU)
    s = serving(plan, model=ModelObservation(false(r.MODEL_SOURCE_UNAVAILABLE, "the Hub answers 503")))
    intents, st = decide_and_build(s, Planning())
    c = conditions_of(st)
    assert c[r.MODEL_RESOLVED] == ("False", r.MODEL_SOURCE_UNAVAILABLE)
    assert c[r.PLANNED] == ("True", r.LAUNCH_PLAN_IN_FORCE)
    assert c[r.READY] == ("True", r.SERVING)
    assert st.phase == "Ready"
    assert intents.apply == ()


def test_a_serving_order_whose_status_was_lost_is_still_judged_when_its_model_fails() -> None:
    """A status restored without its fields (a backup restore) has no endpoint: the class still
    says where the endpoint is, so the workload and the probe are judged, and Ready stays True."""
    plan = plan_on(GPU)
    lost = status(resolved=resolved_for(plan), endpoint=False)
    s = serving(
        plan, prior=lost, model=ModelObservation(false(r.MODEL_SOURCE_UNAVAILABLE, "the Hub answers 503"))
    )
    intents, st = decide_and_build(s, Planning())
    c = conditions_of(st)
    assert c[r.WORKLOAD_READY] == ("True", r.AVAILABLE)
    assert c[r.READY] == ("True", r.SERVING)
    assert st.phase == "Ready"
    assert intents.probe is None or intents.probe.url == URL


def test_a_class_not_ready_of_a_new_order_is_not_advisory() -> None:
    s = snap(klass=klass(spec={"recipes": ["sglang"]}))
    intents, st = decide_and_build(s, Planning())
    assert not intents.advisory
    assert conditions_of(st)[r.READY][0] == "False"


# ------------------------------------------------------------------ (g) no writes in steady state, drift


def _steady() -> tuple[Snapshot, list[dict[str, Any]]]:
    """A planned order, then the same order with the objects it applied live: what it would apply."""
    s = snap()
    first, st, second = first_passes(s)
    live = list(second.apply)
    assert first.plan is not None
    s2 = serving(first.plan, prior=st, owned=tuple(live))
    return s2, live


def test_no_apply_when_live_objects_carry_the_same_applied_hash() -> None:
    s, live = _steady()
    d = plan_decision(s)
    assert not d.compute, "a resync does not replan"
    intents = decide(s, run_planner(s, d))
    assert live and all(APPLIED_HASH in o["metadata"]["annotations"] for o in live)
    assert intents.apply == ()
    assert intents.delete == ()
    assert intents.events == ()


def test_a_drifted_field_is_reapplied_with_a_drift_corrected_event() -> None:
    s, live = _steady()
    edited = []
    for o in live:
        if o["kind"] == "Deployment":
            o = json.loads(drift.stable_json(o))
            o["spec"]["template"]["spec"]["containers"][0]["image"] = "evil/vllm:latest"
        edited.append(o)
    s2 = replace(s, owned=tuple(edited))
    intents = decide(s2, run_planner(s2, plan_decision(s2)))
    assert [o["kind"] for o in intents.apply] == ["Deployment"]
    assert len(intents.events) == 1
    type_, reason, message = intents.events[0]
    assert (type_, reason) == ("Warning", "DriftCorrected")
    assert "image" in message


def test_an_owned_object_the_plan_no_longer_wants_is_pruned() -> None:
    s, _ = _steady()
    old_template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": "support-llm-gpu-00000000",
            "namespace": "support",
            "ownerReferences": [{"uid": s.order.metadata.uid, "controller": True}],
        },
    }
    s2 = replace(s, owned=(*s.owned, old_template))
    intents = decide(s2, run_planner(s2, plan_decision(s2)))
    assert [(d.kind, d.name) for d in intents.delete] == [
        ("ResourceClaimTemplate", "support-llm-gpu-00000000")
    ]
    assert intents.apply == ()


def _legacy_hpa(owner_uid: str | None) -> dict[str, Any]:
    """The HPA on CPU the controller applied itself before KEDA: named after the order, labelled."""
    meta: dict[str, Any] = {
        "name": "support-llm",
        "namespace": "support",
        "labels": {"ai.deckhouse.io/inference-service": "support-llm"},
    }
    if owner_uid is not None:
        meta["ownerReferences"] = [{"uid": owner_uid, "controller": True}]
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta}


def test_the_controllers_own_hpa_of_before_keda_is_deleted_before_the_scaled_object_is_applied() -> None:
    """KEDA's admission webhook refuses a ScaledObject for a Deployment another HPA scales: the old
    HPA ``<order>`` goes first, the ScaledObject follows once it is gone."""
    s, live = _steady()
    without = tuple(o for o in live if o["kind"] != "ScaledObject")
    s2 = replace(s, owned=(*without, _legacy_hpa(s.order.metadata.uid)))
    intents = decide(s2, run_planner(s2, plan_decision(s2)))
    assert [(d.api_version, d.kind, d.name) for d in intents.delete] == [
        ("autoscaling/v2", "HorizontalPodAutoscaler", "support-llm")
    ]
    assert intents.apply == (), "the ScaledObject waits for the old HPA to be gone"
    s3 = replace(s, owned=without)
    intents = decide(s3, run_planner(s3, plan_decision(s3)))
    assert [o["kind"] for o in intents.apply] == ["ScaledObject"] and intents.delete == ()


@pytest.mark.parametrize(
    "owner", [pytest.param("someone-else", id="KEDA's or another owner's"), pytest.param(None, id="unowned")]
)
def test_an_hpa_the_order_does_not_own_is_never_deleted(owner: str | None) -> None:
    s, _ = _steady()
    hpa_obj = _legacy_hpa(owner)
    hpa_obj["metadata"]["name"] = "keda-hpa-support-llm"
    s2 = replace(s, owned=(*s.owned, hpa_obj))
    intents = decide(s2, run_planner(s2, plan_decision(s2)))
    assert intents.delete == () and intents.apply == ()


def test_an_edited_scaled_object_is_restored() -> None:
    s, live = _steady()
    edited = []
    for o in live:
        if o["kind"] == "ScaledObject":
            o = json.loads(drift.stable_json(o))
            o["spec"]["maxReplicaCount"] = 40
        edited.append(o)
    s2 = replace(s, owned=tuple(edited))
    intents = decide(s2, run_planner(s2, plan_decision(s2)))
    assert [o["kind"] for o in intents.apply] == ["ScaledObject"]
    ((type_, reason, message),) = intents.events
    assert (type_, reason) == ("Warning", "DriftCorrected") and "spec.maxReplicaCount" in message
