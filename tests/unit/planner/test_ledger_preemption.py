"""Controller-driven preemption in the ledger, booking and act (docs/admin-guide.md, "Priority and
preemption"): an order plans on the devices of strictly lower-priority orders' replicas only when
nothing else fits, takes as few as the plan needs (lowest priority first), its reservation
overlapping them is not over-commit, and the pods their claims are reserved for are evicted
through the Eviction API (429 and 404 left for the next reconcile)."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from controller import act, booking
from controller.intents import Evict
from controller.kube import apply as kapi
from controller.kube import errors as kerr
from controller.planner.inventory import Inventory
from controller.planner.ledger import Ledger, Use
from testkit.planner import DRIVER, GPU_CLASS, gpu, make_claim, make_slice

H100 = "NVIDIA H100 80GB HBM3"
PRIORITY = {("ns", "low"): 100, ("ns", "mid"): 500, ("ns", "peer"): 2000}


def key(device: str) -> tuple[str, str, str]:
    return (DRIVER, "h100-0", device)


def ledger_with(n: int, holders: dict[str, str]) -> Ledger:
    """A node of ``n`` H100s; ``holders``: device -> the order whose claim (``<order>-claim``,
    reserved for pod ``<order>-pod``) holds it."""
    ledger = Ledger()
    ledger.on_device_class(GPU_CLASS)
    ledger.on_slice(make_slice("h100-0", [gpu(f"gpu-{i}", H100, "80Gi", "9.0.0") for i in range(n)]))
    for device, order in holders.items():
        claim = make_claim(f"{order}-claim", "ns", [key(device)], order=order)
        claim["status"]["reservedFor"] = [{"resource": "pods", "name": f"{order}-pod", "uid": "u"}]
        ledger.on_claim(claim)
    return ledger


def first_free(count: int = 1) -> Callable[[Inventory], tuple[str | None, Use]]:
    """A planner of ``count`` whole devices: the first free ones, or nothing."""

    def plan(inventory: Inventory) -> tuple[str | None, Use]:
        free = sorted(d.key for d in inventory.devices if d.key not in inventory.allocated)
        if len(free) < count:
            return None, Use()
        return "h", Use(whole=frozenset(free[:count]))

    return plan


def take(ledger: Ledger, priority: int | None, count: int = 1) -> None:
    ledger.take(
        ("ns", "high"), (), first_free(count), priority=priority, priority_of=lambda o: PRIORITY.get(o, 0)
    )


def test_a_free_device_is_taken_and_nothing_is_preempted() -> None:
    ledger = ledger_with(2, {"gpu-0": "low"})
    take(ledger, 2000)
    r = ledger.reserved(("ns", "high"))
    assert r is not None and r.use.whole == {key("gpu-1")} and r.preempts == frozenset()


def test_with_every_device_held_it_preempts_the_lowest_priority_replica_only() -> None:
    # mutant "take every victim" (preempts both) and "highest first" (preempts mid) fail here
    ledger = ledger_with(2, {"gpu-0": "mid", "gpu-1": "low"})
    take(ledger, 2000)
    r = ledger.reserved(("ns", "high"))
    assert r is not None and r.use.whole == {key("gpu-1")}
    assert r.preempts == {("ns", "low-claim")}
    assert ledger.preempted(("ns", "high")) == ((("ns", "low-claim"), ("ns", "low"), ("low-pod",)),)


def test_it_takes_as_many_replicas_as_the_plan_needs() -> None:
    ledger = ledger_with(3, {"gpu-0": "mid", "gpu-1": "low", "gpu-2": "peer"})
    take(ledger, 2000, count=2)
    r = ledger.reserved(("ns", "high"))
    assert r is not None and r.preempts == {("ns", "low-claim"), ("ns", "mid-claim")}


def test_equal_priority_is_never_preempted() -> None:
    # mutant "victims of priority <= the order's" fails here
    ledger = ledger_with(1, {"gpu-0": "peer"})
    take(ledger, 2000)
    assert ledger.reserved(("ns", "high")) is None


def test_without_a_priority_nothing_is_preempted() -> None:
    ledger = ledger_with(1, {"gpu-0": "low"})
    take(ledger, None)
    assert ledger.reserved(("ns", "high")) is None


def test_a_reservation_over_the_claims_it_preempts_is_not_over_commit() -> None:
    # mutant "over_committed ignores Reservation.preempts" fails here
    ledger = ledger_with(1, {"gpu-0": "low"})
    take(ledger, 2000)
    assert ledger.reserved(("ns", "high")) is not None
    assert ledger.over_committed() == []
    ledger.on_claim(make_claim("low-claim", "ns", [key("gpu-0")], order="low"), deleted=True)
    assert ledger.over_committed() == [] and ledger.preempted(("ns", "high")) == ()
    ledger.on_claim(make_claim("other-claim", "ns", [key("gpu-0")], order="low"))
    assert ledger.over_committed() == [key("gpu-0")], "another claim on the device is over-commit"


def snapshot(priority_of: Callable[[tuple[str, str]], int], pods: int = 1) -> Any:
    return SimpleNamespace(key=("ns", "high"), pods=tuple({} for _ in range(pods)), priority_of=priority_of)


def test_the_evictions_are_the_pods_of_the_preempted_claims_of_strictly_lower_priority() -> None:
    ledger = ledger_with(1, {"gpu-0": "low"})
    take(ledger, 2000)
    out = booking.evictions(ledger, snapshot(lambda o: PRIORITY.get(o, 0)), 2000)
    assert [(e.namespace, e.pod, e.victim, e.victim_priority) for e in out] == [("ns", "low-pod", "low", 100)]
    assert "ns/high" in out[0].reason and "priority 2000" in out[0].reason
    # the victim's priority rose since the plan: it is not evicted (mutant: no check at eviction)
    assert booking.evictions(ledger, snapshot(lambda o: 2000), 2000) == ()
    # not before the order's own pod exists to take the device (mutant: no pod check)
    assert booking.evictions(ledger, snapshot(lambda o: 100, pods=0), 2000) == ()


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def emit(self, raw: dict[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((raw["metadata"]["name"], type_, reason, message))


@pytest.mark.parametrize(
    ("answer", "events"),
    [
        (None, [("high", "Normal", "Preempting"), ("low", "Warning", "Preempted")]),
        (kerr.ApiUnavailable("Cannot evict pod: disruption budget", status=429), []),
        (kerr.NotFound("pods low-pod not found", status=404), []),
    ],
)
def test_act_evicts_through_the_eviction_api_and_leaves_a_refusal_for_later(
    monkeypatch: pytest.MonkeyPatch, answer: Exception | None, events: list[tuple[str, str, str]]
) -> None:
    asked: list[tuple[str, str]] = []

    def evict(api: Any, *, namespace: str, name: str) -> None:
        asked.append((namespace, name))
        if answer is not None:
            raise answer

    monkeypatch.setattr(kapi, "evict", evict)
    monkeypatch.setattr(
        kapi, "get", lambda *a, **kw: {"metadata": {"name": kw["name"], "namespace": kw["namespace"]}}
    )
    recorder = Recorder()
    actor = act.Actor(api=None, metrics=None, recorder=recorder)  # type: ignore[arg-type]
    e = Evict("ns", "low-pod", "low", 100, "preempted by ns/high (priority 2000)")
    actor._evict(snapshot(lambda o: 0), (e,), {"metadata": {"name": "high", "namespace": "ns"}})
    assert asked == [("ns", "low-pod")]
    assert [ev[:3] for ev in recorder.events] == events


def test_decide_carries_the_evictions_and_looks_again_soon() -> None:
    """The reconcile's intents carry the evictions booking found, and it looks again within
    ``PREEMPT_AGAIN`` while they stand (mutant: decide drops ``Planning.evict``)."""
    from controller import decide
    from controller.snapshot import Planning
    from tests.unit.controller.snapshots import GPU, plan_on, serving

    e = Evict("ns", "low-pod", "low", 100, "preempted by ns/high (priority 2000)")
    s = serving(plan_on(GPU))
    intents = decide.decide(s, Planning(evict=(e,)))
    assert intents.evict == (e,)
    assert intents.requeue is not None and intents.requeue <= decide.PREEMPT_AGAIN
    assert decide.decide(s, Planning()).evict == ()
