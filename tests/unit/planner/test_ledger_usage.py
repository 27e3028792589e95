"""The ledger keeps the usage of every claim and reservation up to date per event; an order's view
(the usage less the order's own claims and reservation) is exactly the view added up from scratch
(``ledger_oracle.py``), after random sequences of slice, device class, claim and reservation events:
devices shared by several claims, a device in a claim and a reservation before ``settle``, shared
counters of partitionable devices, claims that arrive before their slice."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.planner.inventory import DeviceKey
from controller.planner.ledger import Ledger, OrderKey, Use
from tests.unit.planner.ledger_oracle import view_from_scratch

Obj = dict[str, Any]
DRIVER = "gpu.nvidia.com"
POOLS = ["p0", "p1"]
ORDERS: list[OrderKey] = [("ns", "a"), ("ns", "b"), ("other", "a")]
CLAIMS = [(ns, f"{o}-{i}") for ns, o in ORDERS for i in range(2)] + [("ns", "x-0")]


def device(i: int) -> Obj:
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


def a_slice(pool: str, devices: list[int], counter: str | None) -> Obj:
    spec: Obj = {"driver": DRIVER, "nodeName": f"n-{pool}", "pool": {"name": pool}}
    spec["devices"] = [device(i) for i in devices]
    if counter is not None:
        spec["sharedCounters"] = [{"name": "gpu", "counters": {"memory": {"value": counter}}}]
    return {"kind": "ResourceSlice", "metadata": {"name": f"{pool}-slice"}, "spec": spec}


def a_claim(key: tuple[str, str], devices: list[tuple[DeviceKey, str | None]]) -> Obj:
    results = []
    for (driver, pool, name), memory in devices:
        r: Obj = {"driver": driver, "pool": pool, "device": name}
        if memory is not None:
            r["consumedCapacity"] = {"memory": memory}
        results.append(r)
    meta = {"namespace": key[0], "name": key[1]}
    return {"metadata": meta, "status": {"allocation": {"devices": {"results": results}}}}


KEYS = st.tuples(st.just(DRIVER), st.sampled_from(POOLS), st.sampled_from([f"d{i}" for i in range(6)]))
EVENTS = st.one_of(
    st.tuples(
        st.just("slice"),
        st.sampled_from(POOLS),
        st.lists(st.integers(0, 5), unique=True, min_size=2),
        st.sampled_from(["100Gi", "35Gi", None]),
        st.booleans(),
    ),
    st.tuples(st.just("class"), st.booleans()),
    st.tuples(
        st.just("claim"),
        st.sampled_from(CLAIMS),
        st.lists(st.tuples(KEYS, st.sampled_from([None, None, "4Gi", "12Gi"])), max_size=3),
        st.booleans(),
    ),
    st.tuples(
        st.just("take"), st.sampled_from(ORDERS), st.lists(KEYS, min_size=1, max_size=3), st.booleans()
    ),
    st.tuples(st.just("settle"), st.sampled_from(ORDERS)),
    st.tuples(st.just("release"), st.sampled_from(ORDERS)),
)
CLASS = {"kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {"selectors": []}}


def apply(ledger: Ledger, event: tuple[Any, ...]) -> None:
    kind = event[0]
    if kind == "slice":
        _, pool, devices, counter, deleted = event
        ledger.on_slice(a_slice(pool, devices, counter), deleted=deleted)
    elif kind == "class":
        ledger.on_device_class(CLASS, deleted=event[1])
    elif kind == "claim":
        _, key, devices, deleted = event
        ledger.on_claim(a_claim(key, devices), deleted=deleted)
    elif kind == "take":
        _, order, keys, shared = event
        use = Use(shared=tuple((k, 2**30) for k in keys)) if shared else Use(whole=frozenset(keys))
        ledger.take(order, (), lambda inventory: ("plan", use))
    elif kind == "settle":
        ledger.settle(event[1])
    else:
        ledger.release(event[1])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EVENTS, max_size=30), st.lists(st.sampled_from([c for _, c in CLAIMS]), max_size=3))
def test_the_view_kept_per_event_is_the_view_added_up_from_scratch(events: list[Any], own: list[str]) -> None:
    ledger = Ledger()
    ledger.on_device_class(CLASS)
    for event in events:
        apply(ledger, event)
        for order in ORDERS:
            got = ledger.view(order, own)
            want = view_from_scratch(ledger, order, frozenset(own))
            assert got.allocated == want.allocated
            assert got.held == want.held
            assert got.consumed == want.consumed
            assert got.counters == want.counters
            assert got.busy() == want.busy()
