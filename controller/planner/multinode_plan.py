"""The multi-node plan (``controller.planner.multinode`` finds the layout), or why there is none. Pure.

- A LaunchPlan with ``placementMode: MultiNode``, ``nodeCount`` and the total ``acceleratorCount``:
  vLLM's args with ``--tensor-parallel-size <devices per node>`` and ``--pipeline-parallel-size
  <nodes>`` on Ray; cpu and memory are those of each pod (a node's share), the model volume that of
  each pod (every pod fetches the checkpoint).
- NoCapacity when enough nodes of the product exist but not enough are free; otherwise
  NoAcceleratorWithEnoughMemory, naming how many nodes the model would need and how many exist.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from controller.planner.estimate import MemoryEstimate, disk_bytes
from controller.planner.groups import ClassGroups
from controller.planner.inventory import Device, DeviceKey
from controller.planner.launch import LaunchPlan, PlanOutcome, PlanRequest
from controller.planner.multinode import Spread, max_model_len, per_device_need, spreads, stage_fraction
from controller.planner.placement import candidates, mode_accepts, tensor_parallel_sizes, utilization
from controller.planner.recipes import RecipeChoice, quantization_method, runs_on
from controller.planner.vllm import VllmLaunch, vllm_args
from shared import reasons
from shared.quantity import GIB, format_gib, to_quantity_gi

MAX_NODES_LOOKED_AT = 64  # how far the diagnosis counts the nodes a model would need


def plan_multinode(
    request: PlanRequest,
    groups: Mapping[str, ClassGroups],
    estimate: MemoryEstimate,
    choices: Sequence[RecipeChoice],
    max_devices: int,
) -> PlanOutcome | None:
    """The multi-node plan, or why there is none; None when one node could hold the replica (or no
    allowed device runs the model), so the single-node diagnosis stands."""
    facts, inv = request.facts, request.inventory
    eligible = {c: [d for d, _ in sorted(g.members.values(), key=lambda m: m[1])] for c, g in groups.items()}
    max_nodes = request.class_spec.placement.max_nodes_per_replica or 1
    tp_sizes = tensor_parallel_sizes(max_devices, facts.num_attention_heads)
    capable = {
        c: [d for d in ds if any(runs_on(x, d.compute_capability) for x in choices)]
        for c, ds in eligible.items()
    }
    if not any(mode_accepts("Exclusive", d) for ds in capable.values() for d in ds):
        return None  # no whole device runs the model: the single-node diagnosis says why
    for c, ds in capable.items():
        one_node = candidates(
            device_class=c,
            mode="Exclusive",
            devices=ds,
            inventory=None,
            busy=frozenset(),
            estimate=estimate,
            choices=choices,
            tp_sizes=tp_sizes,
        )
        if one_node:
            return None
    layers = facts.num_hidden_layers

    def search(devices: Mapping[str, Sequence[Device]], busy: frozenset[DeviceKey] | None) -> list[Spread]:
        found: list[Spread] = []
        for c, ds in devices.items():
            found = spreads(
                device_class=c,
                devices=ds,
                busy=busy,
                estimate=estimate,
                choices=choices,
                tp_sizes=tp_sizes,
                max_nodes=max_nodes,
                layers=layers,
            )
            if found:
                break
        return found

    prev = request.previous
    if prev is not None and prev.node_count > 1 and inv.held and prev.device_class in capable:
        held = [
            d for d in capable[prev.device_class] if d.key in inv.held and d.product_name == prev.product_name
        ]
        kept = search({prev.device_class: held}, frozenset())
        if kept:
            return planned_spread(request, kept[0], estimate)
    found = search(capable, inv.busy())
    if found:
        return planned_spread(request, found[0], estimate)
    return _diagnose(capable, estimate, choices, tp_sizes, max_nodes, layers, search)


def _diagnose(
    capable: Mapping[str, list[Device]],
    estimate: MemoryEstimate,
    choices: Sequence[RecipeChoice],
    tp_sizes: Sequence[int],
    max_nodes: int,
    layers: int | None,
    search: Callable[[Mapping[str, Sequence[Device]], frozenset[DeviceKey] | None], list[Spread]],
) -> PlanOutcome:
    """NoCapacity when the nodes exist but are not free; else how many nodes it would take."""
    util = max(utilization(c) for c in choices)
    need = estimate.per_device_need(1, util)
    ever = search(capable, None)
    if ever:
        s = ever[0]
        exist = _hosts(capable, s.first, s.per_node)
        return PlanOutcome(
            ok=False,
            reason=reasons.NO_CAPACITY,
            message=f"needs {format_gib(need)} per replica; {s.nodes} nodes x {s.per_node} x "
            f"{s.first.product_name} would hold it (pipeline parallel across the nodes) and {exist} such "
            f"nodes exist, but {s.nodes} of them are not free now.",
        )
    devices = [d for ds in capable.values() for d in ds if mode_accepts("Exclusive", d)]
    largest = max(devices, key=lambda d: (d.memory_bytes, d.product_name))
    per_node = max(tp_sizes)
    nodes = next(
        (
            n
            for n in range(2, MAX_NODES_LOOKED_AT + 1)
            if per_device_need(estimate, layers, n, per_node, util) <= largest.memory_bytes
        ),
        None,
    )
    exist = _hosts(capable, largest, per_node)
    would = (
        f"it would need {nodes} nodes x {per_node} x {largest.product_name}"
        if nodes is not None
        else f"more than {MAX_NODES_LOOKED_AT} nodes x {per_node} x {largest.product_name} would not hold it"
    )
    return PlanOutcome(
        ok=False,
        reason=reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
        message=f"needs {format_gib(need)} per replica, more than one node holds; {would} "
        f"(the class allows up to {max_nodes} nodes per replica), and {exist} such nodes exist.",
    )


def _hosts(capable: Mapping[str, list[Device]], like: Device, per_node: int) -> int:
    """Nodes with at least ``per_node`` devices of ``like``'s product, busy or not."""
    count: dict[str, int] = defaultdict(int)
    seen: set[DeviceKey] = set()
    for ds in capable.values():
        for d in ds:
            if d.key not in seen and d.product_name == like.product_name and mode_accepts("Exclusive", d):
                seen.add(d.key)
                count[d.node] += 1
    return sum(1 for n in count.values() if n >= per_node)


def planned_spread(request: PlanRequest, spread: Spread, estimate: MemoryEstimate) -> PlanOutcome:
    facts, recipe, device = request.facts, spread.recipe.recipe, spread.first
    layers = facts.num_hidden_layers
    context = facts.serving_context or estimate.min_context
    max_len = max_model_len(estimate, layers, spread, context)
    cap = device.compute_capability
    args = vllm_args(
        VllmLaunch(
            facts=facts,
            endpoint_type=request.endpoint_type,
            served_model_name=request.served_model_name,
            tensor_parallel_size=spread.per_node,
            pipeline_parallel_size=spread.nodes,
            max_model_len=max_len,
            gpu_memory_utilization=spread.utilization,
            quantization=quantization_method(facts),
            compute_capability=(cap.major, cap.minor) if cap else None,
            extra_args=tuple(recipe.spec.extra_args or ()),
        )
    )
    driver = _q(device.key[0])
    selectors = [f"device.attributes[{driver}].productName == {_q(device.product_name)}"]
    if request.class_spec.placement.selector:
        selectors.append(request.class_spec.placement.selector)
    stage_weights = estimate.weights * stage_fraction(layers, spread.nodes)
    plan = LaunchPlan(
        device_class=spread.device_class,
        product_name=device.product_name,
        accelerator_memory_gib=device.memory_bytes // GIB,
        accelerator_count=spread.total,
        node_count=spread.nodes,
        placement_mode="MultiNode",
        sharing_mode="Exclusive",
        share_percent=100,
        device_selectors=selectors,
        recipe=spread.recipe.name,
        runtime=recipe.spec.runtime,
        image=recipe.spec.image,
        args=args,
        cpu=str(2 + 2 * spread.per_node),
        memory=to_quantity_gi(4 * GIB + 2 * GIB * spread.per_node + int(stage_weights) // 4),
        model_volume=to_quantity_gi(math.ceil(disk_bytes(facts) * 1.1) + GIB),
        max_model_len=max_len,
        gpu_memory_utilization=spread.utilization,
        endpoint_type=request.endpoint_type,
        needs_bytes=estimate.weights + estimate.kv_cache,
    )
    need = per_device_need(estimate, layers, spread.nodes, spread.per_node, spread.utilization)
    return PlanOutcome(
        ok=True,
        reason=reasons.PLANNED_OK,
        message=f"planned {plan.summary()}: needs {format_gib(need)} per device, "
        f"max model length {max_len} tokens.",
        plan=plan,
        allocation=tuple(d.key for d in spread.devices),
    )


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
