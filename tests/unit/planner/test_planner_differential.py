"""The group search answers exactly what the device-by-device planner answered.

``tests/unit/planner/oracle.py`` is the planner before the group search, copied verbatim. On
random fleets (products, memories, compute capabilities, MIG devices, shareable devices with and
without a sharing strategy, two pools on one node with the same device names, overlapping device
classes), random allocations (whole, shared, held by the order), random models and random classes
(device classes, sharing modes, tensor-parallel limits, selectors, some that fail on a device),
``plan_order`` gives the same ``PlanOutcome`` (reason, message, plan, allocation, share) as the
oracle, on an inventory from ``build_inventory`` and on the view of a ledger fed the same objects
as events in random order, some slices published twice or deleted and published again.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from controller.model_facts.facts import ModelFacts
from controller.planner import Inventory, build_inventory, plan_order
from controller.planner.ledger import Ledger
from shared.api.inference_class import InferenceServiceClassSpec
from shared.cel import CelError, compile_selector, device_view
from testkit.planner import (
    BGE_LARGE,
    DRIVER,
    LLAMA_8B,
    LLAMA_70B,
    LLAMA_405B,
    QWEN3_8B_FP8,
    QWEN_32B_AWQ,
    make_claim,
    make_recipe,
    make_request,
)
from tests.unit.planner.oracle import reference_plan_order

Obj = dict[str, Any]
OTHER_DRIVER = "gpu.example.com"
MODELS: list[ModelFacts] = [QWEN_32B_AWQ, LLAMA_8B, LLAMA_70B, BGE_LARGE, QWEN3_8B_FP8, LLAMA_405B]
PRODUCTS = ["NVIDIA H100", "NVIDIA A100", "NVIDIA L4"]
MEMORIES = ["24Gi", "40Gi", "80Gi", "1000", "0"]
CAPABILITIES = ["9.0.0", "8.9.0", "8.0.0", "7.0.0", "0.0.0", None]
SELECTORS = [
    None,
    f'device.attributes["{DRIVER}"].productName.matches("H100|A100")',
    f'device.attributes["{DRIVER}"].index < 3',  # fails on devices without an index (MIG here)
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("30Gi")) >= 0',
]


def device_class(name: str, expression: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


CLASSES = [
    device_class(
        "gpu.nvidia.com", f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu'"
    ),
    device_class(
        "mig.nvidia.com", f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'mig'"
    ),
    device_class("any.nvidia.com", f"device.driver == '{DRIVER}'"),
    device_class(OTHER_DRIVER, f"device.driver == '{OTHER_DRIVER}'"),  # MPS is offered on its devices
]


@st.composite
def whole_device(draw: st.DrawFn, name: str, uuid: str) -> Obj:
    attributes: dict[str, Any] = {
        "type": {"string": "gpu"},
        "uuid": {"string": uuid},
        "productName": {"string": draw(st.sampled_from(PRODUCTS))},
        "index": {"int": draw(st.integers(0, 5))},
    }
    cap = draw(st.sampled_from(CAPABILITIES))
    if cap is not None:
        attributes["cudaComputeCapability"] = {"version": cap}
    device: Obj = {
        "name": name,
        "attributes": attributes,
        "capacity": {"memory": {"value": draw(st.sampled_from(MEMORIES))}},
    }
    if draw(st.integers(0, 3)) == 0:
        device["allowMultipleAllocations"] = True
        strategy = draw(st.sampled_from([None, "TimeSlicing", "mps"]))
        if strategy is not None:
            attributes["sharingStrategy"] = {"string": strategy}
    return device


@st.composite
def mig_devices(draw: st.DrawFn, parent: str, prefix: str) -> list[Obj]:
    out = []
    for j in range(draw(st.integers(1, 3))):
        profile, memory = draw(st.sampled_from([("3g.20gb", "20Gi"), ("1g.5gb", "5Gi"), ("7g.40gb", "40Gi")]))
        out.append(
            {
                "name": f"{prefix}-mig-{j}",
                "attributes": {
                    "type": {"string": "mig"},
                    "uuid": {"string": f"MIG-{prefix}-{j}"},
                    "parentUUID": {"string": parent},
                    "profile": {"string": profile},
                    "productName": {"string": "NVIDIA A100"},
                    "cudaComputeCapability": {"version": draw(st.sampled_from(["8.0.0", "7.0.0"]))},
                },
                "capacity": {"memory": {"value": memory}},
            }
        )
    return out


@st.composite
def fleets(draw: st.DrawFn) -> list[Obj]:
    slices = []
    for n in range(draw(st.integers(1, 6))):
        node = f"node-{draw(st.integers(0, 9))}{n}"
        for pool in [node, f"{node}-extra"][: draw(st.integers(1, 2))]:
            devices: list[Obj] = []
            for i in range(draw(st.integers(0, 5))):
                uuid = f"GPU-{pool}-{i}"
                if draw(st.integers(0, 4)) == 0:
                    devices.extend(draw(mig_devices(uuid, f"gpu-{i}")))
                else:
                    devices.append(draw(whole_device(f"gpu-{i}", uuid)))
            driver = draw(st.sampled_from([DRIVER, DRIVER, OTHER_DRIVER]))
            slices.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{pool}-slice"},
                    "spec": {"driver": driver, "nodeName": node, "pool": {"name": pool}, "devices": devices},
                }
            )
    return slices


@st.composite
def claims(draw: st.DrawFn, slices: list[Obj]) -> list[Obj]:
    keys = [
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"], bool(d.get("allowMultipleAllocations")))
        for s in slices
        for d in s["spec"]["devices"]
    ]
    out = []
    for i, (driver, pool, name, shared) in enumerate(keys):
        pick = draw(st.integers(0, 4))
        if pick == 0:
            out.append(make_claim(f"other-{i}", "ns", [(driver, pool, name)]))
        elif pick == 1:
            out.append(make_claim(f"order-{i}", "ns", [(driver, pool, name)]))  # held by the order
        elif pick == 2 and shared:
            memory = draw(st.sampled_from(["4Gi", "12Gi", "30Gi"]))
            out.append(
                make_claim(f"share-{i}", "ns", [(driver, pool, name)], consumedCapacity={"memory": memory})
            )
    return out


@st.composite
def class_specs(draw: st.DrawFn) -> InferenceServiceClassSpec:
    names = draw(
        st.lists(
            st.sampled_from([c["metadata"]["name"] for c in CLASSES]), min_size=1, max_size=3, unique=True
        )
    )
    modes = draw(
        st.lists(
            st.sampled_from(["Exclusive", "MIG", "TimeSlicing", "MPS"]), min_size=1, max_size=4, unique=True
        )
    )
    placement: dict[str, Any] = {"deviceClassNames": names, "sharingModes": modes}
    most = draw(st.sampled_from([None, 1, 2, 4, 8, 16]))
    if most is not None:
        placement["maxAcceleratorsPerReplica"] = most
    selector = draw(st.sampled_from([None, None, *SELECTORS]))
    if selector is not None:
        placement["selector"] = selector
    return InferenceServiceClassSpec.model_validate(
        {"modelPolicy": {"allowedEndpointTypes": ["Chat", "Embeddings", "Rerank"]}, "placement": placement}
    )


def _warm() -> None:
    """celpy builds its parser on first use and moves the recursion limit: not inside hypothesis."""
    view = device_view(DRIVER, {"name": "x", "attributes": {"index": {"int": 1}}})
    for selector in SELECTORS:
        if selector is not None:
            with contextlib.suppress(CelError):
                compile_selector(selector).matches(view)


_warm()

RECIPES = [
    [make_recipe()],
    [
        make_recipe(
            "old",
            quantizations=[
                {"method": "none", "minComputeCapability": "8.0"},
                {"method": "awq", "minComputeCapability": "9.0"},
            ],
            gpuMemoryUtilization=0.8,
        ),
        make_recipe(),
    ],
    [make_recipe("fp8only", quantizations=[{"method": "fp8", "minComputeCapability": "9.0"}])],
]


def check(
    inv: Inventory, facts: ModelFacts, spec: InferenceServiceClassSpec, recipes: int, skip: tuple[str, ...]
) -> None:
    request = make_request(inv, facts, class_spec=spec, recipes=RECIPES[recipes], skip_device_classes=skip)
    expected = reference_plan_order(request)
    event(expected.reason)
    assert plan_order(request) == expected
    if expected.ok and expected.plan is not None:  # the order again, holding what it was planned
        again = make_request(inv, facts, class_spec=spec, recipes=RECIPES[recipes], previous=expected.plan)
        assert plan_order(again) == reference_plan_order(again)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(st.data())
def test_the_group_search_plans_exactly_as_the_device_search(data: st.DataObject) -> None:
    slices = data.draw(fleets())
    taken = data.draw(claims(slices))
    inv = build_inventory(
        resource_slices=slices,
        device_classes=CLASSES,
        resource_claims=taken,
        own_claim_prefix="order-",
        namespace="ns",
    )
    assert isinstance(inv, Inventory), inv
    for _ in range(3):
        facts = data.draw(st.sampled_from(MODELS))
        spec = data.draw(class_specs())
        skip = tuple(data.draw(st.lists(st.sampled_from(["gpu.nvidia.com", "mig.nvidia.com"]), max_size=1)))
        check(inv, facts, spec, data.draw(st.sampled_from([0, 0, 0, 1, 1, 2])), skip)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(st.data())
def test_the_ledgers_groups_follow_its_events_and_plan_as_the_device_search(data: st.DataObject) -> None:
    slices = data.draw(fleets())
    taken = data.draw(claims(slices))
    ledger = Ledger()
    for dc in (CLASSES[0], CLASSES[1], CLASSES[3]):
        ledger.on_device_class(dc)
    events = data.draw(st.permutations(slices))
    spec = data.draw(class_specs())
    for i, rs in enumerate(events):
        ledger.on_slice(rs)
        if i % 2:  # a slice seen twice, or deleted and seen again, after a plan has built views
            ledger.view(("ns", "order")) and plan_order(
                make_request(ledger.view(("ns", "order")), LLAMA_8B, class_spec=spec)
            )
            ledger.on_slice(rs, deleted=data.draw(st.booleans()))
            ledger.on_slice(rs)
    if data.draw(st.booleans()):
        ledger.on_device_class(CLASSES[2])  # every device reclassified
    for claim in taken:
        ledger.on_claim(claim)
    own = [c["metadata"]["name"] for c in taken if c["metadata"]["name"].startswith("order-")]
    inv = ledger.view(("ns", "order"), own)
    for _ in range(3):
        facts = data.draw(st.sampled_from(MODELS))
        check(inv, facts, spec, data.draw(st.sampled_from([0, 0, 0, 1, 1, 2])), ())
        spec = data.draw(class_specs())
