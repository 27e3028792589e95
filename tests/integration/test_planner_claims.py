"""The planner's claims against the real scheduler: what the plan asks for is what DRA allocates.

The inventory is built from the live ResourceSlices, DeviceClasses and ResourceClaims; the plan's
request (device class, count, CEL selectors, capacity) is put into a ResourceClaim used by a pod,
and the real kube-scheduler allocates it. The allocation must be devices of the planned product
(and MIG profile, and shared memory), and the rebuilt inventory must no longer offer them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from controller.facts import ModelFacts
from controller.planner import Inventory, PlanOutcome, build_inventory, plan_order
from devtools.cluster.handle import Kubectl
from shared.api.inference_class import InferenceServiceClassSpec
from shared.quantity import parse_quantity
from testkit.planner import BGE_LARGE, BGE_RERANKER, LLAMA_8B, LLAMA_70B, make_class, make_request

pytestmark = pytest.mark.cluster

CASES: list[tuple[str, ModelFacts, InferenceServiceClassSpec]] = [
    ("exclusive", LLAMA_8B, make_class()),
    ("tensor-parallel", LLAMA_70B, make_class()),
    ("mig", BGE_LARGE, make_class(deviceClassNames=["mig.nvidia.com"], sharingModes=["MIG"])),
    ("time-slicing", BGE_RERANKER, make_class(sharingModes=["TimeSlicing"])),
]


def live_inventory(kubectl: Kubectl) -> Inventory:
    def items(kind: str) -> list[dict[str, Any]]:
        out = json.loads(kubectl("get", kind, "-A", "-o", "json").stdout)["items"]
        return list(out)

    inv = build_inventory(
        resource_slices=items("resourceslices"),
        device_classes=items("deviceclasses"),
        resource_claims=items("resourceclaims"),
    )
    assert isinstance(inv, Inventory), inv
    return inv


def claim_and_pod(name: str, namespace: str, outcome: PlanOutcome) -> list[dict[str, Any]]:
    plan = outcome.plan
    assert plan is not None
    exactly: dict[str, Any] = {
        "deviceClassName": plan.device_class,
        "allocationMode": "ExactCount",
        "count": plan.accelerator_count,
        "selectors": [{"cel": {"expression": e}} for e in plan.device_selectors],
    }
    if plan.capacity_requests:
        exactly["capacity"] = {"requests": dict(plan.capacity_requests)}
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [
                {
                    "name": "runtime",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
        },
    }
    return [claim, pod]


@pytest.mark.parametrize(("label", "facts", "spec"), CASES, ids=[c[0] for c in CASES])
def test_the_scheduler_allocates_what_the_plan_asked_for(
    label: str,
    facts: ModelFacts,
    spec: InferenceServiceClassSpec,
    kubectl: Kubectl,
    namespace: str,
    wait_for: Callable[..., Any],
) -> None:
    inv = live_inventory(kubectl)
    outcome = plan_order(make_request(inv, facts, class_spec=spec))
    if not outcome.ok:  # other tests hold the devices right now: the refusal must say so
        assert outcome.reason == "NoCapacity", outcome.message
        return
    plan = outcome.plan
    assert plan is not None
    objects = claim_and_pod(f"plan-{label}", namespace, outcome)
    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))

    def claim() -> dict[str, Any]:
        res = kubectl("get", "resourceclaim", f"plan-{label}", "-n", namespace, "-o", "json")
        return dict(json.loads(res.stdout))

    allocated = wait_for(
        claim,
        lambda c: bool(((c.get("status") or {}).get("allocation") or {}).get("devices")),
        timeout=60,
        message=f"the scheduler to allocate the claim for {plan.summary()}",
    )
    results = allocated["status"]["allocation"]["devices"]["results"]
    assert len(results) == plan.accelerator_count
    by_key = {d.key: d for d in inv.devices}
    for r in results:
        device = by_key[(r["driver"], r["pool"], r["device"])]
        assert device.product_name == plan.product_name
        assert plan.device_class in device.device_classes
        if plan.sharing_mode == "MIG":
            assert plan.device_selectors[1].endswith(f'"{device.profile}"')
        if plan.capacity_requests:
            assert parse_quantity(r["consumedCapacity"]["memory"]) == parse_quantity(
                plan.capacity_requests["memory"]
            )

    after = live_inventory(kubectl)
    taken = {(r["driver"], r["pool"], r["device"]) for r in results}
    if plan.capacity_requests:
        assert all(
            after.consumed.get(k, 0) >= parse_quantity(plan.capacity_requests["memory"]) for k in taken
        )
    else:
        assert taken <= after.busy()
