"""Table tests of ``planning``: when a reconcile (re)plans, and the Planned verdict, from snapshots."""

from __future__ import annotations

import pytest

from controller import planning
from controller.planning import plan_decision, planned
from controller.snapshot import Capacity, Planning, Snapshot
from shared import reasons as r
from tests.unit.controller.snapshots import (
    CLAIMS_FAIL,
    GPU,
    MIG,
    NO_CPU,
    NOW,
    READY_STATUS,
    TAINTED,
    deployment,
    failed,
    klass,
    ok,
    order_with,
    plan_on,
    pod,
    resolved_for,
    serving,
    snap,
    stamp,
    status,
)


def test_a_new_order_plans_without_counting() -> None:
    d = plan_decision(snap())
    assert (d.compute, d.count, d.trigger, d.tried) == (True, False, "no plan yet", ())


def test_a_steady_serving_order_does_not_replan() -> None:
    d = plan_decision(serving(plan_on(GPU)))
    assert (d.compute, d.count) == (False, False)


@pytest.mark.parametrize(
    ("order_generation", "class_generation", "trigger"),
    [(2, 1, "order edit"), (1, 2, "class change")],
)
def test_an_edit_of_the_order_or_its_class_replans_and_counts(
    order_generation: int, class_generation: int, trigger: str
) -> None:
    plan = plan_on(GPU)
    s = serving(
        plan,
        order=order_with(
            status(READY_STATUS, resolved=resolved_for(plan)), metadata={"generation": order_generation}
        ),
        klass=klass(metadata={"generation": class_generation}),
    )
    d = plan_decision(s)
    assert (d.compute, d.count, d.trigger) == (True, True, trigger)


def test_a_plan_on_a_class_the_scheduler_refused_is_not_in_force_unless_it_runs() -> None:
    plan = plan_on(GPU)
    stuck = snap(
        order=order_with(status(resolved=resolved_for(plan, tried=[GPU]))),
        plan_in_force=plan,
        deployment=deployment(plan),
        pods=(pod("p", plan, unschedulable=CLAIMS_FAIL),),
    )
    assert planning.usable_in_force(stuck) is None
    runs = serving(plan, prior=status(READY_STATUS, resolved=resolved_for(plan, tried=[GPU])))
    assert planning.usable_in_force(runs) == plan


@pytest.mark.parametrize(
    ("message", "age", "falls_back"),
    [
        (CLAIMS_FAIL, 61.0, True),
        (CLAIMS_FAIL, 59.0, False),
        (TAINTED, 3600.0, False),
        (NO_CPU, 3600.0, False),
    ],
)
def test_only_an_unallocatable_claim_past_the_grace_falls_back(
    message: str, age: float, falls_back: bool
) -> None:
    plan = plan_on(GPU)
    s = snap(
        order=order_with(status(resolved=resolved_for(plan))),
        plan_in_force=plan,
        deployment=deployment(plan),
        pods=(pod("p", plan, unschedulable=message, since=NOW - age),),
    )
    d = plan_decision(s)
    assert d.compute is falls_back
    if falls_back:
        assert (d.count, d.trigger, d.tried) == (True, "fallback", (GPU,))
    expected = NOW - age if message == CLAIMS_FAIL else None
    assert planning.stuck_since(s) == expected


def test_a_stuck_pod_of_another_plan_does_not_count() -> None:
    old, new = plan_on(GPU), plan_on(MIG)
    s = snap(
        order=order_with(status(resolved=resolved_for(new, tried=[GPU], replans=1))),
        plan_in_force=new,
        deployment=deployment(new),
        pods=(pod("old", old, unschedulable=CLAIMS_FAIL, since=NOW - 3600),),
    )
    assert planning.stuck_since(s) is None
    assert not plan_decision(s).compute


def test_a_running_replica_means_nothing_is_stuck() -> None:
    plan = plan_on(GPU)
    base = serving(plan)
    s = serving(plan, pods=(*base.pods, pod("p-2", plan, unschedulable=CLAIMS_FAIL, since=NOW - 3600)))
    assert planning.stuck_since(s) is None
    assert not plan_decision(s).compute


def _exhausted(
    capacity: Capacity, *, runs: bool, reason: str = r.RESOURCE_CLAIM_EXHAUSTED, for_seconds: float = 60
) -> Snapshot:
    plan = plan_on(MIG)
    prior = status(
        {r.PLANNED: ("False" if reason == r.RESOURCE_CLAIM_EXHAUSTED else "True", reason)},
        resolved=resolved_for(plan, tried=[GPU, MIG], replans=2),
    )
    assert prior.conditions is not None
    prior.conditions[0].last_transition_time = stamp(NOW - for_seconds)
    if runs:
        return serving(plan, prior=prior, capacity=capacity)
    return snap(
        order=order_with(prior),
        plan_in_force=plan,
        deployment=deployment(plan),
        pods=(pod("p", plan, unschedulable=CLAIMS_FAIL, since=NOW - 600),),
        capacity=capacity,
    )


@pytest.mark.parametrize(
    ("capacity", "runs", "reason", "expected"),
    [
        # exhausted, nothing grew: recomputed (the planner answers exhausted again), not counted
        (Capacity(epoch=5, exhausted_since=5), False, r.RESOURCE_CLAIM_EXHAUSTED, (True, False, (GPU, MIG))),
        # capacity grew since: from the first class, counted
        (Capacity(epoch=6, exhausted_since=5), False, r.RESOURCE_CLAIM_EXHAUSTED, (True, True, ())),
        (Capacity(epoch=6, exhausted_since=5), False, r.LAUNCH_PLAN_IN_FORCE, (True, True, ())),
        # the workload runs after all: nothing to recompute
        (Capacity(epoch=6, exhausted_since=5), True, r.RESOURCE_CLAIM_EXHAUSTED, (False, False, (GPU, MIG))),
        # not waiting on capacity: an epoch alone triggers nothing
        (
            Capacity(epoch=9, exhausted_since=None),
            False,
            r.RESOURCE_CLAIM_EXHAUSTED,
            (True, False, (GPU, MIG)),
        ),
    ],
)
def test_an_exhausted_order_tries_again_from_its_first_class_when_capacity_grows(
    capacity: Capacity, runs: bool, reason: str, expected: tuple[bool, bool, tuple[str, ...]]
) -> None:
    s = _exhausted(capacity, runs=runs, reason=reason)
    d = plan_decision(s)
    assert (d.compute, d.count, d.tried) == expected
    if d.count:
        assert d.trigger == "capacity change"


def test_an_exhausted_order_tries_its_first_class_again_after_a_while_with_no_capacity_freed() -> None:
    """A refused claim can be a moment's contention: after EXHAUSTED_RETRY_SECONDS the order
    starts again from its first class (counted), though no capacity was freed."""
    waited = planning.EXHAUSTED_RETRY_SECONDS
    d = plan_decision(_exhausted(Capacity(epoch=5, exhausted_since=5), runs=False, for_seconds=waited + 1))
    assert (d.compute, d.count, d.tried, d.trigger) == (True, True, (), "exhausted retry")
    d = plan_decision(_exhausted(Capacity(epoch=5, exhausted_since=5), runs=False, for_seconds=waited - 5))
    assert d.tried == (GPU, MIG) and not d.count
    running = _exhausted(Capacity(epoch=5, exhausted_since=5), runs=True, for_seconds=waited + 1)
    assert not plan_decision(running).compute


# ------------------------------------------------------------------ planned()


def test_planned_from_a_new_plan_records_it_with_its_basis() -> None:
    plan = plan_on(MIG)
    s = serving(
        plan_on(GPU), order=order_with(status(READY_STATUS, resolved=resolved_for(plan_on(GPU), replans=3)))
    )
    pv = planned(s, Planning(outcome=ok(plan), trigger="fallback", count=True, tried=(GPU,)))
    assert (pv.verdict.status, pv.verdict.reason) == ("True", r.PLANNED_OK)
    assert pv.plan == plan and pv.render and not pv.waiting
    assert pv.resolved is not None
    assert (pv.resolved.device_class, pv.resolved.replan_count, pv.resolved.tried_device_classes) == (
        MIG,
        4,
        [GPU],
    )


def test_the_plan_in_force_stands_when_nothing_was_computed() -> None:
    plan = plan_on(GPU)
    pv = planned(serving(plan), Planning())
    assert (pv.verdict.reason, pv.plan, pv.render, pv.waiting) == (r.PLANNED_OK, plan, True, False)


def test_a_refusal_without_a_serving_plan_is_false_and_waits_only_for_capacity() -> None:
    for reason, waits in [(r.NO_CAPACITY, True), (r.PLACEMENT_UNDECIDABLE, False)]:
        pv = planned(snap(), Planning(outcome=failed(reason), trigger="no plan yet"))
        assert (pv.verdict.status, pv.verdict.reason, pv.plan, pv.waiting) == ("False", reason, None, waits)


def test_a_refusal_after_lost_status_never_takes_a_serving_order_down() -> None:
    plan = plan_on(GPU)
    s = serving(plan, prior=status())  # status lost: no resolved record
    d = plan_decision(s)
    assert d.trigger == "no plan yet"
    pv = planned(s, Planning(outcome=failed(r.NO_CAPACITY), trigger=d.trigger))
    assert (pv.verdict.status, pv.verdict.reason, pv.plan, pv.render) == (
        "True",
        r.LAUNCH_PLAN_IN_FORCE,
        plan,
        False,
    )


def test_a_kept_launch_plan_in_force_keeps_its_message_until_something_changes() -> None:
    plan = plan_on(GPU)
    prior = status({r.PLANNED: ("True", r.LAUNCH_PLAN_IN_FORCE)}, resolved=resolved_for(plan))
    pv = planned(serving(plan, prior=prior), Planning())
    assert (pv.verdict.reason, pv.verdict.message) == (
        r.LAUNCH_PLAN_IN_FORCE,
        "Planned said LaunchPlanInForce.",
    )
    assert not pv.render, "a kept plan is left exactly as it is"


def test_a_serving_order_whose_edit_did_not_fit_tries_it_again_when_capacity_grows_uncounted() -> None:
    s = _exhausted(Capacity(epoch=6, exhausted_since=5), runs=True, reason=r.LAUNCH_PLAN_IN_FORCE)
    d = plan_decision(s)
    assert (d.compute, d.count, d.trigger) == (True, False, "capacity change")
    same = _exhausted(Capacity(epoch=5, exhausted_since=5), runs=True, reason=r.LAUNCH_PLAN_IN_FORCE)
    assert not plan_decision(same).compute
