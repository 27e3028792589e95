"""What a plan is (``LaunchPlan``), what the planner is asked and answers (``PlanRequest``,
``PlanOutcome``), and how a chosen candidate becomes a plan (``planned``). Pure.

Resource estimates written to ``status.resolved`` (documented in docs/memory-estimate.md):
cpu = 2 + 2 per device; memory = 4 GiB + 2 GiB per device + a quarter of the weights, rounded up
to GiB; modelVolume = the files the fetcher downloads x 1.1 + 1 GiB, rounded up to GiB
(``controller.planner.volume``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from controller.model_facts.facts import ModelFacts
from controller.planner.estimate import MemoryEstimate
from controller.planner.fleet import FleetGroups
from controller.planner.inventory import Device, DeviceKey, Inventory
from controller.planner.placement import SHARED_MODES, Candidate
from controller.planner.vllm import VllmLaunch, vllm_args
from controller.planner.volume import volume_quantity
from shared import reasons
from shared.api.enums import EndpointType, PlacementMode, SharingMode
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.recipe import InferenceRecipe
from shared.quantity import GIB, format_gib, to_quantity_gi


class LaunchPlan(BaseModel):
    """The recipe compiled for the chosen hardware: what the renderer and ``status.resolved`` need."""

    model_config = ConfigDict(frozen=True)

    device_class: str
    product_name: str
    accelerator_memory_gib: int  # of one device, or of the share / MIG device
    accelerator_count: int
    placement_mode: PlacementMode
    sharing_mode: SharingMode
    share_percent: int
    device_selectors: list[str]
    capacity_requests: dict[str, str] | None = None
    recipe: str
    runtime: str
    image: str
    args: list[str]
    cpu: str
    memory: str
    model_volume: str
    max_model_len: int
    gpu_memory_utilization: float
    endpoint_type: EndpointType
    needs_bytes: int = Field(default=0, description="Estimated weights plus minimum KV cache of one replica.")
    node_count: int = Field(default=1, description="Nodes of the replica: above 1, a LeaderWorkerSet group.")

    @property
    def devices_per_pod(self) -> int:
        """The devices one pod claims: all of them, or one node's share of a multi-node replica."""
        return self.accelerator_count // max(1, self.node_count)

    def summary(self) -> str:
        """``1 x NVIDIA H100 80GB HBM3 (80 GiB, Exclusive) from gpu.nvidia.com with recipe vllm``."""
        share = f"{self.share_percent}% " if self.sharing_mode in SHARED_MODES else ""
        if self.node_count > 1:
            return (
                f"{self.node_count} nodes x {self.devices_per_pod} x {self.product_name} "
                f"({self.accelerator_memory_gib} GiB, {self.sharing_mode}; {self.accelerator_count} in total) "
                f"from {self.device_class} with recipe {self.recipe}"
            )
        return (
            f"{self.accelerator_count} x {self.product_name} ({share}{self.accelerator_memory_gib} GiB, "
            f"{self.sharing_mode}) from {self.device_class} with recipe {self.recipe}"
        )


class PlanRequest(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    facts: ModelFacts
    endpoint_type: EndpointType
    class_spec: InferenceServiceClassSpec
    recipes: list[InferenceRecipe]
    inventory: Inventory
    served_model_name: str
    skip_device_classes: tuple[str, ...] = ()
    previous: LaunchPlan | None = None


class PlanOutcome(BaseModel):
    """The answer for the Planned condition. ``allocation`` names the devices the plan counted on."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    reason: str
    message: str
    plan: LaunchPlan | None = None
    allocation: tuple[DeviceKey, ...] = ()
    shared_bytes: int | None = None  # TimeSlicing/MPS: memory consumed on each allocated device


def _fail(reason: str, message: str) -> PlanOutcome:
    return PlanOutcome(ok=False, reason=reason, message=message)


PlanRequest.model_rebuild(_types_namespace={"FleetGroups": FleetGroups})


def fail(reason: str, message: str) -> PlanOutcome:
    return PlanOutcome(ok=False, reason=reason, message=message)


def planned(request: PlanRequest, cand: Candidate, estimate: MemoryEstimate, method: str) -> PlanOutcome:
    """The plan and outcome for the chosen candidate."""
    facts, recipe = request.facts, cand.recipe.recipe
    device = cand.first
    per_device = cand.memory_per_device
    context = facts.serving_context or estimate.min_context
    util_arg = cand.utilization
    if cand.sharing_mode in SHARED_MODES:
        util_arg = round(cand.utilization * cand.share_percent / 100, 4)
    max_len = estimate.max_model_len(
        device_bytes=per_device, devices=cand.count, utilization=cand.utilization, context_length=context
    )
    cap = device.compute_capability
    args = vllm_args(
        VllmLaunch(
            facts=facts,
            endpoint_type=request.endpoint_type,
            served_model_name=request.served_model_name,
            tensor_parallel_size=cand.count,
            max_model_len=max_len,
            gpu_memory_utilization=util_arg,
            quantization=method,
            compute_capability=(cap.major, cap.minor) if cap else None,
            extra_args=tuple(recipe.spec.extra_args or ()),
        )
    )
    selectors = [f"device.attributes[{_q(device.key[0])}].productName == {_q(device.product_name)}"]
    if cand.sharing_mode == "MIG" and device.profile:
        selectors.append(f"device.attributes[{_q(device.key[0])}].profile == {_q(device.profile)}")
    if request.class_spec.placement.selector:
        selectors.append(request.class_spec.placement.selector)
    share_percent = cand.share_percent
    if cand.sharing_mode == "MIG":
        share_percent = _mig_share(request.inventory, device)
    plan = LaunchPlan(
        device_class=cand.device_class,
        product_name=device.product_name,
        accelerator_memory_gib=per_device // GIB,
        accelerator_count=cand.count,
        placement_mode="TensorParallel" if cand.count > 1 else "SingleDevice",
        sharing_mode=cand.sharing_mode,
        share_percent=share_percent,
        device_selectors=selectors,
        capacity_requests={"memory": f"{per_device // 2**20}Mi"} if cand.share_bytes is not None else None,
        recipe=cand.recipe.name,
        runtime=recipe.spec.runtime,
        image=recipe.spec.image,
        args=args,
        cpu=str(2 + 2 * cand.count),
        memory=to_quantity_gi(4 * GIB + 2 * GIB * cand.count + estimate.weights // 4),
        model_volume=volume_quantity(facts),
        max_model_len=max_len,
        gpu_memory_utilization=util_arg,
        endpoint_type=request.endpoint_type,
        needs_bytes=estimate.weights + estimate.kv_cache,
    )
    need = estimate.per_device_need(cand.count, cand.utilization)
    return PlanOutcome(
        ok=True,
        reason=reasons.PLANNED_OK,
        message=f"planned {plan.summary()}: needs {format_gib(need)} per device, "
        f"max model length {max_len} tokens.",
        plan=plan,
        allocation=cand.keys,
        shared_bytes=cand.share_bytes,
    )


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _mig_share(inv: Inventory, device: Device) -> int:
    """The MIG device's share of its GPU: by memory when the parent is published, else by the
    profile's compute slices (``3g.20gb`` is 3 of the 7 slices of an A100 or H100)."""
    parent = _first_with_uuid(inv, device.parent_uuid) if device.parent_uuid else None
    if parent is not None and parent.memory_bytes > 0:
        return max(1, min(100, round(device.memory_bytes * 100 / parent.memory_bytes)))
    m = re.match(r"^(\d+)g\.", device.profile or "")
    return max(1, min(100, round(int(m.group(1)) * 100 / 7))) if m else 100


def _first_with_uuid(inv: Inventory, uuid: str) -> Device | None:
    """The first device of the inventory with that uuid, through its index."""
    keys = set(inv.device_index().by_uuid.get(uuid, ()))
    if len(keys) <= 1:
        return inv.device_index().by_key.get(next(iter(keys))) if keys else None
    return next((d for d in inv.devices if d.uuid == uuid), None)
