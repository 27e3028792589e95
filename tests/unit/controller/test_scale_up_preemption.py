"""Scale-up preemption (issue 22, 3b): a serving order whose autoscaler wants more replicas than the
free devices hold may take the devices of strictly lower-priority orders' replicas, as a new plan
may (``Ledger.take``). ``booking.room`` counts the replicas preempting would place and which
replicas that takes (``headroom.with_preemption``); ``booking.scale_up_evictions`` evicts their pods
once the order's extra pod is unschedulable; the order reads ScaleUpBlocked only when even
preemption cannot place the replicas it wants."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controller import booking
from controller.decide import PREEMPT_AGAIN
from controller.planner import preemption
from controller.planner.headroom import Room, with_preemption
from controller.planner.ledger import Ledger
from controller.planning import plan_decision
from controller.snapshot import Capacity, Snapshot
from shared import reasons as r
from testkit.planner import DRIVER, fleet_objects, make_claim
from tests.unit.controller.snapshots import (
    CLASSES,
    GPU,
    NOW,
    decide_and_build,
    deployment,
    hpa,
    klass,
    plan_on,
    pod,
    run_planner,
    serving,
)

Obj = dict[str, Any]
L4S = [(DRIVER, f"gpu-l4-{i}", "gpu-0") for i in range(4)]
POD = "support-llm-6f7d9-abcde"  # ``serving``'s pod; its claim is ``<pod>-gpu-x1y2z``
PENDING = "support-llm-6f7d9-zzzzz"
SHAPE = "1 x NVIDIA L4 from gpu.nvidia.com"
VALUES = {"gold": 1000, "silver": 500, "bronze": 100}
# the orders holding the other L4s, in namespace "other", and their priorities
PRIORITY = {("other", "low"): 100, ("other", "mid"): 500, ("other", "peer"): 1000}


def fleet(holders: dict[int, str]) -> Ledger:
    """The default fleet; the order's serving pod holds L4 0; ``holders``: L4 index -> the order (in
    namespace "other") whose claim ``<order>-<i>``, reserved for pod ``<order>-pod-<i>``, holds it."""
    ledger = Ledger()
    objects = fleet_objects()
    for o in objects:
        if o["kind"] == "DeviceClass":
            ledger.on_device_class(o)
    for o in objects:
        if o["kind"] == "ResourceSlice":
            ledger.on_slice(o)
    ledger.on_claim(make_claim(f"{POD}-gpu-x1y2z", "support", [L4S[0]], order="support-llm"))
    for i, order in holders.items():
        claim = make_claim(f"{order}-{i}", "other", [L4S[i]], order=order)
        claim["status"]["reservedFor"] = [{"resource": "pods", "name": f"{order}-pod-{i}", "uid": f"u{i}"}]
        ledger.on_claim(claim)
    return ledger


def wanting(desired: int, *, priority: str | None = "gold", unschedulable: bool = True) -> Snapshot:
    """The order serving one replica on an L4, its HPA wanting ``desired``, its class of priority
    class ``priority``; with an extra pod the scheduler found no device for (``unschedulable``)."""
    plan = plan_on(GPU)
    spec: Obj = {"placement": {"deviceClassNames": CLASSES, "sharingModes": ["Exclusive", "MIG"]}}
    if priority is not None:
        spec["scaling"] = {"minReplicas": 1, "maxReplicas": 4, "priorityClassName": priority}
    s = serving(
        plan,
        hpa=hpa(desired),
        deployment=deployment(plan, available=1, replicas=desired),
        klass=klass(spec=spec),
        priority_values=VALUES,
        priority_of=lambda key: PRIORITY.get(key, 0),
    )
    if unschedulable:
        s = replace(
            s, pods=(*s.pods, pod(PENDING, plan, unschedulable="0/4 nodes are available", since=NOW - 5))
        )
    return s


def with_room(ledger: Ledger, s: Snapshot) -> Snapshot:
    """The snapshot as the reconciler passes it on: with the ledger's room read into it."""
    return replace(s, capacity=Capacity(epoch=1, room=booking.room(ledger, s)))


def victims_of(room: Room | None) -> list[tuple[tuple[str, str], str]]:
    assert room is not None
    return [(v.order, v.name) for v in room.victims]


# ------------------------------------------------------------------ booking.room


def test_free_room_preempts_nothing() -> None:
    # mutant "preempt even when the free devices hold the replica": L4 3 is free
    room = booking.room(fleet({1: "low", 2: "low"}), wanting(2))
    assert room == Room(placed=1, more=1, limit=1, looked_at=SHAPE)


def test_short_of_room_it_counts_the_fewest_lowest_priority_replicas() -> None:
    # mutants "take every victim" and "highest first" fail here: the low replica at L4 2 only
    room = booking.room(fleet({1: "mid", 2: "low", 3: "mid"}), wanting(2))
    assert room is not None and (room.more, room.preempting) == (0, 1)
    assert victims_of(room) == [(("other", "low"), "low-2")]
    room = booking.room(fleet({1: "mid", 2: "low", 3: "mid"}), wanting(3))
    assert room is not None and (room.more, room.preempting, room.limit) == (0, 2, 2)
    assert victims_of(room) == [(("other", "low"), "low-2"), (("other", "mid"), "mid-1")]


def test_equal_priority_replicas_are_never_preempted() -> None:
    # mutant "victims of priority <= the order's" fails here
    room = booking.room(fleet({1: "peer", 2: "peer", 3: "peer"}), wanting(2))
    assert room is not None and (room.more, room.preempting, room.victims) == (0, 0, ())


def test_an_order_without_a_priority_or_a_priority_reader_preempts_nothing() -> None:
    ledger = fleet({1: "low", 2: "low", 3: "low"})
    assert booking.room(ledger, wanting(2, priority=None)) == Room(
        1, 0, 1, SHAPE
    )  # priority 0: nothing lower
    assert booking.room(ledger, replace(wanting(2), priority_of=None)) == Room(1, 0, 1, SHAPE)


def test_preemption_places_what_it_can_when_it_cannot_place_all() -> None:
    room = booking.room(fleet({1: "peer", 2: "low", 3: "peer"}), wanting(4))
    assert room is not None and (room.more, room.preempting, room.limit) == (0, 1, 3)
    assert victims_of(room) == [(("other", "low"), "low-2")]


def test_with_preemption_takes_nothing_while_the_free_devices_hold_the_replicas() -> None:
    """The pure count on its own (``booking.room`` asks it only when short): the freed device of a
    victim would be picked first, yet nothing is preempted while a free L4 holds the replica."""
    ledger = fleet({1: "low", 2: "low"})
    s = wanting(2)
    plan = s.plan_in_force
    assert plan is not None
    inventory = ledger.look(s.key, lambda inv, _claims, _res: inv)
    victims = preemption.victims(s.key, 1000, ledger.held_replicas(lambda key: PRIORITY.get(key, 0)))
    assert [v.name for v in victims] == ["low-1", "low-2"]
    assert with_preemption(plan, inventory, 1, victims) == (0, ())
    assert with_preemption(plan, inventory, 2, victims) == (1, victims[:1])
    assert with_preemption(plan, inventory, 3, victims) == (2, victims)
    assert with_preemption(plan, inventory, 4, victims) == (2, victims)  # 1 short even so


# ------------------------------------------------------------------ the verdict


def test_while_preemption_can_place_the_replicas_the_order_is_scaling_not_blocked() -> None:
    # mutant "ScaleUpBlocked on the free devices alone" fails here
    s = with_room(fleet({1: "mid", 2: "low", 3: "mid"}), wanting(2))
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    v = intents.verdicts[r.SCALING_HEALTHY]
    assert (v.status, v.reason) == ("True", r.SCALING_HEALTHY_OK)
    assert "preempting 1 lower-priority replica(s)" in v.message
    assert st.phase == "Ready"


def test_scale_up_blocked_when_even_preemption_cannot_place_them() -> None:
    s = with_room(fleet({1: "peer", 2: "peer", 3: "peer"}), wanting(2))
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    v = intents.verdicts[r.SCALING_HEALTHY]
    assert (v.status, v.reason) == ("False", r.SCALE_UP_BLOCKED)
    assert st.phase == "Degraded"
    partly = with_room(fleet({1: "peer", 2: "low", 3: "peer"}), wanting(3))
    v = decide_and_build(partly, run_planner(partly, plan_decision(partly)))[0].verdicts[r.SCALING_HEALTHY]
    assert (v.status, v.reason) == ("False", r.SCALE_UP_BLOCKED)
    assert "1 more by preempting lower-priority replicas: 1 short" in v.message


CLAIMS_ONLY = (
    "0/4 nodes are available: 1 cannot allocate all claims, 3 node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
)


def test_a_pod_refused_for_its_devices_alone_runs_out_no_grace_while_they_are_preempted() -> None:
    """The extra pod has waited for a device far past ``scaleUpGraceSeconds`` (its first replica
    loaded meanwhile): while preemption frees one for it the order scales; a pod refused for cpu
    still turns into ScaleUpBlocked after the grace."""
    base = fleet({1: "mid", 2: "low", 3: "mid"})
    for message, expected in (
        (CLAIMS_ONLY, "True"),
        ("0/4 nodes are available: 4 Insufficient cpu.", "False"),
    ):
        s = wanting(2, unschedulable=False)
        s = replace(s, pods=(*s.pods, pod(PENDING, s.plan_in_force, unschedulable=message, since=NOW - 600)))  # type: ignore[arg-type]
        s = with_room(base, s)
        v = decide_and_build(s, run_planner(s, plan_decision(s)))[0].verdicts[r.SCALING_HEALTHY]
        assert v.status == expected, v.message
    # without anything to preempt, the same device-only wait is ScaleUpBlocked at once
    s = wanting(2, unschedulable=False)
    s = replace(s, pods=(*s.pods, pod(PENDING, s.plan_in_force, unschedulable=CLAIMS_ONLY, since=NOW - 600)))  # type: ignore[arg-type]
    s = with_room(fleet({1: "peer", 2: "peer", 3: "peer"}), s)
    v = decide_and_build(s, run_planner(s, plan_decision(s)))[0].verdicts[r.SCALING_HEALTHY]
    assert (v.status, v.reason) == ("False", r.SCALE_UP_BLOCKED)


# ------------------------------------------------------------------ the evictions


class _Metrics:
    class _Plans:
        def labels(self, **_: str) -> _Metrics._Plans:
            return self

        def inc(self) -> None:
            pass

    plans = _Plans()


def test_booking_evicts_the_victims_pods_once_the_extra_pod_is_unschedulable() -> None:
    ledger = fleet({1: "mid", 2: "low", 3: "mid"})
    s = with_room(ledger, wanting(2))
    planned = booking.book(ledger, s, _Metrics())  # type: ignore[arg-type]
    assert planned.outcome is None  # no new plan: the plan in force scales
    assert [(e.namespace, e.pod, e.victim, e.victim_priority) for e in planned.evict] == [
        ("other", "low-pod-2", "low", 100)
    ]
    assert "support/support-llm (priority 1000)" in planned.evict[0].reason
    assert "scale-up" in planned.evict[0].reason
    intents, _ = decide_and_build(s, planned)
    assert intents.evict == planned.evict and intents.requeue is not None and intents.requeue <= PREEMPT_AGAIN
    # not before the scheduler has found no device for the extra pod: the victim's replacement
    # would take the device first
    early = with_room(ledger, wanting(2, unschedulable=False))
    assert booking.book(ledger, early, _Metrics()).evict == ()  # type: ignore[arg-type]


def test_no_eviction_when_the_free_devices_hold_the_replica_or_the_victim_rose() -> None:
    free = fleet({1: "low", 2: "low"})
    assert booking.book(free, with_room(free, wanting(2)), _Metrics()).evict == ()  # type: ignore[arg-type]
    ledger = fleet({1: "mid", 2: "low", 3: "mid"})
    s = with_room(ledger, wanting(2))
    risen = replace(s, priority_of=lambda key: 1000)  # the victim's priority rose since the look
    assert booking.book(ledger, risen, _Metrics()).evict == ()  # type: ignore[arg-type]
