"""The planner's claims against the real scheduler: what the plan asks for is what DRA allocates.

The inventory is built from the live ResourceSlices, DeviceClasses and ResourceClaims; the plan's
request (device class, count, CEL selectors, capacity) is put into a ResourceClaim used by a pod,
and the real kube-scheduler allocates it. The allocation must be devices of the planned product
(and MIG profile, and shared memory), and the rebuilt inventory must no longer offer them.

Each case brings its own KWOK node, whose devices carry a product name no other test uses, and a
class selector that keeps the plan (and so the scheduler) on them: what other tests hold never
matters, so a refusal is a failure, never a reason to stop early.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.model_facts.facts import ModelFacts
from controller.planner import Inventory, PlanOutcome, build_inventory, plan_order
from devtools.cluster import fleet
from devtools.cluster.handle import Kubectl
from shared.api.inference_class import InferenceServiceClassSpec
from shared.quantity import parse_quantity
from testkit.planner import BGE_LARGE, BGE_RERANKER, LLAMA_8B, LLAMA_70B, make_class, make_request

pytestmark = pytest.mark.cluster

H100, A100_MIG, L4 = fleet.FLEET[0], fleet.FLEET[2], fleet.FLEET[3]
CASES: list[tuple[str, ModelFacts, dict[str, Any], fleet.NodeGroup]] = [
    ("exclusive", LLAMA_8B, {}, H100),
    ("tensor-parallel", LLAMA_70B, {}, H100),
    ("mig", BGE_LARGE, {"deviceClassNames": ["mig.nvidia.com"], "sharingModes": ["MIG"]}, A100_MIG),
    ("time-slicing", BGE_RERANKER, {"sharingModes": ["TimeSlicing"]}, L4),
]


@dataclasses.dataclass(frozen=True)
class OwnNode:
    name: str
    product: str

    def selector(self) -> str:
        return f'device.attributes["{fleet.DRIVER}"].productName == "{self.product}"'


@contextlib.contextmanager
def own_node(kubectl: Kubectl, label: str, group: fleet.NodeGroup) -> Iterator[OwnNode]:
    """A KWOK node of ``group``'s shape whose GPUs are named ``<product> (<node>)``; deleted after."""
    name = f"plan-{label}-{uuid.uuid4().hex[:5]}"
    gpu = dataclasses.replace(group.gpu, product=f"{group.gpu.product} ({name})")
    shaped = dataclasses.replace(group, gpu=gpu)
    objects = [fleet.node(name, shaped), fleet.resource_slice(name, shaped)]
    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    try:
        yield OwnNode(name, gpu.product)
    finally:
        kubectl("delete", "resourceslice", objects[1]["metadata"]["name"], "--ignore-not-found", check=False)
        kubectl("delete", "node", name, "--ignore-not-found", check=False)


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


@pytest.mark.parametrize(("label", "facts", "placement", "group"), CASES, ids=[c[0] for c in CASES])
def test_the_scheduler_allocates_what_the_plan_asked_for(
    label: str,
    facts: ModelFacts,
    placement: dict[str, Any],
    group: fleet.NodeGroup,
    kubectl: Kubectl,
    namespace: str,
    wait_for: Callable[..., Any],
) -> None:
    with own_node(kubectl, label, group) as node:
        spec = make_class(**placement, selector=node.selector())
        check_allocation(label, facts, spec, node, kubectl, namespace, wait_for)


def check_allocation(
    label: str,
    facts: ModelFacts,
    spec: InferenceServiceClassSpec,
    node: OwnNode,
    kubectl: Kubectl,
    namespace: str,
    wait_for: Callable[..., Any],
) -> None:
    inv = wait_for(
        lambda: live_inventory(kubectl),
        lambda i: any(d.node == node.name for d in i.devices),
        timeout=30,
        message=f"the devices of node {node.name} in the inventory",
    )
    outcome = plan_order(make_request(inv, facts, class_spec=spec))
    assert outcome.ok, f"{outcome.reason}: {outcome.message} (node {node.name} is the test's own)"
    plan = outcome.plan
    assert plan is not None
    assert plan.product_name == node.product
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
        assert device.product_name == plan.product_name and device.node == node.name
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
