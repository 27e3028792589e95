"""Which devices an order could take by preemption (``controller.planner.preemption``):

- priorities: a PriorityClass's value; unnamed or missing: 0 (so an order whose class is missing
  takes nothing from orders at the default priority);
- only strictly lower priorities, never an equal one, never the order's own replicas, never a claim
  no order owns or one being deleted; lowest priority first;
- whole replicas: a tensor-parallel replica's devices go together, a multi-node replica's claims
  too (``replica_of``);
- ``without`` frees exactly what deleting the victims' claims frees in the ledger (whole devices,
  their MIG relatives and shared counters, memory shares): checked against the ledger itself, on
  examples and on random claims (hypothesis);
- ``available_to`` leaves the view as it is while the scheduler does not preempt for DRA devices
  (measured: tests/integration/test_dra_preemption.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.planner import preemption as pre
from controller.planner.claims import Claim, ClaimKey, OrderKey, read_claim
from controller.planner.inventory import DeviceKey, Inventory
from controller.planner.ledger import Ledger
from controller.planner.uses import Use
from shared.names import LABEL_ORDER
from testkit.planner import DRIVER, GPU_CLASS, MIG_CLASS, gpu, make_slice, mig

Obj = dict[str, Any]
H100 = "NVIDIA H100 80GB HBM3"
L4 = "NVIDIA L4"
ME: OrderKey = ("ns", "me")
VALUES = {"low": 100, "mid": 500, "high": 1000, "neg": -10}


def key(node: str, device: str = "gpu-0") -> DeviceKey:
    return (DRIVER, node, device)


def claim_obj(
    ns: str,
    name: str,
    devices: list[DeviceKey],
    *,
    order: str | None,
    memory: str | None = None,
    deleting: bool = False,
) -> Obj:
    results = []
    for d, p, n in devices:
        r: Obj = {"request": "gpu", "driver": d, "pool": p, "device": n}
        if memory is not None:
            r["consumedCapacity"] = {"memory": memory}
        results.append(r)
    meta: Obj = {"namespace": ns, "name": name}
    if order is not None:
        meta["labels"] = {LABEL_ORDER: order}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"allocation": {"devices": {"results": results}}}}


def fleet() -> Ledger:
    led = Ledger()
    led.on_device_class(GPU_CLASS)
    led.on_device_class(MIG_CLASS)
    led.on_slice(make_slice("h-0", [gpu(f"gpu-{i}", H100, "80Gi", "9.0.0") for i in range(4)]))
    led.on_slice(make_slice("l4-0", [gpu("gpu-0", L4, "24Gi", "8.9.0", allowMultipleAllocations=True)]))
    led.on_slice(
        make_slice(
            "a100-0",
            [
                gpu("gpu-0", "NVIDIA A100-SXM4-40GB", "40Gi", "8.0.0"),
                mig("gpu-0-mig-3g", "gpu-0", "3g.20gb", "20Gi"),
                mig("gpu-0-mig-1g", "gpu-0", "1g.5gb", "5Gi"),
            ],
        )
    )
    return led


def book(led: Ledger, objs: list[Obj]) -> list[tuple[ClaimKey, Claim]]:
    """Feed the claims to the ledger and read them as its claim book does."""
    known = led.view(ME).device_index().by_key
    out = []
    for o in objs:
        led.on_claim(o)
        out.append(((o["metadata"]["namespace"], o["metadata"]["name"]), read_claim(o, known)))
    return out


def prio(values: dict[OrderKey, int]) -> Any:
    return lambda order: values.get(order, 0)


def same_capacity(a: Inventory, b: Inventory) -> None:
    assert a.allocated == b.allocated
    assert {k: v for k, v in a.consumed.items() if v} == {k: v for k, v in b.consumed.items() if v}
    assert a.counters == b.counters
    assert a.held == b.held
    assert a.busy() == b.busy()


def replica(order: OrderKey, name: str, priority: int, *keys: DeviceKey) -> pre.Replica:
    return pre.Replica(order, name, priority, Use(whole=frozenset(keys)))


# ------------------------------------------------------------------ priorities


@pytest.mark.parametrize(
    ("name", "value"), [("high", 1000), ("neg", -10), (None, 0), ("", 0), ("deleted-class", 0)]
)
def test_a_priority_is_its_classs_value_else_zero(name: str | None, value: int) -> None:
    assert pre.priority_value(name, VALUES) == value


def test_order_priorities_read_the_class_priority_in_the_orders_status() -> None:
    def order(name: str, prio_class: str | None) -> Obj:
        constraints = {"priorityClassName": prio_class} if prio_class else {}
        return {"metadata": {"namespace": "ns", "name": name}, "status": {"constraints": constraints}}

    got = pre.order_priorities(
        [order("a", "high"), order("b", None), order("c", "gone"), {"metadata": {}}], VALUES
    )
    assert got == {("ns", "a"): 1000, ("ns", "b"): 0, ("ns", "c"): 0, ("", ""): 0}


# ------------------------------------------------------------------ victims


def test_only_strictly_lower_priorities_are_victims_lowest_first() -> None:
    held = [
        replica(("ns", "equal"), "e-0", 500, key("h-0", "gpu-0")),
        replica(("ns", "higher"), "h-0", 1000, key("h-0", "gpu-1")),
        replica(("ns", "low"), "l-0", 100, key("h-0", "gpu-2")),
        replica(("x", "lowest"), "n-0", -10, key("h-0", "gpu-3")),
    ]
    got = pre.victims(ME, 500, held)
    assert [r.order for r in got] == [("x", "lowest"), ("ns", "low")]
    assert pre.preemptible_use(ME, 500, held) == Use(
        whole=frozenset({key("h-0", "gpu-2"), key("h-0", "gpu-3")})
    )


def test_an_equal_priority_is_never_preempted() -> None:
    held = [replica(("ns", "peer"), "p-0", 500, key("h-0"))]
    assert pre.victims(ME, 500, held) == ()
    assert pre.victims(ME, 501, held) != ()


def test_the_orders_own_replicas_are_never_victims() -> None:
    """Even recorded at a lower priority (its class changed since): a replica of its own is not taken."""
    held = [
        replica(ME, "me-0", 0, key("h-0", "gpu-0")),
        replica(("other", "me"), "o-0", 0, key("h-0", "gpu-1")),
    ]
    got = pre.victims(ME, 1000, held)
    assert [r.order for r in got] == [("other", "me")], "same name in another namespace is another order"


def test_an_order_whose_priority_class_is_missing_takes_nothing_from_default_priority_orders() -> None:
    led = fleet()
    claims = book(
        led,
        [
            claim_obj("ns", "a-0", [key("h-0", "gpu-0")], order="a"),  # a class without priority: 0
            claim_obj("ns", "b-0", [key("h-0", "gpu-1")], order="b"),  # its class names a missing one: 0
        ],
    )
    orders = [
        {"metadata": {"namespace": "ns", "name": "a"}, "status": {"constraints": {}}},
        {
            "metadata": {"namespace": "ns", "name": "b"},
            "status": {"constraints": {"priorityClassName": "gone"}},
        },
    ]
    priorities = pre.order_priorities(orders, VALUES)
    mine = pre.priority_value("also-gone", VALUES)
    held = pre.replicas(claims, prio(priorities))
    assert mine == 0 and pre.victims(ME, mine, held) == ()
    view = led.view(ME)
    same_capacity(pre.available_to(view, ME, mine, held, preempts=True), view)


def test_claims_of_no_order_or_being_deleted_are_never_victims() -> None:
    led = fleet()
    claims = book(
        led,
        [
            claim_obj("ns", "foreign", [key("h-0", "gpu-0")], order=None),
            claim_obj("ns", "going", [key("h-0", "gpu-1")], order="low", deleting=True),
            claim_obj("ns", "low-0", [key("h-0", "gpu-2")], order="low"),
        ],
    )
    held = pre.replicas(claims, prio({("ns", "low"): 100}))
    assert [(r.order, r.name) for r in held] == [(("ns", "low"), "low-0")]


# ------------------------------------------------------------------ whole replicas


def test_a_tensor_parallel_replica_is_taken_whole_or_not_at_all() -> None:
    led = fleet()
    claims = book(led, [claim_obj("ns", "tp-0", [key("h-0", "gpu-0"), key("h-0", "gpu-1")], order="tp")])
    held = pre.replicas(claims, prio({("ns", "tp"): 100}))
    assert len(held) == 1 and held[0].use.whole == {key("h-0", "gpu-0"), key("h-0", "gpu-1")}
    freed = pre.without(led.view(ME), pre.victims(ME, 1000, held))
    assert not {key("h-0", "gpu-0"), key("h-0", "gpu-1")} & freed.busy()
    assert pre.victims(ME, 100, held) == ()


def test_a_multi_node_replicas_claims_go_together() -> None:
    led = fleet()
    claims = book(
        led,
        [
            claim_obj("ns", "mn-0-leader", [key("h-0", "gpu-0")], order="mn"),
            claim_obj("ns", "mn-0-worker-1", [key("h-0", "gpu-1")], order="mn"),
            claim_obj("ns", "mn-1-leader", [key("h-0", "gpu-2")], order="mn"),
        ],
    )
    held = pre.replicas(claims, prio({("ns", "mn"): 100}), replica_of=lambda k: k[1].split("-")[1])
    assert [(r.name, r.use.whole) for r in held] == [
        ("0", frozenset({key("h-0", "gpu-0"), key("h-0", "gpu-1")})),
        ("1", frozenset({key("h-0", "gpu-2")})),
    ]
    # without replica_of each claim is its own pod's replica
    assert len(pre.replicas(claims, prio({}))) == 3


# ------------------------------------------------------------------ what is freed, against the ledger


def oracle(objs: list[Obj], gone: set[str]) -> Inventory:
    """The ledger's view of ME after the ``gone`` claims are deleted."""
    led = fleet()
    for o in objs:
        led.on_claim(o)
    for o in objs:
        if o["metadata"]["name"] in gone:
            led.on_claim(o, deleted=True)
    return led.view(
        ME, own_claims=[o["metadata"]["name"] for o in objs if o["metadata"]["name"].startswith("me-")]
    )


def test_freed_devices_are_what_deleting_the_victims_claims_frees() -> None:
    objs = [
        claim_obj("ns", "me-0", [key("h-0", "gpu-3")], order="me"),
        claim_obj("ns", "low-0", [key("h-0", "gpu-0")], order="low"),
        claim_obj("ns", "low-1", [key("a100-0", "gpu-0-mig-3g")], order="low"),  # blocks its parent GPU
        claim_obj("ns", "low-2", [key("l4-0")], order="low", memory="8Gi"),
        claim_obj("ns", "peer-0", [key("l4-0")], order="peer", memory="4Gi"),
        claim_obj("ns", "high-0", [key("h-0", "gpu-1")], order="high"),
    ]
    led = fleet()
    claims = book(led, objs)
    priorities = {("ns", "me"): 500, ("ns", "low"): 100, ("ns", "peer"): 500, ("ns", "high"): 1000}
    held = pre.replicas(claims, prio(priorities))
    view = led.view(ME, own_claims=["me-0"])
    assert key("a100-0", "gpu-0") in view.busy()

    got = pre.available_to(view, ME, 500, held, preempts=True)
    same_capacity(got, oracle(objs, {"low-0", "low-1", "low-2"}))
    assert key("a100-0", "gpu-0") not in got.busy(), "the MIG device's parent GPU is free again"
    assert got.held == {key("h-0", "gpu-3")}, "the order's own devices stay held"
    assert got.consumed[key("l4-0")] > 0, "the equal-priority share stays"


def test_the_view_is_unchanged_while_the_scheduler_does_not_preempt_for_dra() -> None:
    assert pre.SCHEDULER_PREEMPTS_FOR_DRA is False
    led = fleet()
    claims = book(led, [claim_obj("ns", "low-0", [key("h-0", "gpu-0")], order="low")])
    held = pre.replicas(claims, prio({("ns", "low"): 100}))
    view = led.view(ME)
    assert pre.available_to(view, ME, 1000, held) is view
    assert key("h-0", "gpu-0") in pre.available_to(view, ME, 1000, held).busy()


# ------------------------------------------------------------------ random claims, partitionable devices


def counted_device(i: int) -> Obj:
    raw: Obj = {
        "name": f"d{i}",
        "attributes": {"type": {"string": "gpu"}, "uuid": {"string": f"GPU-{i}"}},
        "capacity": {"memory": {"value": "40Gi"}},
    }
    if i % 3 == 0:
        raw["allowMultipleAllocations"] = True
    if i % 2 == 1:
        raw["consumesCounters"] = [{"counterSet": "gpu", "counters": {"memory": {"value": f"{10 * i}Gi"}}}]
    return raw


def counted_fleet() -> Ledger:
    led = Ledger()
    led.on_device_class(GPU_CLASS)
    spec: Obj = {"driver": DRIVER, "nodeName": "n-p0", "pool": {"name": "p0"}}
    spec["devices"] = [counted_device(i) for i in range(6)]
    spec["sharedCounters"] = [{"name": "gpu", "counters": {"memory": {"value": "100Gi"}}}]
    led.on_slice({"kind": "ResourceSlice", "metadata": {"name": "p0"}, "spec": spec})
    return led


ORDERS = ["me", "a", "b", "c"]
CLAIMS = st.lists(
    st.tuples(st.sampled_from(ORDERS), st.lists(st.integers(0, 5), min_size=1, max_size=2, unique=True)),
    max_size=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CLAIMS, st.dictionaries(st.sampled_from(ORDERS), st.integers(-2, 2)), st.integers(-2, 2))
def test_without_victims_is_the_ledger_without_their_claims(
    raw: list[tuple[str, list[int]]], order_prio: dict[str, int], mine: int
) -> None:
    """Whole devices and shares (a shareable device takes 5Gi a claim) in random claims of random
    priorities: freeing the victims is deleting their claims, counters of partitionable devices too."""
    used: set[int] = set()
    objs = []
    for n, (order, devices) in enumerate(raw):
        whole = [i for i in devices if i % 3 and i not in used]  # a whole device is one claim's
        shared = [i for i in devices if i % 3 == 0]
        used.update(whole)
        for kind, picked in (("w", whole), ("s", shared)):
            if picked:
                objs.append(
                    claim_obj(
                        "ns",
                        f"{order}-{kind}{n}",
                        [(DRIVER, "p0", f"d{i}") for i in picked],
                        order=order,
                        memory="5Gi" if kind == "s" else None,
                    )
                )
    led = counted_fleet()
    claims = book(led, objs)
    priorities = {("ns", o): v for o, v in order_prio.items()}
    held = pre.replicas(claims, prio(priorities))
    own = [o["metadata"]["name"] for o in objs if o["metadata"]["name"].startswith("me-")]
    view = led.view(ME, own_claims=own)
    got = pre.available_to(view, ME, mine, held, preempts=True)
    gone = {r.name for r in pre.victims(ME, mine, held)}
    assert all(not name.startswith("me-") for name in gone)
    assert all(priorities.get(r.order, 0) < mine for r in pre.victims(ME, mine, held))

    after = counted_fleet()
    for o in objs:
        after.on_claim(o)
    for o in objs:
        if o["metadata"]["name"] in gone:
            after.on_claim(o, deleted=True)
    same_capacity(got, after.view(ME, own_claims=own))
