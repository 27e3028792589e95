"""Reservations lapse (issue 21 item 6): a plan whose pods a ResourceQuota or a LimitRange refuses
never allocates its claims, so its place would be held for ever. ``claimGraceSeconds`` after the
Deployment said it cannot create pods, the place is given back, the order says why in the API
server's own words, and once pods can be created again it plans again."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from controller import booking, lapse
from controller.act import Done
from controller.decide import decide
from controller.kinds import Cache
from controller.observe import Observer
from controller.planner.ledger import Ledger, Use
from controller.planning import plan_decision
from controller.snapshot import Capacity, Planning, Snapshot
from controller.store import Store
from shared import names
from shared import reasons as r
from testkit.planner import fleet_objects
from tests.unit.controller.snapshots import (
    CLAIMS_FAIL,
    GPU,
    NO_CPU,
    NOW,
    SETTINGS,
    conditions_of,
    decide_and_build,
    deployment,
    failed,
    plan_on,
    pod,
    resolved_for,
    run_planner,
    serving,
    snap,
    stamp,
    status,
)

QUOTA = (
    'pods "support-llm-6f7d9-abcde" is forbidden: exceeded quota: tenant, requested: pods=1, '
    "used: pods=0, limited: pods=0"
)
GRACE = 60.0
PLANNED_STATUS = {
    r.CLASS_RESOLVED: ("True", r.RESOLVED),
    r.MODEL_RESOLVED: ("True", r.RESOLVED),
    r.PLANNED: ("True", r.PLANNED_OK),
    r.WORKLOAD_READY: ("False", r.WORKLOAD_FAILED),
}


def refused(since: float, **changes: Any) -> Snapshot:
    """The order planned on a GPU; its Deployment cannot create pods (the quota) since ``since``."""
    plan = plan_on(GPU)
    failure = {
        "type": "ReplicaFailure",
        "status": "True",
        "reason": "FailedCreate",
        "message": QUOTA,
        "lastTransitionTime": stamp(since),
    }
    base: dict[str, Any] = {
        "order": snap().order.model_copy(
            update={"status": status(PLANNED_STATUS, resolved=resolved_for(plan))}
        ),
        "plan_in_force": plan,
        "deployment": deployment(plan, conditions=[failure]),
    }
    base.update(changes)
    return snap(**base)


def test_within_the_grace_the_place_is_kept_and_the_order_is_looked_at_when_it_lapses() -> None:
    s = refused(NOW - 55)
    assert not lapse.lapsed(s)
    intents, _ = decide_and_build(s, run_planner(s, plan_decision(s)))
    v = intents.verdicts[r.WORKLOAD_READY]
    assert (v.status, v.reason) == ("False", r.WORKLOAD_FAILED)
    assert QUOTA in v.message and "given back" not in v.message
    assert intents.requeue == pytest.approx(GRACE - 55)


def test_past_the_grace_it_lapses_and_says_why_in_the_quotas_words() -> None:
    s = refused(NOW - GRACE - 1)
    assert lapse.lapsed(s)
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    conds = conditions_of(st)
    assert conds[r.PLANNED] == ("True", r.PLANNED_OK)
    assert conds[r.WORKLOAD_READY] == ("False", r.WORKLOAD_FAILED)
    assert conds[r.READY] == ("False", r.WORKLOAD_FAILED)
    message = intents.verdicts[r.WORKLOAD_READY].message
    assert QUOTA in message and "given back to other orders" in message
    assert st.phase == "Pending"


def _stale(s: Snapshot) -> Snapshot:
    """The Deployment has not looked at its new template yet: its condition may be the old one's."""
    dep = s.deployment
    assert dep is not None
    return replace(s, deployment={**dep, "metadata": {**dep["metadata"], "generation": 2}})


@pytest.mark.parametrize(
    "make",
    [
        # a pod of the plan exists: its claim may still be allocated (unschedulable for cpu)
        lambda: refused(
            NOW - 600, pods=(pod("support-llm-6f7d9-abcde", plan_on(GPU), unschedulable=NO_CPU),)
        ),
        # a scale-up refused by the quota while a replica of the plan holds its claim
        lambda: refused(NOW - 600, claims_allocated=True),
        lambda: _stale(refused(NOW - 600)),
    ],
    ids=["pod-exists", "claims-allocated", "stale-deployment"],
)
def test_no_lapse_while_a_pod_of_the_plan_may_still_take_the_place(make: Callable[[], Snapshot]) -> None:
    s = make()
    assert not lapse.lapsed(s)
    assert "given back" not in decide_and_build(s, Planning())[0].verdicts[r.WORKLOAD_READY].message


def test_a_multi_node_group_is_not_covered() -> None:
    s = refused(NOW - 600)
    plan = s.plan_in_force
    assert plan is not None and s.deployment is not None
    group = {**s.deployment, "kind": "LeaderWorkerSet"}
    assert not lapse.lapsed(replace(s, deployment=group))
    assert not lapse.lapsed(replace(s, plan_in_force=plan.model_copy(update={"node_count": 2})))


def _held(ledger: Ledger, key: tuple[str, str], device: tuple[str, str, str]) -> None:
    ledger.take(key, (), lambda inventory: ("plan", Use(whole=frozenset({device}))))


def test_the_lapsed_place_is_released_so_the_next_order_may_take_it() -> None:
    ledger, device = Ledger(), ("gpu.example.com", "node-0", "gpu-0")
    fresh, old = refused(NOW - 10), refused(NOW - GRACE - 1)
    _held(ledger, fresh.key, device)
    booking.after_act(ledger, fresh, Planning(), decide(fresh, Planning()), Done(True, None))
    assert ledger.reserved(fresh.key) is not None  # within the grace: still held
    assert device in ledger.view(("other", "waiting")).allocated
    epoch = ledger.epoch
    booking.after_act(ledger, old, Planning(), decide(old, Planning()), Done(True, None))
    assert ledger.reserved(old.key) is None
    assert ledger.epoch > epoch  # the reconciler wakes the orders waiting for capacity
    assert device not in ledger.view(("other", "waiting")).allocated


def test_a_fresh_plan_in_the_same_pass_is_not_released() -> None:
    ledger, device = Ledger(), ("gpu.example.com", "node-0", "gpu-0")
    s = refused(NOW - GRACE - 1)
    plan = s.plan_in_force
    assert plan is not None
    _held(ledger, s.key, device)
    fresh = Planning(outcome=run_planner(snap(), plan_decision(snap())).outcome, trigger="order edit")
    assert fresh.outcome is not None and fresh.outcome.ok
    booking.after_act(ledger, s, fresh, decide(s, fresh), Done(True, None))
    assert ledger.reserved(s.key) is not None


def test_the_cause_gone_it_plans_again_and_reads_no_capacity_while_the_place_is_taken() -> None:
    plan = plan_on(GPU)
    back = refused(
        NOW - GRACE - 1,
        deployment=deployment(plan),  # the quota was raised: the ReplicaSet created a pod
        pods=(pod("support-llm-6f7d9-abcde", plan, unschedulable=CLAIMS_FAIL, since=NOW - 5),),
        capacity=Capacity(epoch=1, lapsed=True),
    )
    d = plan_decision(back)
    assert d.compute and not d.count and d.trigger == "lapsed reservation"
    taken = Planning(outcome=failed(r.NO_CAPACITY, "no free device"), trigger=d.trigger, tried=d.tried)
    intents, st = decide_and_build(back, taken)
    assert conditions_of(st)[r.PLANNED] == ("False", r.NO_CAPACITY)
    assert intents.waiting and intents.apply == ()
    again, st = decide_and_build(back, run_planner(back, d))
    assert conditions_of(st)[r.PLANNED] == ("True", r.PLANNED_OK)
    assert again.plan is not None


def test_no_replan_while_the_cause_holds_nor_without_a_lapse() -> None:
    plan = plan_on(GPU)
    still = refused(NOW - GRACE - 1, capacity=Capacity(epoch=1, lapsed=True))
    assert not plan_decision(still).compute
    never = refused(
        NOW - GRACE - 1,
        deployment=deployment(plan),
        pods=(pod("support-llm-6f7d9-abcde", plan, unschedulable=CLAIMS_FAIL, since=NOW - 5),),
    )
    assert not plan_decision(never).compute
    running = serving(plan, capacity=Capacity(epoch=1, lapsed=True))
    assert not plan_decision(running).compute


class _Reader:
    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = objs

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return next((o for o in self.objs if o["metadata"]["name"] == name), None)

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self.objs)

    def labelled(self, namespace: str, value: str) -> builtins.list[dict[str, Any]]:
        return [o for o in self.objs if o["metadata"].get("labels", {}).get(names.LABEL_ORDER) == value]


def _restarted(s: Snapshot) -> tuple[Ledger, set[tuple[str, str]]]:
    """A new process's ledger after ``booking.rebuild`` over the live objects of ``s``."""
    ledger = Ledger()
    for obj in fleet_objects():
        if obj["kind"] == "DeviceClass":
            ledger.on_device_class(obj)
    for obj in fleet_objects():
        if obj["kind"] == "ResourceSlice":
            ledger.on_slice(obj)
    raw = s.order.model_dump(mode="json", by_alias=True, exclude_none=True)
    store = Store(
        {
            Cache.ORDERS: _Reader(raw),
            Cache.DEPLOYMENTS: _Reader(*([s.deployment] if s.deployment else [])),
            Cache.PODS: _Reader(*s.pods),
            Cache.RESOURCE_CLAIMS: _Reader(),
        }
    )
    none: Any = None
    observer = Observer(none, store, none, none, none, ledger, SETTINGS, lambda key: None)
    return ledger, booking.rebuild(observer, s.now)


def test_a_restart_books_no_lapsed_place_and_remembers_the_lapse() -> None:
    ledger, lapsed = _restarted(refused(NOW - GRACE - 1))
    assert lapsed == {("support", "support-llm")} and ledger.reserved(("support", "support-llm")) is None
    ledger, lapsed = _restarted(refused(NOW - 10))
    assert lapsed == set() and ledger.reserved(("support", "support-llm")) is not None


def test_the_quotas_words_outlast_the_deployments_progress_deadline() -> None:
    s = refused(NOW - 700)
    assert s.deployment is not None
    deadline = {
        "type": "Progressing",
        "status": "False",
        "reason": "ProgressDeadlineExceeded",
        "message": "slow",
    }
    conds = [deadline, *s.deployment["status"]["conditions"]]
    s = replace(s, deployment={**s.deployment, "status": {**s.deployment["status"], "conditions": conds}})
    v = decide_and_build(s, Planning())[0].verdicts[r.WORKLOAD_READY]
    assert (v.status, v.reason) == ("False", r.WORKLOAD_FAILED)
    assert QUOTA in v.message and "given back" in v.message
