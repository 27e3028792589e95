"""The capacity ledger: incremental updates from informer events, atomic booking, and properties.

- ``on_slice`` / ``on_claim`` / ``on_device_class`` change only what their object says;
- ``take`` books the planner's answer atomically (threads never book one device twice),
  ``settle`` / ``release`` / ``hold`` move reservations;
- ``epoch`` grows only when capacity grows;
- an unreadable slice is skipped and reported;
- property: random order mixes planned through ``take`` never over-commit a device, and an order
  that fits some free device (by an independent greedy book of what was given out) gets one.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.model_facts.facts import ModelFacts
from controller.planner import Inventory, LaunchPlan, PlanOutcome, plan_order
from controller.planner.estimate import estimate_memory
from controller.planner.inventory import Device, DeviceKey
from controller.planner.ledger import Ledger, Use, use_of
from controller.planner.reserve import devices_for
from shared import reasons
from shared.api.inference_class import InferenceServiceClassSpec
from testkit.planner import (
    BGE_LARGE,
    DRIVER,
    GPU_CLASS,
    LLAMA_8B,
    MIG_CLASS,
    fleet_objects,
    gpu,
    make_claim,
    make_class,
    make_request,
    make_slice,
    mig,
)

Obj = dict[str, Any]
H100 = "NVIDIA H100 80GB HBM3"
L4 = "NVIDIA L4"
GIB = 2**30
MIB = 2**20


def ledger_of(slices: Iterable[Obj], classes: Iterable[Obj] = (GPU_CLASS, MIG_CLASS)) -> Ledger:
    ledger = Ledger()
    for dc in classes:
        ledger.on_device_class(dc)
    for s in slices:
        ledger.on_slice(s)
    return ledger


def default_ledger() -> Ledger:
    objs = fleet_objects()
    return ledger_of(
        [o for o in objs if o["kind"] == "ResourceSlice"], [o for o in objs if o["kind"] == "DeviceClass"]
    )


def h100_node(node: str = "h100-0", n: int = 2) -> Obj:
    return make_slice(node, [gpu(f"gpu-{i}", H100, "80Gi", "9.0.0") for i in range(n)])


def l4_shared(node: str = "l4-0") -> Obj:
    return make_slice(node, [gpu("gpu-0", L4, "24Gi", "8.9.0", allowMultipleAllocations=True)])


def key(node: str, device: str = "gpu-0") -> DeviceKey:
    return (DRIVER, node, device)


def planner(
    facts: ModelFacts, spec: InferenceServiceClassSpec, out: list[PlanOutcome]
) -> Callable[[Inventory], tuple[str | None, Use]]:
    """What the reconciler hands ``take``: plan on the view, return the plan hash and its devices."""

    def plan(inventory: Inventory) -> tuple[str | None, Use]:
        outcome = plan_order(make_request(inventory, facts, class_spec=spec))
        out.append(outcome)
        if not outcome.ok or outcome.plan is None:
            return None, Use()
        return outcome.plan.model_dump_json(), use_of(outcome.allocation, outcome.shared_bytes)

    return plan


def fixed(keys: Iterable[DeviceKey], plan_hash: str = "h1") -> Callable[[Inventory], tuple[str | None, Use]]:
    return lambda _inventory: (plan_hash, Use(whole=frozenset(keys)))


# ------------------------------------------------------------------ slices and device classes


def test_slices_add_and_remove_devices_and_only_growth_moves_the_epoch() -> None:
    ledger = ledger_of([])
    e0 = ledger.epoch
    ledger.on_slice(h100_node("h100-0", 2))
    assert ledger.device_count() == 2
    e1 = ledger.epoch
    assert e1 > e0
    ledger.on_slice(h100_node("h100-0", 2))  # a resync or a status-only update: same devices
    assert ledger.epoch == e1
    ledger.on_slice(h100_node("h100-0", 4))  # the driver publishes two more
    assert ledger.device_count() == 4
    e2 = ledger.epoch
    assert e2 > e1
    ledger.on_slice(h100_node("h100-0", 1))  # shrinks: capacity did not grow
    assert ledger.device_count() == 1
    assert ledger.epoch == e2
    ledger.on_slice(h100_node("h100-0", 1), deleted=True)
    assert ledger.device_count() == 0
    assert ledger.epoch == e2


def test_a_slice_event_touches_only_that_slice() -> None:
    ledger = ledger_of([h100_node("a", 2), h100_node("b", 3)])
    ledger.on_slice(h100_node("a", 1))
    keys = {d.key for d in ledger.view(("ns", "o")).devices}
    assert keys == {key("a"), key("b"), key("b", "gpu-1"), key("b", "gpu-2")}


def test_devices_are_classified_by_the_device_classes_and_reclassified_when_they_change() -> None:
    node = make_slice(
        "a100-0",
        [
            gpu("gpu-0", "NVIDIA A100-SXM4-40GB", "40Gi", "8.0.0"),
            mig("gpu-1-mig", "gpu-1", "3g.20gb", "20Gi"),
        ],
    )
    ledger = ledger_of([node], classes=[GPU_CLASS])
    by_name = {d.name: d.device_classes for d in ledger.view(("ns", "o")).devices}
    assert by_name == {"gpu-0": frozenset({"gpu.nvidia.com"}), "gpu-1-mig": frozenset()}
    ledger.on_device_class(MIG_CLASS)
    by_name = {d.name: d.device_classes for d in ledger.view(("ns", "o")).devices}
    assert by_name["gpu-1-mig"] == frozenset({"mig.nvidia.com"})
    assert ledger.view(("ns", "o")).device_classes == {"gpu.nvidia.com", "mig.nvidia.com"}
    ledger.on_device_class(GPU_CLASS, deleted=True)
    view = ledger.view(("ns", "o"))
    assert view.device_classes == {"mig.nvidia.com"}
    assert {d.name: d.device_classes for d in view.devices}["gpu-0"] == frozenset()


def test_a_device_class_whose_selector_does_not_compile_is_an_error_of_the_view() -> None:
    broken = copy.deepcopy(GPU_CLASS)
    broken["spec"]["selectors"] = [{"cel": {"expression": "device.driver =="}}]
    ledger = ledger_of([h100_node()], classes=[broken])
    assert "does not compile" in ledger.view(("ns", "o")).device_class_errors["gpu.nvidia.com"]
    ledger.on_device_class(GPU_CLASS)
    assert not ledger.view(("ns", "o")).device_class_errors


def test_an_unreadable_slice_is_skipped_and_reported_and_the_rest_stays() -> None:
    bad = make_slice("bad-0", [gpu("gpu-0", H100, "eighty", "9.0.0")])
    ledger = ledger_of([h100_node("good", 2), bad])
    assert ledger.device_count() == 2
    report = ledger.unreadable()
    assert list(report) == ["bad-0-gpu"]
    assert "gpu-0" in report["bad-0-gpu"]
    ledger.on_slice(make_slice("bad-0", [gpu("gpu-0", H100, "80Gi", "9.0.0")]))  # fixed by the driver
    assert ledger.unreadable() == {}
    assert ledger.device_count() == 3


# ------------------------------------------------------------------ claims


def test_an_allocated_claim_is_taken_for_others_and_held_for_its_owner() -> None:
    ledger = ledger_of([h100_node()])
    assert ledger.on_claim(make_claim("o-pod-gpu-abc", "ns", [key("h100-0")])) is False
    other = ledger.view(("ns", "someone-else"))
    assert key("h100-0") in other.allocated and key("h100-0") in other.busy()
    own = ledger.view(("ns", "o"), own_claims=["o-pod-gpu-abc"])
    assert key("h100-0") in own.held and key("h100-0") not in own.allocated
    elsewhere = ledger.view(("other-ns", "o"), own_claims=["o-pod-gpu-abc"])
    assert key("h100-0") in elsewhere.allocated, "a claim's namespace is part of its name"


def test_a_claim_freed_moves_the_epoch_and_an_unchanged_one_does_not() -> None:
    ledger = ledger_of([h100_node()])
    claim = make_claim("c", "ns", [key("h100-0")])
    ledger.on_claim(claim)
    e = ledger.epoch
    assert ledger.on_claim(claim) is False  # the same allocation again (a resync)
    assert ledger.epoch == e
    assert ledger.on_claim(claim, deleted=True) is True
    assert ledger.epoch > e
    assert key("h100-0") not in ledger.view(("ns", "x")).busy()
    e = ledger.epoch
    pending = {"metadata": {"name": "d", "namespace": "ns"}, "status": {}}
    assert ledger.on_claim(pending) is False  # not allocated yet: takes nothing, frees nothing
    assert ledger.epoch == e


def test_a_shared_claim_consumes_memory_on_a_multiple_allocation_device() -> None:
    ledger = ledger_of([l4_shared()])
    ledger.on_claim(make_claim("c", "ns", [key("l4-0")], consumedCapacity={"memory": "6Gi"}))
    view = ledger.view(("ns", "x"))
    device = view.devices[0]
    assert view.consumed[key("l4-0")] == 6 * GIB
    assert view.free_memory(device) == 18 * GIB
    assert key("l4-0") not in view.allocated


def test_a_shared_claim_seen_before_its_slice_still_counts_as_a_share() -> None:
    """Informers start together: a claim may arrive before the slice that publishes its device."""
    ledger = ledger_of([])
    ledger.on_claim(make_claim("c", "ns", [key("l4-0")], consumedCapacity={"memory": "6Gi"}))
    ledger.on_slice(l4_shared())
    view = ledger.view(("ns", "x"))
    assert view.free_memory(view.devices[0]) == 18 * GIB, "the device keeps its other 18 GiB to share"
    assert key("l4-0") not in view.allocated


# ------------------------------------------------------------------ take, settle, release, hold


def test_take_books_the_answer_for_the_order_and_hides_it_from_the_others() -> None:
    ledger = ledger_of([h100_node()])
    ledger.take(("ns", "a"), [], fixed([key("h100-0")]))
    r = ledger.reserved(("ns", "a"))
    assert r is not None and r.use.whole == {key("h100-0")}
    assert key("h100-0") in ledger.view(("ns", "b")).allocated
    assert key("h100-0") not in ledger.view(("ns", "a")).busy(), "an order's own reservation is its own"


def test_take_with_another_plan_replaces_the_reservation_and_frees_what_it_dropped() -> None:
    ledger = ledger_of([h100_node()])
    ledger.take(("ns", "a"), [], fixed([key("h100-0")], "h1"))
    e = ledger.epoch
    ledger.take(("ns", "a"), [], fixed([key("h100-0"), key("h100-0", "gpu-1")], "h2"))
    assert ledger.epoch == e, "a bigger place frees nothing"
    ledger.take(("ns", "a"), [], fixed([key("h100-0", "gpu-1")], "h3"))
    assert ledger.epoch > e
    assert key("h100-0") not in ledger.view(("ns", "b")).busy()
    e = ledger.epoch
    ledger.take(("ns", "a"), [], lambda _inv: (None, Use()))  # planned nothing: the place is freed
    assert ledger.reserved(("ns", "a")) is None
    assert ledger.epoch > e


def test_settle_hands_the_place_to_the_allocation_without_freeing_capacity() -> None:
    ledger = ledger_of([h100_node()])
    ledger.take(("ns", "a"), [], fixed([key("h100-0")]))
    ledger.on_claim(make_claim("a-pod-gpu", "ns", [key("h100-0")]))
    e = ledger.epoch
    ledger.settle(("ns", "a"))
    assert ledger.reserved(("ns", "a")) is None
    assert ledger.epoch == e
    assert key("h100-0") in ledger.view(("ns", "b")).busy()


def test_release_frees_the_reservation_and_forgets_the_exhaustion() -> None:
    ledger = ledger_of([h100_node()])
    ledger.release(("ns", "nobody"))
    e = ledger.epoch
    assert ledger.epoch == e
    ledger.take(("ns", "a"), [], fixed([key("h100-0")]))
    assert ledger.mark_exhausted(("ns", "a")) == e
    ledger.release(("ns", "a"))
    assert ledger.epoch > e
    assert ledger.reserved(("ns", "a")) is None
    assert ledger.exhausted_since(("ns", "a")) is None
    assert key("h100-0") not in ledger.view(("ns", "b")).busy()


def test_exhaustion_is_remembered_at_the_first_epoch() -> None:
    ledger = ledger_of([h100_node()])
    first = ledger.mark_exhausted(("ns", "a"))
    ledger.on_slice(h100_node("h100-1"))
    assert ledger.mark_exhausted(("ns", "a")) == first
    assert ledger.epoch > first
    ledger.clear_exhausted(("ns", "a"))
    assert ledger.exhausted_since(("ns", "a")) is None


def _plan_for(facts: ModelFacts, ledger: Ledger, spec: InferenceServiceClassSpec | None = None) -> LaunchPlan:
    out = plan_order(make_request(ledger.view(("ns", "probe")), facts, class_spec=spec or make_class()))
    assert out.ok and out.plan is not None
    return out.plan


def test_hold_rebuilds_a_reservation_after_a_restart_and_is_idempotent() -> None:
    ledger = ledger_of([h100_node("h100-0", 1), h100_node("h100-1", 1)])
    plan = _plan_for(LLAMA_8B, ledger)
    ledger.on_claim(make_claim("someone", "ns", [key("h100-0")]))
    ledger.hold(("ns", "a"), "p1", lambda inv: devices_for(plan, inv))
    r = ledger.reserved(("ns", "a"))
    assert r is not None and r.use.whole == {key("h100-1")}, "the free device of the plan's product"
    ledger.hold(("ns", "a"), "p1", lambda inv: Use(whole=frozenset({key("h100-0")})))
    r2 = ledger.reserved(("ns", "a"))
    assert r2 == r, "the same plan already holds its place"


def test_two_claims_on_one_device_are_reported_over_committed() -> None:
    ledger = ledger_of([h100_node()])
    assert ledger.over_committed() == []
    ledger.on_claim(make_claim("x", "ns", [key("h100-0")]))
    ledger.take(("ns", "b"), [], fixed([key("h100-0")]))  # a bad plan function ignores the view
    assert ledger.over_committed() == [key("h100-0")]


# ------------------------------------------------------------------ concurrency


def test_concurrent_takes_never_book_the_same_device() -> None:
    ledger = ledger_of([h100_node(f"h100-{n}", 2) for n in range(3)])  # 6 devices
    barrier = threading.Barrier(10)
    outcomes: dict[int, list[PlanOutcome]] = defaultdict(list)
    spec = make_class(deviceClassNames=["gpu.nvidia.com"])

    def worker(i: int) -> None:
        inner = planner(LLAMA_8B, spec, outcomes[i])

        def slow(inventory: Inventory) -> tuple[str | None, Use]:
            time.sleep(0.002)  # widen the window between reading the view and booking
            return inner(inventory)

        barrier.wait()
        ledger.take(("ns", f"o-{i}"), [], slow)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    booked = [k for i in range(10) if (r := ledger.reserved(("ns", f"o-{i}"))) for k in r.use.whole]
    assert len(booked) == 6 == len(set(booked))
    assert ledger.over_committed() == []
    refused = [o[0].reason for o in outcomes.values() if not o[0].ok]
    assert refused == [reasons.NO_CAPACITY] * 4


# ------------------------------------------------------------------ property: random order mixes

DEFAULT = default_ledger()  # builds celpy's environment before hypothesis runs (it moves the recursion limit)
FLEET: tuple[Device, ...] = DEFAULT.view(("", "")).devices
CLASS_SHAPES = [
    make_class(),
    make_class(sharingModes=["MIG", "Exclusive"]),
    make_class(deviceClassNames=["mig.nvidia.com", "gpu.nvidia.com"], sharingModes=["MIG", "Exclusive"]),
    make_class(sharingModes=["TimeSlicing", "Exclusive"]),
    make_class(sharingModes=["Exclusive"], maxAcceleratorsPerReplica=1),
]


def model(billions: float, context: int) -> ModelFacts:
    n = int(billions * 1e9)
    return BGE_LARGE.model_copy(
        update={
            "name": f"test/model-{n}",
            "architecture": "LlamaForCausalLM",
            "endpoint_types": ("Chat",),
            "parameter_count": n,
            "parameter_dtype_counts": {"BF16": n},
            "context_length": context,
            "torch_dtype": "bfloat16",
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "hidden_size": 4096,
        }
    )


def _modes_allow(spec: InferenceServiceClassSpec, d: Device, mode: str) -> bool:
    if mode == "MIG":
        return d.kind == "mig"
    if d.kind == "mig":
        return False
    if mode == "TimeSlicing":
        return d.multiple_allocations
    return True


def fits_a_free_device(
    facts: ModelFacts, spec: InferenceServiceClassSpec, whole: set[DeviceKey], shared: dict[DeviceKey, int]
) -> bool:
    """The oracle: some single device, free in our own book of what was handed out, holds the model."""
    need = estimate_memory(facts).per_device_need(1, 0.9)
    for d in FLEET:
        if not d.device_classes & set(spec.placement.device_class_names):
            continue
        for mode in spec.placement.sharing_modes or ["Exclusive"]:
            if not _modes_allow(spec, d, mode):
                continue
            if mode == "TimeSlicing":
                percent = max(1, math.ceil(need * 100 / d.memory_bytes))
                share = math.ceil(d.memory_bytes * percent / 100 / MIB) * MIB
                if d.key not in whole and percent <= 100 and share <= d.memory_bytes - shared.get(d.key, 0):
                    return True
            elif d.key not in whole and not shared.get(d.key) and need <= d.memory_bytes:
                return True
    return False


orders = st.lists(
    st.tuples(
        st.floats(0.1, 80.0),
        st.sampled_from([2048, 8192, 32768]),
        st.integers(0, len(CLASS_SHAPES) - 1),
    ),
    min_size=1,
    max_size=45,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mix=orders)
def test_random_order_mixes_never_over_commit_and_every_order_that_fits_a_free_device_gets_one(
    mix: list[tuple[float, int, int]],
) -> None:
    ledger = default_ledger()
    by_key = {d.key: d for d in FLEET}
    whole: set[DeviceKey] = set()  # our own book, from the outcomes alone
    shared: dict[DeviceKey, int] = defaultdict(int)
    for i, (billions, context, shape) in enumerate(mix):
        facts, spec = model(billions, context), CLASS_SHAPES[shape]
        fits = fits_a_free_device(facts, spec, whole, shared)
        out: list[PlanOutcome] = []
        ledger.take(("ns", f"o-{i}"), [], planner(facts, spec, out))
        outcome = out[0]
        if fits:
            assert outcome.ok, f"order {i} fits a free device but got {outcome.reason}: {outcome.message}"
        if not outcome.ok:
            assert ledger.reserved(("ns", f"o-{i}")) is None
            continue
        for k in outcome.allocation:
            assert k not in whole, f"{k} booked whole twice"
            if outcome.shared_bytes is None:
                assert not shared.get(k), f"{k} taken whole while shared"
                whole.add(k)
            else:
                shared[k] += outcome.shared_bytes
                assert shared[k] <= by_key[k].memory_bytes, f"{k} shared beyond its memory"
    assert ledger.over_committed() == []
    # the ledger's own view agrees with the book: nothing it gave out is offered again
    view = ledger.view(("ns", "newcomer"))
    assert whole <= view.allocated
    assert {k: v for k, v in view.consumed.items() if v} == {k: v for k, v in shared.items() if v}


# ------------------------------------------------------------------ busy() through the device index


def busy_by_scan(inv: Inventory) -> frozenset[DeviceKey]:
    """The reference: every device scanned (what ``Inventory.busy`` did before the index)."""
    taken = inv.allocated | inv.held | frozenset(k for k, v in inv.consumed.items() if v > 0)
    uuids = {d.uuid for d in inv.devices if d.key in taken and d.uuid}
    parents = {d.parent_uuid for d in inv.devices if d.key in taken and d.parent_uuid}
    blocked = set(taken)
    for d in inv.devices:
        left = all(
            inv.counters.get((d.key[0], d.key[1], cs, c), amount) >= amount for cs, c, amount in d.consumes
        )
        if (d.parent_uuid in uuids) or (d.uuid is not None and d.uuid in parents) or not left:
            blocked.add(d.key)
    return frozenset(blocked)


RELATIVES = ledger_of(
    [
        h100_node(),
        l4_shared(),
        make_slice(
            "a100-0",
            [
                gpu("gpu-0", "NVIDIA A100-SXM4-40GB", "40Gi", "8.0.0"),
                mig("gpu-0-mig-3g", "gpu-0", "3g.20gb", "20Gi"),
                mig("gpu-0-mig-1g", "gpu-0", "1g.5gb", "5Gi"),
                gpu("gpu-1", "NVIDIA A100-SXM4-40GB", "40Gi", "8.0.0"),
                mig("gpu-1-mig-3g", "gpu-1", "3g.20gb", "20Gi"),
            ],
        ),
    ]
)
RELATIVE_KEYS = sorted(d.key for d in RELATIVES.view(("", "")).devices)


@settings(max_examples=100, deadline=None)
@given(
    allocated=st.sets(st.sampled_from(RELATIVE_KEYS)),
    held=st.sets(st.sampled_from(RELATIVE_KEYS)),
    shared_gib=st.integers(0, 24),
)
def test_busy_through_the_index_is_the_same_as_a_scan_of_every_device(
    allocated: set[DeviceKey], held: set[DeviceKey], shared_gib: int
) -> None:
    ledger = RELATIVES
    for i, k in enumerate(sorted(allocated)):
        ledger.on_claim(make_claim(f"c-{i}", "ns", [k]))
    for i, k in enumerate(sorted(held)):
        ledger.on_claim(make_claim(f"own-{i}", "ns", [k]))
    if shared_gib:
        ledger.on_claim(
            make_claim("s", "other", [key("l4-0")], consumedCapacity={"memory": f"{shared_gib}Gi"})
        )
    try:
        inv = ledger.view(("ns", "o"), own_claims=[f"own-{i}" for i in range(len(held))])
        assert inv.index is not None, "the ledger hands its index to every view"
        assert inv.busy() == busy_by_scan(inv)
        fresh = Inventory(
            devices=inv.devices,
            device_classes=inv.device_classes,
            allocated=inv.allocated,
            consumed=inv.consumed,
            held=inv.held,
        )
        assert fresh.busy() == busy_by_scan(fresh)
    finally:
        for i in range(len(allocated)):
            ledger.on_claim(make_claim(f"c-{i}", "ns", []), deleted=True)
        for i in range(len(held)):
            ledger.on_claim(make_claim(f"own-{i}", "ns", []), deleted=True)
        ledger.on_claim(make_claim("s", "other", []), deleted=True)


def test_a_slice_that_publishes_other_devices_in_place_of_old_ones_moves_the_epoch() -> None:
    """A MIG reconfiguration: four small MIG devices become one large one. Fewer devices, but a
    model that fitted nowhere may fit now, so the orders waiting for capacity must look again."""
    small = make_slice("a100-0", [mig(f"gpu-0-mig-1g-{i}", "gpu-0", "1g.5gb", "5Gi") for i in range(4)])
    large = make_slice("a100-0", [mig("gpu-0-mig-7g-0", "gpu-0", "7g.40gb", "40Gi")])
    ledger = ledger_of([small])
    e = ledger.epoch
    ledger.on_slice(large)
    assert ledger.device_count() == 1
    assert ledger.epoch > e
    e = ledger.epoch
    ledger.on_slice(large)  # the same devices again
    assert ledger.epoch == e


def test_a_reservation_overlapping_the_orders_own_allocated_claim_is_not_over_commit() -> None:
    ledger = ledger_of([h100_node()])
    ledger.take(("ns", "b"), [], fixed([key("h100-0")]))
    ledger.on_claim(make_claim("b-7d9f-x2-gpu-abc", "ns", [key("h100-0")], order="b"))  # b's own claim
    assert ledger.over_committed() == []
    ledger.on_claim(make_claim("other-5c-gpu-q", "ns", [key("h100-0")]))
    assert ledger.over_committed() == [key("h100-0")]


def test_a_reservation_whose_order_was_allocated_elsewhere_is_not_over_commit_until_settled() -> None:
    """The scheduler may give an order other devices than its plan reserved; until the order's next
    reconcile settles the reservation, another order's claim on the reserved device is no over-commit.
    A reservation its order's claims do not yet cover still is."""
    ledger = ledger_of([h100_node("h100-0", 3)])
    ledger.take(("ns", "b"), [], fixed([key("h100-0", "gpu-0"), key("h100-0", "gpu-1")]))
    ledger.on_claim(make_claim("other-5c-gpu-q", "ns", [key("h100-0", "gpu-0")]))  # another order's claim
    assert ledger.over_committed() == [key("h100-0", "gpu-0")]  # b holds nothing yet: a double booking
    ledger.on_claim(make_claim("b-7d9f-x2-gpu-abc", "ns", [key("h100-0", "gpu-2")], order="b"))  # b's 1st pod
    assert ledger.over_committed() == [key("h100-0", "gpu-0")]  # one of two reserved devices covered
    ledger.on_claim(make_claim("b-7d9f-y7-gpu-def", "ns", [key("h100-0", "gpu-1")], order="b"))  # 2nd
    assert ledger.over_committed() == []
    ledger.settle(("ns", "b"))
    assert ledger.over_committed() == []
