"""The planner's entry point: ``plan_order(PlanRequest) -> PlanOutcome``. Pure and deterministic.

The checks run in this order, and the first failure is the answer (Planned=False with its reason):

1. PlacementUndecidable: the class's selector does not compile, a device class does not exist or
   its own selector fails, or the class's selector fails on a device.
2. NoCompatibleRuntimeAvailable: no recipe serves the endpoint type, format and architecture, or
   none knows the model's quantization method.
3. ResourceClaimExhausted: every allowed device class is in ``skip_device_classes``.
4. The search: device classes in the class's order, sharing modes in its order, smallest fit
   first. An unchanged plan stays on the devices the order already holds.
5. The diagnosis when the search is empty: QuantizationMismatch (no allowed device reaches the
   method's compute capability), NoAcceleratorWithEnoughMemory (none could hold it even on an
   empty cluster), else NoCapacity.

Resource estimates written to ``status.resolved`` (documented in docs/memory-estimate.md):
cpu = 2 + 2 per device; memory = 4 GiB + 2 GiB per device + a quarter of the weights, rounded up
to GiB; modelVolume = weight files x 1.1 + 1 GiB, rounded up to GiB.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from controller.facts import ModelFacts
from controller.planner.diagnose import diagnose
from controller.planner.estimate import MemoryEstimate, disk_bytes, estimate_memory
from controller.planner.inventory import Device, DeviceKey, Inventory
from controller.planner.placement import SHARED_MODES, Candidate, candidates, tensor_parallel_sizes
from controller.planner.recipes import RecipeChoice, model_recipes, ordered_recipes, quantization_method
from controller.planner.selectors import SelectorCache
from controller.planner.vllm import VllmLaunch, vllm_args
from shared import reasons
from shared.api.enums import EndpointType, PlacementMode, SharingMode
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.recipe import InferenceRecipe
from shared.cel import CelError, Selector, compile_selector
from shared.quantity import GIB, format_gib, to_quantity_gi

DEFAULT_MAX_ACCELERATORS = 8


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
    requires_token: bool = True


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


def plan_order(request: PlanRequest) -> PlanOutcome:
    spec, inv, facts = request.class_spec, request.inventory, request.facts
    placement = spec.placement

    selector: Selector | None = None
    if placement.selector:
        try:
            selector = compile_selector(placement.selector)
        except CelError as e:
            return _fail(
                reasons.PLACEMENT_UNDECIDABLE,
                f"`spec.placement.selector` of the class does not compile: {e}.",
            )
    for name in placement.device_class_names:
        if name not in inv.device_classes:
            return _fail(
                reasons.PLACEMENT_UNDECIDABLE, f"DeviceClass {name} named by the class does not exist."
            )
        if name in inv.device_class_errors:
            return _fail(reasons.PLACEMENT_UNDECIDABLE, inv.device_class_errors[name] + ".")

    recipes = ordered_recipes(request.recipes, spec.recipes)
    fitting = model_recipes(recipes, facts, request.endpoint_type)
    if not fitting:
        names = ", ".join(r.metadata.name for r in recipes) or "none"
        return _fail(
            reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE,
            f"no recipe of the class serves {request.endpoint_type} for a {facts.format} "
            f"{facts.architecture or 'model'} (recipes: {names}).",
        )
    method = quantization_method(facts)
    choices = [c for c in fitting if c.min_capability is not None]
    if not choices:
        return _fail(
            reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE,
            f"no recipe of the class knows the quantization {facts.quantization_label} "
            f"(recipes: {', '.join(c.name for c in fitting)}).",
        )

    allowed = [c for c in placement.device_class_names if c not in request.skip_device_classes]
    if not allowed:
        return _fail(
            reasons.RESOURCE_CLAIM_EXHAUSTED,
            "the scheduler could not allocate the claim on any allowed device class "
            f"({', '.join(placement.device_class_names)}).",
        )

    cache = SelectorCache()
    eligible: dict[str, list[Device]] = {c: [] for c in allowed}
    for d in inv.devices:
        classes = [c for c in allowed if c in d.device_classes]
        try:
            if not classes or (selector is not None and not cache.matches(selector, d.view)):
                continue
        except CelError as e:
            return _fail(
                reasons.PLACEMENT_UNDECIDABLE,
                f"`spec.placement.selector` of the class fails on {d.label}: {e}.",
            )
        for c in classes:
            eligible[c].append(d)

    estimate = estimate_memory(facts)
    modes = list(placement.sharing_modes or ["Exclusive"])
    max_devices = placement.max_accelerators_per_replica or DEFAULT_MAX_ACCELERATORS
    tp_sizes = tensor_parallel_sizes(max_devices, facts.num_attention_heads)

    kept = _keep_previous(request, eligible, estimate, choices, tp_sizes)
    if kept is not None:
        return kept

    busy = inv.busy()
    for device_class in allowed:
        for mode in modes:
            found = candidates(
                device_class=device_class,
                mode=mode,
                devices=eligible[device_class],
                inventory=inv,
                busy=busy,
                estimate=estimate,
                choices=choices,
                tp_sizes=tp_sizes,
            )
            if found:
                return _planned(request, found[0], estimate, method)
    if "Exclusive" in modes and (placement.max_nodes_per_replica or 1) > 1:
        from controller.planner.multinode_plan import plan_multinode  # it builds on this module

        spread = plan_multinode(request, eligible, estimate, choices, max_devices)
        if spread is not None:
            return spread
    reason, message = diagnose(
        facts=facts,
        eligible=eligible,
        modes=modes,
        estimate=estimate,
        choices=choices,
        tp_sizes=tp_sizes,
        method=method,
        holds_devices=bool(inv.held),
    )
    return _fail(reason, message)


def _keep_previous(
    request: PlanRequest,
    eligible: dict[str, list[Device]],
    estimate: MemoryEstimate,
    choices: Sequence[RecipeChoice],
    tp_sizes: Sequence[int],
) -> PlanOutcome | None:
    """The previous plan's hardware, on the devices the order holds, when it still fits and is allowed."""
    prev, inv = request.previous, request.inventory
    if prev is None or not inv.held or prev.device_class not in eligible:
        return None
    modes = request.class_spec.placement.sharing_modes or ["Exclusive"]
    if prev.sharing_mode not in modes:
        return None
    held = [
        d for d in eligible[prev.device_class] if d.key in inv.held and d.product_name == prev.product_name
    ]
    if not held:
        return None
    free_inv = Inventory(devices=tuple(held), device_classes=inv.device_classes)
    found = candidates(
        device_class=prev.device_class,
        mode=prev.sharing_mode,
        devices=held,
        inventory=free_inv,
        busy=frozenset(),
        estimate=estimate,
        choices=choices,
        tp_sizes=tp_sizes,
    )
    if not found:
        return None
    return _planned(request, found[0], estimate, quantization_method(request.facts))


def _planned(request: PlanRequest, cand: Candidate, estimate: MemoryEstimate, method: str) -> PlanOutcome:
    facts, recipe = request.facts, cand.recipe.recipe
    device = cand.first
    per_device = cand.memory_per_device
    context = facts.context_length or estimate.min_context
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
            requires_token=request.requires_token,
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
    weights_on_disk = disk_bytes(facts)
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
        model_volume=to_quantity_gi(math.ceil(weights_on_disk * 1.1) + GIB),
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
    parent = next((d for d in inv.devices if device.parent_uuid and d.uuid == device.parent_uuid), None)
    if parent is not None and parent.memory_bytes > 0:
        return max(1, min(100, round(device.memory_bytes * 100 / parent.memory_bytes)))
    m = re.match(r"^(\d+)g\.", device.profile or "")
    return max(1, min(100, round(int(m.group(1)) * 100 / 7))) if m else 100
