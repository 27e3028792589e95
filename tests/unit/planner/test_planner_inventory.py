"""The inventory: allocations of other claims, the order's own claims, MIG relatives, shares, counters."""

from __future__ import annotations

from typing import Any

import pytest

from controller.planner import Inventory, build_inventory
from shared import reasons
from testkit.planner import (
    BGE_LARGE,
    LLAMA_8B,
    LLAMA_70B,
    gpu,
    inventory_of,
    make_claim,
    make_class,
    make_slice,
    mig,
    plan,
    small_fleet,
)

L4_0 = ("gpu.nvidia.com", "l4-0", "gpu-0")
L4_1 = ("gpu.nvidia.com", "l4-1", "gpu-0")
A100 = ("gpu.nvidia.com", "a100-0", "gpu-0")
MIG_3G = ("gpu.nvidia.com", "a100-0", "gpu-0-mig-3g")
H100 = [("gpu.nvidia.com", "h100-0", f"gpu-{i}") for i in range(4)]


def test_devices_allocated_by_other_claims_are_not_offered() -> None:
    inv = inventory_of(small_fleet(), [make_claim("other", "team-a", [L4_0])])
    outcome = plan(inv, LLAMA_8B)
    assert outcome.ok, outcome.message
    assert outcome.allocation == (L4_1,)


def test_an_order_with_no_free_device_that_could_hold_it_gets_no_capacity() -> None:
    inv = inventory_of(small_fleet(), [make_claim("big", "team-a", H100)])
    outcome = plan(inv, LLAMA_70B)
    assert outcome.reason == reasons.NO_CAPACITY
    assert "H100" in outcome.message
    assert "per replica" in outcome.message


def test_the_orders_own_devices_are_held_and_not_offered_back() -> None:
    claims = [make_claim("support-llm-gpu-abc", "support", [L4_0]), make_claim("x", "team-a", [L4_1])]
    inv = inventory_of(small_fleet(), claims, own_claim_prefix="support-llm-gpu", namespace="support")
    assert inv.held == frozenset({L4_0})
    assert L4_0 not in inv.allocated
    outcome = plan(inv, LLAMA_8B)
    assert outcome.ok, outcome.message
    assert L4_0 not in outcome.allocation
    assert outcome.plan is not None
    assert outcome.plan.product_name != "NVIDIA L4"


def test_a_claim_of_the_same_name_in_another_namespace_is_not_the_orders() -> None:
    claims = [make_claim("support-llm-gpu-abc", "elsewhere", [L4_0])]
    inv = inventory_of(small_fleet(), claims, own_claim_prefix="support-llm-gpu", namespace="support")
    assert inv.held == frozenset()
    assert L4_0 in inv.allocated


def test_an_unchanged_plan_stays_on_the_devices_the_order_holds() -> None:
    first = plan(inventory_of(small_fleet()), LLAMA_8B)
    assert first.plan is not None
    claims = [make_claim("support-llm-gpu-abc", "support", list(first.allocation))]
    inv = inventory_of(small_fleet(), claims, own_claim_prefix="support-llm-gpu", namespace="support")
    again = plan(inv, LLAMA_8B, previous=first.plan)
    assert again.plan == first.plan
    assert again.allocation == first.allocation


def test_a_held_place_that_no_longer_fits_is_replanned_elsewhere() -> None:
    first = plan(inventory_of(small_fleet()), LLAMA_8B)
    assert first.plan is not None
    claims = [make_claim("support-llm-gpu-abc", "support", list(first.allocation))]
    inv = inventory_of(small_fleet(), claims, own_claim_prefix="support-llm-gpu", namespace="support")
    bigger = plan(inv, LLAMA_70B, previous=first.plan)
    assert bigger.ok, bigger.message
    assert bigger.plan is not None
    assert bigger.plan.product_name == "NVIDIA H100 80GB HBM3"


def test_a_mig_device_in_use_blocks_its_parent_gpu() -> None:
    inv = inventory_of(small_fleet(), [make_claim("m", "team-a", [MIG_3G])])
    assert A100 in inv.busy()
    assert ("gpu.nvidia.com", "a100-0", "gpu-0-mig-1g") not in inv.busy()


def test_a_whole_gpu_in_use_blocks_its_mig_devices() -> None:
    inv = inventory_of(small_fleet(), [make_claim("g", "team-a", [A100])])
    assert MIG_3G in inv.busy()


def test_shared_counters_block_devices_that_would_exceed_them() -> None:
    counters = [{"name": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}]
    consumes = [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "20Gi"}}}]
    devices = [
        {**mig(f"mig-{i}", "gpu-0", "3g.20gb", "20Gi"), "consumesCounters": consumes} for i in range(3)
    ]
    inv = inventory_of([make_slice("a100-9", devices, sharedCounters=counters)])
    after = inv.with_allocation(
        [("gpu.nvidia.com", "a100-9", "mig-0"), ("gpu.nvidia.com", "a100-9", "mig-1")]
    )
    assert ("gpu.nvidia.com", "a100-9", "mig-2") in after.busy()
    assert ("gpu.nvidia.com", "a100-9", "mig-2") not in inv.busy()


def shared_fleet() -> list[dict[str, Any]]:
    return [make_slice("l4-s", [gpu("gpu-0", "NVIDIA L4", "24Gi", "8.9.0", allowMultipleAllocations=True)])]


def test_time_slicing_takes_the_smallest_share_that_fits() -> None:
    inv = inventory_of(shared_fleet())
    outcome = plan(inv, BGE_LARGE, class_spec=make_class(sharingModes=["TimeSlicing"]))
    assert outcome.ok, outcome.message
    p = outcome.plan
    assert p is not None
    assert p.sharing_mode == "TimeSlicing"
    assert 1 <= p.share_percent < 100
    assert p.capacity_requests is not None
    assert outcome.shared_bytes is not None
    assert p.capacity_requests["memory"] == f"{outcome.shared_bytes // 2**20}Mi"
    assert p.gpu_memory_utilization == pytest.approx(0.9 * p.share_percent / 100, abs=1e-3)


def test_shares_consumed_by_claims_leave_less_room() -> None:
    key = ("gpu.nvidia.com", "l4-s", "gpu-0")
    inv = inventory_of(
        shared_fleet(), [make_claim("s", "team-a", [key], consumedCapacity={"memory": "23Gi"})]
    )
    assert inv.consumed[key] == 23 * 2**30
    outcome = plan(inv, BGE_LARGE, class_spec=make_class(sharingModes=["TimeSlicing"]))
    assert outcome.reason == reasons.NO_CAPACITY


def test_a_device_class_whose_selector_does_not_compile_is_undecidable() -> None:
    broken = {
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device."}}]},
    }
    inv = build_inventory(resource_slices=small_fleet(), device_classes=[broken], resource_claims=[])
    assert isinstance(inv, Inventory)
    outcome = plan(inv, LLAMA_8B, class_spec=make_class(deviceClassNames=["gpu.nvidia.com"]))
    assert outcome.reason == reasons.PLACEMENT_UNDECIDABLE
    assert "DeviceClass gpu.nvidia.com" in outcome.message


def test_a_slice_with_an_unreadable_device_is_reported() -> None:
    bad = make_slice("x", [{"name": "d", "attributes": {"productName": {"string": "a", "int": 1}}}])
    message = build_inventory(resource_slices=[bad], device_classes=[], resource_claims=[])
    assert isinstance(message, str)
    assert "productName" in message


def test_own_claims_can_be_named_one_by_one() -> None:
    claims = [make_claim("support-llm-7f9c-gpu-x2", "support", [L4_0])]
    inv = inventory_of(small_fleet(), claims, own_claims=["support-llm-7f9c-gpu-x2"], namespace="support")
    assert inv.held == frozenset({L4_0})


@pytest.mark.parametrize(
    "selector",
    [
        'device.attributes["gpu.nvidia.com"]["product" + "Name"] == "NVIDIA L4"',
        'device.attributes["gpu.nvidia.com"].exists(k, k == "productName") && '
        'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"',
        'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"',
    ],
)
def test_a_class_selector_is_judged_the_same_with_or_without_the_memo(selector: str) -> None:
    outcome = plan(inventory_of(small_fleet()), LLAMA_8B, class_spec=make_class(selector=selector))
    assert outcome.ok, outcome.message
    assert outcome.plan is not None
    assert outcome.plan.product_name == "NVIDIA L4"
