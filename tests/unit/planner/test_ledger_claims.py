"""The ledger knows an order's claims by their order label, and settles an order's reservation at the
allocation of the plan's claims (``claims.covers``), not at the order's next reconcile:

- the plan's claims on the reserved devices, or as many devices elsewhere (the scheduler's choice);
- a single-node plan's one pod is the whole plan; a multi-node plan is every pod's (leader and
  workers), not the leader's alone;
- an earlier plan's claims never settle a new plan's place: claims allocated before the
  reservation (``prior``), claims asking for something else (their template's ``shape``);
- a claim being deleted, a claim of another namespace, a reservation of unknown shape: no settle;
- the over-commit gauge finds an order's claims by label, not by their names.
"""

from __future__ import annotations

from typing import Any

from controller.planner.inventory import DeviceKey
from controller.planner.ledger import ClaimShape, Ledger, Use, shape_of
from testkit.planner import DRIVER, GPU_CLASS, gpu, make_claim, make_slice

Obj = dict[str, Any]
H100 = "NVIDIA H100 80GB HBM3"
L4 = "NVIDIA L4"
ORDER = ("ns", "b")


def asks(count: int = 1, product: str = H100, **capacity: str) -> Obj:
    """A claim's ``spec.devices`` as the renderer writes its template."""
    exactly: Obj = {
        "deviceClassName": "gpu.nvidia.com",
        "allocationMode": "ExactCount",
        "count": count,
        "selectors": [
            {"cel": {"expression": f'device.attributes["gpu.nvidia.com"].productName == "{product}"'}}
        ],
    }
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    return {"requests": [{"name": "gpu", "exactly": exactly}]}


def shape(count: int = 1, product: str = H100, **capacity: str) -> ClaimShape:
    out = shape_of(asks(count, product, **capacity))
    assert out is not None
    return out


def key(node: str, device: str = "gpu-0") -> DeviceKey:
    return (DRIVER, node, device)


def ledger(nodes: int = 2, per_node: int = 4) -> Ledger:
    led = Ledger()
    led.on_device_class(GPU_CLASS)
    for n in range(nodes):
        led.on_slice(make_slice(f"h-{n}", [gpu(f"gpu-{i}", H100, "80Gi", "9.0.0") for i in range(per_node)]))
    led.on_slice(make_slice("l4-0", [gpu("gpu-0", L4, "24Gi", "8.9.0", allowMultipleAllocations=True)]))
    return led


def reserve(
    led: Ledger, keys: list[DeviceKey], claims: ClaimShape | None, order: tuple[str, str] = ORDER
) -> None:
    led.take(order, (), lambda _inv: ("plan-1", Use(whole=frozenset(keys))), lambda: claims)


def claim(name: str, keys: list[DeviceKey], devices: Obj | None = None, **kw: Any) -> Obj:
    ns = kw.pop("namespace", ORDER[0])
    return make_claim(
        name, ns, keys, order=kw.pop("order", ORDER[1]), devices=devices or asks(len(keys)), **kw
    )


# ------------------------------------------------------------------ settle at the allocation


def test_the_plans_claim_on_the_reserved_device_settles_the_reservation_at_once() -> None:
    led = ledger()
    reserve(led, [key("h-0")], shape())
    before = led.epoch
    assert led.on_claim(claim("b-x-gpu-1", [key("h-0")])) is False  # the device stays taken: no capacity
    assert led.reserved(ORDER) is None
    assert led.epoch == before
    assert key("h-0") in led.view(("ns", "other")).allocated  # the claim holds it now


def test_the_plans_claim_elsewhere_settles_and_frees_the_reserved_device() -> None:
    led = ledger()
    reserve(led, [key("h-0")], shape())
    before = led.epoch
    assert led.on_claim(claim("b-x-gpu-1", [key("h-1", "gpu-3")])) is True  # waiting orders may fit now
    assert led.reserved(ORDER) is None
    assert led.epoch == before + 1
    assert key("h-0") not in led.view(("ns", "other")).allocated


def test_one_replica_of_a_single_node_plan_is_the_whole_plan() -> None:
    led = ledger()
    reserve(led, [key("h-0", "gpu-0"), key("h-0", "gpu-1")], shape(2))
    led.on_claim(claim("b-r1-gpu", [key("h-1", "gpu-0")], asks(2)))  # one device of two: not the plan
    assert led.reserved(ORDER) is not None
    led.on_claim(claim("b-r2-gpu", [key("h-1", "gpu-2"), key("h-1", "gpu-3")]))
    assert led.reserved(ORDER) is None


def test_a_multi_node_plan_is_settled_when_the_leader_and_every_worker_are_allocated() -> None:
    led = ledger(nodes=4)
    reserved = [key("h-0", "gpu-0"), key("h-0", "gpu-1"), key("h-1", "gpu-0"), key("h-1", "gpu-1")]
    reserve(led, reserved, shape(2))
    led.on_claim(claim("b-0-gpu", [key("h-0", "gpu-0"), key("h-0", "gpu-1")]))  # the leader, as reserved
    assert led.reserved(ORDER) is not None  # the worker's place is still needed
    assert key("h-1", "gpu-0") in led.view(("ns", "other")).allocated
    led.on_claim(claim("b-0-1-gpu", [key("h-3", "gpu-0"), key("h-3", "gpu-1")]))  # the worker, elsewhere
    assert led.reserved(ORDER) is None
    assert key("h-1", "gpu-0") not in led.view(("ns", "other")).allocated


def test_a_shared_plan_is_settled_by_its_share() -> None:
    led = ledger()
    led.take(
        ORDER,
        (),
        lambda _inv: ("p", Use(shared=((key("l4-0"), 6 * 2**30),))),
        lambda: shape(1, L4, memory="6Gi"),
    )
    led.on_claim(
        claim("b-x-gpu", [key("l4-0")], asks(1, L4, memory="6144Mi"), consumedCapacity={"memory": "6Gi"})
    )
    assert led.reserved(ORDER) is None


# ------------------------------------------------------------------ never an earlier plan's claims


def test_a_claim_allocated_before_the_reservation_never_settles_it() -> None:
    """A replan to a plan asking for the same: the running pod's claim stands for the old plan; the
    new plan's pods need a place of their own (rolling update), kept until their claims come."""
    led = ledger()
    old = claim("b-old-gpu", [key("h-1", "gpu-0")])
    led.on_claim(old)
    reserve(led, [key("h-0")], shape())
    led.on_claim(old)  # a resync, or any update of the old claim
    assert led.reserved(ORDER) is not None
    led.on_claim(claim("b-new-gpu", [key("h-1", "gpu-1")]))
    assert led.reserved(ORDER) is None


def test_a_claim_allocated_before_the_reservation_and_deleted_is_forgotten() -> None:
    """A claim of the same name after a deletion is a new claim (generated names rarely repeat)."""
    led = ledger()
    old = claim("b-0-gpu", [key("h-1", "gpu-0")])
    led.on_claim(old)
    reserve(led, [key("h-0")], shape())
    led.on_claim(old, deleted=True)
    assert led.reserved(ORDER) is not None
    led.on_claim(claim("b-0-gpu", [key("h-1", "gpu-1")]))
    assert led.reserved(ORDER) is None


def test_a_claim_of_another_template_never_settles_the_reservation() -> None:
    """The old plan's pod (another product) got its claim allocated after the replan."""
    led = ledger()
    reserve(led, [key("h-0")], shape())
    led.on_claim(claim("b-old-gpu", [key("h-0")], asks(1, L4)))  # even on the reserved device
    assert led.reserved(ORDER) is not None
    led.on_claim(claim("b-old-gpu", [], asks(1, L4)), deleted=True)
    led.on_claim(claim("b-new-gpu", [key("h-0")]))
    assert led.reserved(ORDER) is None


def test_a_claim_being_deleted_of_another_namespace_or_order_never_settles() -> None:
    led = ledger()
    reserve(led, [key("h-0")], shape())
    deleting = claim("b-gone-gpu", [key("h-1", "gpu-0")])
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    led.on_claim(deleting)
    led.on_claim(claim("b-x-gpu", [key("h-1", "gpu-1")], namespace="elsewhere"))
    led.on_claim(claim("c-x-gpu", [key("h-1", "gpu-2")], order="c"))
    unlabelled = claim("b-n-gpu", [key("h-1", "gpu-3")])
    del unlabelled["metadata"]["labels"]
    led.on_claim(unlabelled)
    led.on_claim(claim("b-y-gpu", [key("h-0")]), deleted=True)  # a deletion covers nothing
    assert led.reserved(ORDER) is not None


def test_a_reservation_of_unknown_shape_is_settled_only_by_settle() -> None:
    led = ledger()
    reserve(led, [key("h-0")], None)
    led.on_claim(claim("b-x-gpu", [key("h-0")]))
    assert led.reserved(ORDER) is not None
    led.settle(ORDER)
    assert led.reserved(ORDER) is None


def test_hold_keeps_the_shape_and_the_claims_allocated_before_it() -> None:
    led = ledger()
    old = claim("b-old-gpu", [key("h-1", "gpu-0")])
    led.on_claim(old)
    led.hold(ORDER, "p1", lambda _inv: Use(whole=frozenset({key("h-0")})), shape())
    led.on_claim(old)
    assert led.reserved(ORDER) is not None
    led.on_claim(claim("b-new-gpu", [key("h-0")]))
    assert led.reserved(ORDER) is None


# ------------------------------------------------------------------ the over-commit gauge, by label


def test_the_gauge_knows_an_orders_claims_by_label_not_by_name() -> None:
    led = ledger()
    reserve(led, [key("h-0")], None)  # settled only by settle: the gauge sees both
    led.on_claim(claim("b-looks-like-bs-gpu", [key("h-0")], order="other"))  # named like b's, not b's
    assert led.over_committed() == [key("h-0")]
    led.on_claim(claim("b-looks-like-bs-gpu", [key("h-0")], order="b"))  # b's, whatever its name
    assert led.over_committed() == []
    led.on_claim(claim("pod-7f-gpu-q", [key("h-1", "gpu-0")], order="other"))
    reserve(led, [key("h-1", "gpu-0")], None, ("ns", "pod"))  # a prefix of that claim's name
    assert led.over_committed() == [key("h-1", "gpu-0")]


# ------------------------------------------------------------------ shapes


def test_a_shape_is_what_the_claim_asks_not_how_the_api_server_writes_it() -> None:
    sent = asks(2, H100, memory="24576Mi")
    written: Obj = {
        "requests": [
            {
                "exactly": {  # the API server's field order, a canonical quantity, defaults spelt out
                    "selectors": sent["requests"][0]["exactly"]["selectors"],
                    "count": 2,
                    "capacity": {"requests": {"memory": "24Gi"}},
                    "deviceClassName": "gpu.nvidia.com",
                    "allocationMode": "ExactCount",
                },
                "name": "gpu",
            }
        ]
    }
    assert shape_of(sent) == shape_of(written)
    assert shape_of(asks(1, H100)) != shape_of(asks(2, H100)) != shape_of(asks(2, L4))
    assert shape_of(asks(1, L4, memory="6Gi")) != shape_of(asks(1, L4, memory="8Gi"))
    assert shape_of({}) is None and shape_of(None) is None
