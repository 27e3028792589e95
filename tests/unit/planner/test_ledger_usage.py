"""The ledger keeps the usage of every claim and reservation up to date per event; an order's view
(the usage less the order's own claims and reservation) is exactly the view added up from scratch
(``ledger_oracle.py``), after random sequences of slice, device class, claim and reservation events:
devices shared by several claims, a device in a claim and a reservation before ``settle``, shared
counters of partitionable devices, claims that arrive before their slice.

The same sequences, with claims labelled with their order and asking for one of two shapes, and
reservations of a shape or none, check the settle at the allocation (``claims.covers``): no
reservation is ever left that its order's claims stand for; a claim event drops a reservation only
when they do; an order's claims are exactly those with its label."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.planner.claims import covers
from controller.planner.inventory import DeviceKey
from controller.planner.ledger import Ledger, OrderKey, Use, shape_of
from shared.names import LABEL_ORDER
from tests.unit.planner.ledger_oracle import view_from_scratch

Obj = dict[str, Any]
DRIVER = "gpu.nvidia.com"
POOLS = ["p0", "p1"]
ORDERS: list[OrderKey] = [("ns", "a"), ("ns", "b"), ("other", "a")]
CLAIMS = [(ns, f"{o}-{i}") for ns, o in ORDERS for i in range(2)] + [("ns", "x-0")]
SHAPES = [
    {"requests": [{"name": "gpu", "exactly": {"deviceClassName": c, "count": 1}}]} for c in ("gpu", "big")
]


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


def a_claim(key: tuple[str, str], devices: list[tuple[DeviceKey, str | None]], shape: int = 0) -> Obj:
    results = []
    for (driver, pool, name), memory in devices:
        r: Obj = {"driver": driver, "pool": pool, "device": name}
        if memory is not None:
            r["consumedCapacity"] = {"memory": memory}
        results.append(r)
    meta: Obj = {"namespace": key[0], "name": key[1]}
    if shape >= 0:  # labelled with its order (the name's prefix here; "x-0" with a label of no order)
        meta["labels"] = {LABEL_ORDER: key[1].split("-")[0]}
    spec = {"devices": SHAPES[shape % 2]}
    return {"metadata": meta, "spec": spec, "status": {"allocation": {"devices": {"results": results}}}}


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
        st.sampled_from([0, 0, 1, -1]),  # the shape; -1: no order label
    ),
    st.tuples(
        st.just("take"),
        st.sampled_from(ORDERS),
        st.lists(KEYS, min_size=1, max_size=3),
        st.booleans(),
        st.sampled_from([0, 1, None]),  # the plan's claims' shape; None: unknown
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
        _, key, devices, deleted, shape = event
        ledger.on_claim(a_claim(key, devices, shape), deleted=deleted)
    elif kind == "take":
        _, order, keys, shared, shape = event
        use = Use(shared=tuple((k, 2**30) for k in keys)) if shared else Use(whole=frozenset(keys))
        claims = shape_of(SHAPES[shape]) if shape is not None else None
        ledger.take(order, (), lambda inventory: ("plan", use), lambda: claims)
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
        before = {o: ledger.reserved(o) for o in ORDERS}
        apply(ledger, event)
        for order in ORDERS:
            mine = ledger._claims.of_order(order)
            assert {n for n, _ in mine} == {
                name
                for (ns, name), c in ledger._claims.items()
                if (ns, name.split("-")[0]) == order and c.order
            }
            reservation = ledger.reserved(order)
            assert reservation is None or not covers(reservation, mine)  # never left standing
            old = before[order]
            if event[0] == "claim" and old is not None and reservation is None:
                assert covers(old, mine)  # a claim settles only what the order's claims stand for
            got = ledger.view(order, own)
            want = view_from_scratch(ledger, order, frozenset(own))
            assert got.allocated == want.allocated
            assert got.held == want.held
            assert got.consumed == want.consumed
            assert got.counters == want.counters
            assert got.busy() == want.busy()


ONE_ORDER_CLAIMS = [("ns", "a-0"), ("ns", "a-1"), ("ns", "a-2"), ("ns", "b-0"), ("other", "a-0")]
FOCUSED = st.one_of(
    st.tuples(st.just("slice"), st.just("p0"), st.just([0, 1, 2, 3, 4, 5]), st.just(None), st.just(False)),
    st.tuples(
        st.just("claim"),
        st.sampled_from(ONE_ORDER_CLAIMS),
        st.lists(st.tuples(KEYS, st.sampled_from([None, None, None, "4Gi"])), min_size=1, max_size=2),
        st.sampled_from([False, False, False, True]),
        st.sampled_from([0, 0, 0, 1, -1]),
    ),
    st.tuples(
        st.just("take"),
        st.just(("ns", "a")),
        st.lists(KEYS, min_size=1, max_size=2),
        st.sampled_from([False, False, True]),
        st.sampled_from([0, 0, 0, 1, None]),
    ),
    st.tuples(st.just("settle"), st.just(("ns", "a"))),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(FOCUSED, min_size=3, max_size=25))
def test_a_claim_settles_exactly_what_its_orders_claims_stand_for(events: list[Any]) -> None:
    """One order's claims and reservations, so that settles at the allocation are frequent: the
    view still adds up, and the invariants of the test above hold."""
    test_the_view_kept_per_event_is_the_view_added_up_from_scratch.hypothesis.inner_test(events, ["a-0"])  # type: ignore[attr-defined]
