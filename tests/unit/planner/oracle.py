"""The planner as it was before the group search (commit efc808e): the oracle of the differential test.

The search and the diagnosis are the device-by-device planner of that commit. Everything they
lean on, the memory estimate, the recipe matching, the sharing-mode rules, the model volume and
vLLM's arguments, is the oracle's own (``oracle_model``, written from docs/memory-estimate.md,
docs/admin-guide.md and spec api.md, with the published figures it names): it imports no planner
code but the data types it answers in (Device, Inventory, LaunchPlan, PlanOutcome, PlanRequest).
Do not optimise.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from controller.model_facts.facts import ModelFacts
from controller.planner.inventory import Device, DeviceKey, Inventory
from controller.planner.launch import LaunchPlan, PlanOutcome, PlanRequest
from shared import reasons
from shared.cel import CelError, Selector, Semver, compile_selector
from shared.quantity import GIB, format_gib, to_quantity_gi
from tests.unit.planner.oracle_model import (
    MIB,
    Fit,
    OracleEstimate,
    fits,
    in_preference,
    method_of,
    model_volume,
    vllm_serve_args,
)

DEFAULT_MAX_ACCELERATORS = 8  # spec api.md: maxAcceleratorsPerReplica, 8 when unset
SHARED_MODES = ("TimeSlicing", "MPS")
NVIDIA_DRIVER = "gpu.nvidia.com"


def _fail(reason: str, message: str) -> PlanOutcome:
    return PlanOutcome(ok=False, reason=reason, message=message)


@dataclass(frozen=True)
class Candidate:
    """Devices one replica would take, with the recipe that runs on them."""

    device_class: str
    sharing_mode: str
    devices: tuple[Device, ...]
    recipe: Fit
    utilization: float
    share_bytes: int | None = None
    share_percent: int = 100

    @property
    def count(self) -> int:
        return len(self.devices)

    @property
    def first(self) -> Device:
        return self.devices[0]

    @property
    def memory_per_device(self) -> int:
        return self.share_bytes if self.share_bytes is not None else self.first.memory_bytes

    @property
    def keys(self) -> tuple[DeviceKey, ...]:
        return tuple(d.key for d in self.devices)

    def sort_key(self) -> tuple[int, int, str, str, tuple[str, ...]]:
        """The least memory taken from the cluster first, then fewer devices, product, node, names."""
        return (
            self.memory_per_device * self.count,
            self.count,
            self.first.product_name,
            self.first.node,
            tuple(d.name for d in self.devices),
        )


def tensor_parallel_sizes(most: int, heads: int | None) -> list[int]:
    """1, then the powers of two up to ``most`` that divide the attention heads (unknown heads: 1)."""
    return [1] + [n for n in (2**k for k in range(1, 12)) if n <= most and heads and heads % n == 0]


def mode_accepts(mode: str, device: Device) -> bool:
    """MIG takes MIG devices only; the others whole devices; TimeSlicing and MPS only a device that
    allows several allocations, whose ``sharingStrategy`` (if any) names the mode; never MPS on the
    NVIDIA DRA driver's devices."""
    if mode == "MIG" or device.kind == "mig":
        return mode == "MIG" and device.kind == "mig"
    if mode == "Exclusive":
        return True
    if mode == "MPS" and device.key[0] == NVIDIA_DRIVER:
        return False
    strategy = device.view.attributes.get(device.key[0], {}).get("sharingStrategy")
    return device.multiple_allocations and (not isinstance(strategy, str) or strategy.lower() == mode.lower())


def available(device: Device, mode: str, inventory: Inventory | None, busy: frozenset[DeviceKey]) -> bool:
    """Free, or for a share: on a device other claims only partly consumed."""
    if inventory is None or device.key not in busy:
        return True
    return mode in SHARED_MODES and inventory.consumed.get(device.key, 0) > 0


def reference_plan_order(request: PlanRequest) -> PlanOutcome:
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

    recipes = in_preference(request.recipes, spec.recipes)
    fitting = fits(recipes, facts, request.endpoint_type)
    if not fitting:
        names = ", ".join(r.metadata.name for r in recipes) or "none"
        return _fail(
            reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE,
            f"no recipe of the class serves {request.endpoint_type} for a {facts.format} "
            f"{facts.architecture or 'model'} (recipes: {names}).",
        )
    method = method_of(facts)
    choices = [c for c in fitting if c.least is not None]
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

    eligible: dict[str, list[Device]] = {c: [] for c in allowed}
    for d in inv.devices:
        classes = [c for c in allowed if c in d.device_classes]
        try:
            if not classes or (selector is not None and not selector.matches(d.view)):
                continue
        except CelError as e:
            return _fail(
                reasons.PLACEMENT_UNDECIDABLE,
                f"`spec.placement.selector` of the class fails on {d.label}: {e}.",
            )
        for c in classes:
            eligible[c].append(d)

    estimate = OracleEstimate.of(facts)
    modes = list(placement.sharing_modes or ["Exclusive"])
    max_devices = placement.max_accelerators_per_replica or DEFAULT_MAX_ACCELERATORS
    tp_sizes = tensor_parallel_sizes(max_devices, facts.num_attention_heads)

    kept = _keep_previous(request, eligible, estimate, choices, tp_sizes)
    if kept is not None:
        return kept

    busy = inv.busy()
    for device_class in allowed:
        for mode in modes:
            found = reference_candidates(
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
    reason, message = reference_diagnose(
        facts=facts,
        eligible=eligible,
        modes=modes,
        estimate=estimate,
        choices=choices,
        tp_sizes=tp_sizes,
        method=method,
        holds_devices=bool(inv.held),
    )
    # Added after the copy, with plan.py: a fallback never ends on a terminal reason (not a search matter).
    skipped = [c for c in placement.device_class_names if c in request.skip_device_classes]
    if skipped and reason != reasons.NO_CAPACITY:
        return _fail(
            reasons.RESOURCE_CLAIM_EXHAUSTED,
            f"the scheduler could not allocate the claim on {', '.join(skipped)}, and the other allowed "
            f"classes cannot hold the model: {message}",
        )
    return _fail(reason, message)


def _keep_previous(
    request: PlanRequest,
    eligible: dict[str, list[Device]],
    estimate: OracleEstimate,
    choices: Sequence[Fit],
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
    found = reference_candidates(
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
    return _planned(request, found[0], estimate, method_of(request.facts))


def reference_candidates(
    *,
    device_class: str,
    mode: str,
    devices: Iterable[Device],
    inventory: Inventory | None,
    busy: frozenset[DeviceKey],
    estimate: OracleEstimate,
    choices: Sequence[Fit],
    tp_sizes: Sequence[int],
) -> list[Candidate]:
    """Every fitting candidate, sorted; ``inventory=None`` means on an empty cluster."""
    out: list[Candidate] = []
    by_capability: dict[Semver | None, Fit | None] = {}

    def recipe_for(device: Device) -> Fit | None:
        cap = device.compute_capability
        if cap not in by_capability:
            by_capability[cap] = next((c for c in choices if c.runs_on(cap)), None)
        return by_capability[cap]

    usable = [d for d in devices if mode_accepts(mode, d) and available(d, mode, inventory, busy)]
    if mode == "Exclusive":
        groups: dict[tuple[str, str, int, Semver | None], list[Device]] = defaultdict(list)
        for d in usable:
            groups[(d.node, d.product_name, d.memory_bytes, d.compute_capability)].append(d)
        for group in groups.values():
            choice = recipe_for(group[0])
            if choice is None:
                continue
            util = choice.utilization
            for n in tp_sizes:
                if n > len(group):
                    break
                if estimate.need(n, util) <= group[0].memory_bytes:
                    chosen = tuple(sorted(group, key=lambda d: d.name)[:n])
                    out.append(Candidate(device_class, mode, chosen, choice, util))
                    break
    elif mode == "MIG":
        for d in usable:
            choice = recipe_for(d)
            if choice is not None and estimate.need(1, choice.utilization) <= d.memory_bytes:
                out.append(Candidate(device_class, mode, (d,), choice, choice.utilization))
    else:
        for d in usable:
            choice = recipe_for(d)
            if choice is None or d.memory_bytes <= 0:
                continue
            util = choice.utilization
            need = estimate.need(1, util)
            percent = max(1, math.ceil(need * 100 / d.memory_bytes))
            share = math.ceil(d.memory_bytes * percent / 100 / MIB) * MIB
            free = d.memory_bytes if inventory is None else inventory.free_memory(d)
            if percent <= 100 and share <= free:
                out.append(Candidate(device_class, mode, (d,), choice, util, share, percent))
    out.sort(key=Candidate.sort_key)
    return out


def reference_diagnose(
    *,
    facts: ModelFacts,
    eligible: dict[str, list[Device]],
    modes: Sequence[str],
    estimate: OracleEstimate,
    choices: Sequence[Fit],
    tp_sizes: Sequence[int],
    method: str,
    holds_devices: bool,
) -> tuple[str, str]:
    """The reason and message for an empty search over the ``eligible`` devices of each class."""
    devices = sorted({d.key: d for ds in eligible.values() for d in ds}.values(), key=lambda d: d.key)
    util = max(c.utilization for c in choices)
    need = estimate.need(1, util)
    if not devices:
        return (
            reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
            f"needs {format_gib(need)} per replica; no device of {', '.join(eligible)} matches the class's "
            "placement.",
        )
    capable = [d for d in devices if any(c.runs_on(d.compute_capability) for c in choices)]
    if not capable:
        least = min(c.least for c in choices if c.least is not None)
        best = max(devices, key=lambda d: (d.compute_capability or Semver(0, 0, 0), d.product_name))
        cap = best.compute_capability
        reach = f"{cap.major}.{cap.minor}" if cap else "an unknown capability"
        return (
            reasons.QUANTIZATION_MISMATCH,
            f"{facts.name} needs compute capability {least.major}.{least.minor} or more for {method}; "
            f"the allowed devices reach at most {reach} ({best.product_name}).",
        )
    capable_keys = {d.key for d in capable}
    ever: list[Candidate] = []
    for device_class, ds in eligible.items():
        for mode in modes:
            ever += reference_candidates(
                device_class=device_class,
                mode=mode,
                devices=[d for d in ds if d.key in capable_keys],
                inventory=None,
                busy=frozenset(),
                estimate=estimate,
                choices=choices,
                tp_sizes=tp_sizes,
            )
    if not ever:
        largest = max(capable, key=lambda d: (d.memory_bytes, d.product_name))
        per_node: dict[str, int] = {}
        for d in capable:
            if d.product_name == largest.product_name and d.kind != "mig":
                per_node[d.node] = per_node.get(d.node, 0) + 1
        most = max((n for n in tp_sizes if n <= max(per_node.values(), default=1)), default=1)
        tp = f" (up to {most} on one node: {most * largest.memory_bytes // GIB} GiB)" if most > 1 else ""
        return (
            reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
            f"needs {format_gib(need)} per replica; largest allowed device is {largest.product_name} with "
            f"{largest.memory_bytes // GIB} GiB{tp}.",
        )
    smallest = min(ever, key=Candidate.sort_key)
    beyond = " beyond the place this order already holds" if holds_devices else ""
    return (
        reasons.NO_CAPACITY,
        f"needs {format_gib(need)} per replica; {smallest.count} x {smallest.first.product_name} "
        f"({smallest.sharing_mode}) would hold it, but no such device is free now{beyond}.",
    )


def _planned(request: PlanRequest, cand: Candidate, estimate: OracleEstimate, method: str) -> PlanOutcome:
    facts, recipe = request.facts, cand.recipe.recipe
    device = cand.first
    per_device = cand.memory_per_device
    context = facts.context_length or estimate.context
    util_arg = cand.utilization
    if cand.sharing_mode in SHARED_MODES:
        util_arg = round(cand.utilization * cand.share_percent / 100, 4)
    max_len = estimate.max_len(per_device, cand.count, cand.utilization, context)
    args = vllm_serve_args(
        facts,
        endpoint_type=request.endpoint_type,
        served_name=request.served_model_name,
        tensor_parallel=cand.count,
        max_len=max_len,
        utilization=util_arg,
        extra=recipe.spec.extra_args or (),
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
        model_volume=model_volume(facts),
        max_model_len=max_len,
        gpu_memory_utilization=util_arg,
        endpoint_type=request.endpoint_type,
        needs_bytes=estimate.weights + estimate.kv_cache,
    )
    need = estimate.need(cand.count, cand.utilization)
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
