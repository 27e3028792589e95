"""Which devices a plan in force counts on, picked from a free view: how the ledger rebuilds a
reservation after a restart, from the plan recorded on the workload. Pure."""

from __future__ import annotations

import math
from collections import defaultdict

from controller.planner.inventory import Device, Inventory
from controller.planner.ledger import Use
from controller.planner.placement import SHARED_MODES
from controller.planner.plan import LaunchPlan
from shared.quantity import GIB, QuantityError, parse_quantity


def devices_for(plan: LaunchPlan, inventory: Inventory) -> Use:
    """Free devices of the plan's class and product, as the plan takes them (empty when none)."""
    busy = inventory.busy()
    matching = [
        d
        for d in inventory.devices
        if plan.device_class in d.device_classes and d.product_name == plan.product_name
    ]
    if plan.sharing_mode in SHARED_MODES:
        share = _share_bytes(plan)
        for d in matching:
            if inventory.free_memory(d) >= share:
                return Use(shared=((d.key, share),))
        return Use()
    free = [d for d in matching if d.key not in busy]
    if plan.sharing_mode == "MIG":
        same = [d for d in free if d.memory_bytes // GIB == plan.accelerator_memory_gib]
        return Use(whole=frozenset({(same or free)[0].key})) if (same or free) else Use()
    by_node: dict[str, list[Device]] = defaultdict(list)
    for d in free:
        by_node[d.node].append(d)
    per_node, picked = plan.devices_per_pod, []  # a multi-node plan: that many on each of its nodes
    for node in sorted(by_node):
        if len(by_node[node]) >= per_node:
            picked += by_node[node][:per_node]
            if len(picked) >= plan.accelerator_count:
                return Use(whole=frozenset(d.key for d in picked))
    return Use()


def _share_bytes(plan: LaunchPlan) -> int:
    text = (plan.capacity_requests or {}).get("memory")
    try:
        return math.ceil(parse_quantity(text)) if text else plan.accelerator_memory_gib * GIB
    except QuantityError:
        return plan.accelerator_memory_gib * GIB
