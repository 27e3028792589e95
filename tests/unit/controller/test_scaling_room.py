"""Capacity-aware scaling through the reconcile's path: the ledger's room read into the snapshot
(``booking.room``), the verdict ``decide`` makes of it, the Events of its transitions, and the
requeue of a blocked order when capacity is freed (``wiring``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controller import booking, wiring
from controller.conditions.status import transitions
from controller.planner.headroom import Room
from controller.planner.ledger import Ledger, Use
from controller.planning import plan_decision
from controller.snapshot import Capacity, Snapshot
from shared import reasons as r
from testkit.planner import DRIVER, fleet_objects, make_claim
from tests.unit.controller.snapshots import (
    GPU,
    decide_and_build,
    deployment,
    hpa,
    order_with,
    plan_on,
    pod,
    run_planner,
    serving,
)

Obj = dict[str, Any]
L4S = [(DRIVER, f"gpu-l4-{i}", "gpu-0") for i in range(4)]
POD = "support-llm-6f7d9-abcde"  # ``serving``'s pod; its claim is ``<pod>-gpu-x1y2z``
SHAPE = "1 x NVIDIA L4 from gpu.nvidia.com"


def fleet(*claims: Obj) -> Ledger:
    ledger = Ledger()
    objects = fleet_objects()
    for o in objects:
        if o["kind"] == "DeviceClass":
            ledger.on_device_class(o)
    for o in objects:
        if o["kind"] == "ResourceSlice":
            ledger.on_slice(o)
    for c in claims:
        ledger.on_claim(c)
    return ledger


def own_claim(pod_name: str, key: tuple[str, str, str]) -> Obj:
    return make_claim(f"{pod_name}-gpu-x1y2z", "support", [key], order="support-llm")


def wanting(desired: int, *, available: int = 1, pods: tuple[Obj, ...] | None = None) -> Snapshot:
    plan = plan_on(GPU)
    s = serving(plan, hpa=hpa(desired), deployment=deployment(plan, available=available, replicas=desired))
    return s if pods is None else replace(s, pods=pods)


# ------------------------------------------------------------------ booking.room


def test_the_room_counts_the_serving_replica_as_placed_and_the_free_l4s_up_to_the_wish() -> None:
    ledger = fleet(own_claim(POD, L4S[0]))
    assert booking.room(ledger, wanting(3)) == Room(placed=1, more=2, limit=2, looked_at=SHAPE)
    taken = make_claim("c", "other", L4S[1:3], order="other-llm")
    assert booking.room(fleet(own_claim(POD, L4S[0]), taken), wanting(3)) == Room(1, 1, 2, SHAPE)


def test_a_loading_replica_is_placed_and_needs_no_room() -> None:
    """The second pod is scheduled (its claim allocated) and loads its model: it is placed, so the
    room is asked only for the third replica."""
    plan = plan_on(GPU)
    loading = pod("support-llm-6f7d9-fghij", plan)
    loading["status"]["resourceClaimStatuses"] = [
        {"name": "gpu", "resourceClaimName": "support-llm-6f7d9-fghij-gpu-x1y2z"}
    ]
    s = wanting(3, pods=(*wanting(3).pods, loading))
    ledger = fleet(own_claim(POD, L4S[0]), own_claim("support-llm-6f7d9-fghij", L4S[1]))
    assert booking.room(ledger, s) == Room(placed=2, more=1, limit=1, looked_at=SHAPE)


def test_the_orders_reservation_stands_for_a_replica_no_pod_holds_yet() -> None:
    """No pod of the plan holds its claim in the ledger yet, the order's reservation for the plan in
    force does: one replica placed, and its L4 is no room for others."""
    s = wanting(3, available=1, pods=())
    ledger = fleet()
    ledger.take(s.key, [], lambda _inv: (booking.plan_hash(plan_on(GPU)), Use(whole=frozenset({L4S[0]}))))
    assert booking.room(ledger, s) == Room(placed=1, more=2, limit=2, looked_at=SHAPE)
    assert booking.room(fleet(), s) == Room(placed=0, more=2, limit=2, looked_at=SHAPE)


def test_no_room_is_asked_of_an_order_that_wants_no_more_or_does_not_serve() -> None:
    ledger = fleet(own_claim(POD, L4S[0]))
    assert booking.room(ledger, wanting(1)) is None
    assert booking.room(ledger, wanting(3, available=0)) is None
    assert booking.room(ledger, replace(wanting(3), plan_in_force=None)) is None


# ------------------------------------------------------------------ decide, the phase and the Events


def with_room(s: Snapshot, room: Room | None) -> Snapshot:
    return replace(s, capacity=Capacity(epoch=1, room=room))


def test_blocked_at_once_then_ready_again_with_an_event_at_each_end() -> None:
    """The ledger has no room for the HPA's 3: ScaleUpBlocked and Degraded in that reconcile, Ready
    still True; a Warning Event when it starts. The wish drops to 1: ScalingHealthy and phase Ready,
    a Normal Event when it ends."""
    s = with_room(wanting(3), Room(placed=1, more=0, limit=2, looked_at=SHAPE))
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    scaling = intents.verdicts[r.SCALING_HEALTHY]
    assert (scaling.status, scaling.reason) == ("False", r.SCALE_UP_BLOCKED)
    assert "wants 3" in scaling.message and "hold 0 more" in scaling.message and GPU in scaling.message
    assert st.phase == "Degraded"
    assert {c.type: c.status for c in st.conditions or []}[r.READY] == "True"
    started = transitions(s.order.status, st)
    assert ("Warning", r.SCALE_UP_BLOCKED) in [(t.type, t.reason) for t in started]
    assert ("Warning", "PhaseDegraded") in [(t.type, t.reason) for t in started]

    after = with_room(replace(wanting(1), order=order_with(st)), None)
    _, healed = decide_and_build(after, run_planner(after, plan_decision(after)))
    assert healed.phase == "Ready"
    ended = [(t.type, t.reason) for t in transitions(st, healed)]
    assert ("Normal", r.SCALING_HEALTHY_OK) in ended and ("Normal", "PhaseReady") in ended


def test_room_that_appears_makes_the_order_ready_again() -> None:
    blocked = with_room(wanting(2), Room(placed=1, more=0, limit=1, looked_at=SHAPE))
    _, st = decide_and_build(blocked, run_planner(blocked, plan_decision(blocked)))
    assert st.phase == "Degraded"
    grown = with_room(replace(wanting(2), order=order_with(st)), Room(1, 1, 1, SHAPE))
    _, healed = decide_and_build(grown, run_planner(grown, plan_decision(grown)))
    assert healed.phase == "Ready"


# ------------------------------------------------------------------ wiring: requeued when capacity is freed


def order_obj(scaling: tuple[str, str] | None) -> Obj:
    conditions = [{"type": "Planned", "status": "True", "reason": r.PLANNED_OK}]
    if scaling is not None:
        conditions.append({"type": r.SCALING_HEALTHY, "status": scaling[0], "reason": scaling[1]})
    return {"metadata": {"name": "o", "namespace": "ns"}, "spec": {}, "status": {"conditions": conditions}}


def test_a_blocked_scale_up_waits_for_capacity_until_it_is_healthy() -> None:
    blocked = order_obj(("False", r.SCALE_UP_BLOCKED))
    assert wiring.waits_for_capacity(blocked)
    assert wiring.waiting_orders([blocked], {}) == [("order", "ns", "o")]
    waiting = wiring.WaitingOrders()
    waiting.observe("MODIFIED", blocked)
    assert waiting.orders() == [blocked]
    waiting.observe("MODIFIED", order_obj(("True", r.SCALING_HEALTHY_OK)))
    assert waiting.orders() == []
    assert not wiring.waits_for_capacity(order_obj(None))
