"""The planner's fast paths give exactly the answers of the plain ones.

- ``best_candidate`` is ``candidates(...)[0]`` for every device class, sharing mode, model and
  fleet state (devices taken at random);
- ``Inventory.busy`` through the fleet index equals the pass over the whole fleet it replaced;
- the index is built once per fleet tuple.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.planner import Inventory, build_inventory
from controller.planner.estimate import estimate_memory
from controller.planner.fleet_index import index_of
from controller.planner.inventory import DeviceKey
from controller.planner.placement import best_candidate, candidates, tensor_parallel_sizes
from controller.planner.recipes import model_recipes
from tests.cluster import fleet
from tests.unit.planner.builders import (
    BGE_LARGE,
    LLAMA_8B,
    LLAMA_70B,
    QWEN3_8B_FP8,
    QWEN_32B_AWQ,
    fleet_objects,
    make_recipe,
)

MODELS = [QWEN_32B_AWQ, LLAMA_8B, LLAMA_70B, BGE_LARGE, QWEN3_8B_FP8]
MODES = ["Exclusive", "MIG", "TimeSlicing", "MPS"]


@functools.cache
def fleets() -> tuple[Inventory, ...]:
    out = []
    for objs in (fleet_objects(), fleet.large_fleet(24)):
        slices = [o for o in objs if o.get("kind") == "ResourceSlice"]
        classes = [o for o in objs if o.get("kind") == "DeviceClass"]
        inv = build_inventory(resource_slices=slices, device_classes=classes, resource_claims=[])
        assert isinstance(inv, Inventory), inv
        out.append(inv)
    return tuple(out)


@pytest.fixture(autouse=True, scope="module")
def _built() -> None:
    """Built outside Hypothesis: compiling CEL raises the recursion limit, which it warns about."""
    fleets()


def reference_busy(inv: Inventory) -> frozenset[DeviceKey]:
    """The pass over the whole fleet that ``busy`` used to make."""
    taken = inv.allocated | inv.held | frozenset(k for k, v in inv.consumed.items() if v > 0)
    uuids = {d.uuid for d in inv.devices if d.key in taken and d.uuid}
    parents = {d.parent_uuid for d in inv.devices if d.key in taken and d.parent_uuid}
    blocked = set(taken)
    for d in inv.devices:
        if (
            (d.parent_uuid is not None and d.parent_uuid in uuids)
            or (d.uuid is not None and d.uuid in parents)
            or (d.consumes and not inv._counters_left(d))
        ):
            blocked.add(d.key)
    return frozenset(blocked)


def taken(inv: Inventory, picks: list[int], shared: list[int]) -> Inventory:
    keys = [inv.devices[i % len(inv.devices)].key for i in picks]
    inv = inv.with_allocation(keys)
    sharable = [d for d in inv.devices if d.multiple_allocations]
    for i in shared:
        if sharable:
            inv = inv.with_allocation([sharable[i % len(sharable)].key], memory=2**30 * (1 + i % 8))
    return inv


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, 1),
    picks=st.lists(st.integers(0, 10_000), max_size=60),
    shared=st.lists(st.integers(0, 100), max_size=6),
    model=st.sampled_from(MODELS),
    mode=st.sampled_from(MODES),
    device_class=st.sampled_from(["gpu.nvidia.com", "mig.nvidia.com"]),
    max_devices=st.sampled_from([1, 2, 4, 8]),
    empty=st.booleans(),
)
def test_best_candidate_is_the_first_of_the_sorted_candidates(
    which: int,
    picks: list[int],
    shared: list[int],
    model: Any,
    mode: str,
    device_class: str,
    max_devices: int,
    empty: bool,
) -> None:
    inv = taken(fleets()[which], picks, shared)
    choices = list(model_recipes([make_recipe()], model, "Chat" if model is not BGE_LARGE else "Embeddings"))
    args: dict[str, Any] = {
        "device_class": device_class,
        "mode": mode,
        "devices": list(index_of(inv.devices).by_class.get(device_class, ())),
        "inventory": None if empty else inv,
        "busy": inv.busy(),
        "estimate": estimate_memory(model),
        "choices": choices,
        "tp_sizes": tensor_parallel_sizes(max_devices, model.num_attention_heads),
    }
    every = candidates(**args)
    assert best_candidate(**args) == (every[0] if every else None)


@settings(max_examples=150, deadline=None)
@given(
    which=st.integers(0, 1),
    picks=st.lists(st.integers(0, 10_000), max_size=80),
    shared=st.lists(st.integers(0, 100), max_size=6),
    held=st.lists(st.integers(0, 10_000), max_size=4),
)
def test_busy_through_the_index_is_the_pass_over_the_fleet(
    which: int, picks: list[int], shared: list[int], held: list[int]
) -> None:
    inv = taken(fleets()[which], picks, shared)
    inv = Inventory(
        devices=inv.devices,
        device_classes=inv.device_classes,
        allocated=inv.allocated,
        consumed=inv.consumed,
        held=frozenset(inv.devices[i % len(inv.devices)].key for i in held),
        counters=inv.counters,
    )
    assert inv.busy() == reference_busy(inv)


def test_the_index_is_built_once_per_fleet_tuple() -> None:
    inv = fleets()[1]
    assert index_of(inv.devices) is index_of(inv.devices)
    copy = tuple(inv.devices)[:-1]
    assert index_of(copy) is not index_of(inv.devices)
    by_class = index_of(inv.devices).by_class
    assert sum(len(ds) for ds in by_class.values()) == sum(len(d.device_classes) for d in inv.devices)
