"""How many more replicas of a plan in force the free devices hold now (capacity-aware scaling). Pure.

The autoscaler (the HPA) decides how many replicas an order wants; the scheduler places the extra
pods, each with a ResourceClaim from the plan's claim template. ``more_replicas`` answers, from the
ledger's inventory, how many more such replicas would find their devices: it takes what the claim
takes, replica after replica, on devices nobody holds, and stops at ``limit`` (the replicas still
wanted), so the count costs at most ``limit`` picks.

What one replica takes is what its claim asks (``render.claim``): ``devicesPerPod`` devices of the
plan's device class on one node, each passing the plan's selectors (product, MIG profile, the
class's selector), whole; or, for TimeSlicing and MPS, the plan's share of memory on one device
that allows multiple allocations. A multi-node plan's replica is a group: ``nodeCount`` such pods,
each on a node of its own choosing (the scheduler may put two of a group's pods on one node that has
the devices for both).

The inventory must count every claim and reservation as taken, the order's own too
(``Ledger.look``): the devices of the order's running, loading or reserved replicas are theirs, not
room for more. The caller counts those replicas as placed (``controller.live.workload.placed_replicas``).

When the free devices are short, ``with_preemption`` counts the replicas that evicting strictly
lower-priority orders' replicas would place besides, and which of them (``preemption``).

What this cannot see, the scheduler may still refuse: cpu, memory, taints, volumes, a device taken
between two reconciles. The scaling verdict keeps its grace-based path for those.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from controller.planner import preemption
from controller.planner.fleet import FleetGroups
from controller.planner.inventory import Device, DeviceKey, Inventory, fleet_groups
from controller.planner.launch import LaunchPlan
from controller.planner.placement import SHARED_MODES, mode_accepts
from controller.planner.preemption import Replica
from controller.planner.selectors import SelectorCache
from shared.cel import CelError, Selector, compile_selector
from shared.quantity import GIB, QuantityError, parse_quantity

_SELECTORS = SelectorCache()  # results are a pure function of (expression, device)


@dataclass(frozen=True, slots=True)
class Room:
    """The ledger's answer for one order's scale-up.

    ``placed``: replicas of the plan in force that hold their devices (their claims allocated, or the
    order's reservation); ``more``: replicas the free devices hold besides, counted up to ``limit``
    (the replicas wanted beyond ``placed``); ``looked_at``: what one replica takes, where (short).
    """

    placed: int
    more: int
    limit: int
    looked_at: str
    preempting: int = 0  # replicas placed besides ``more`` by preempting ``victims``
    victims: tuple[Replica, ...] = ()  # lower-priority replicas to evict for them (``with_preemption``)

    def fits(self, wanted: int) -> bool:
        return self.placed + self.more >= wanted


def replica_shape(plan: LaunchPlan) -> str:
    """What one replica takes, short: ``1 x NVIDIA L4 from gpu.nvidia.com``."""
    if plan.sharing_mode in SHARED_MODES:
        what = f"{plan.accelerator_memory_gib} GiB ({plan.sharing_mode}) of one {plan.product_name}"
    elif plan.sharing_mode == "MIG":
        what = f"1 x MIG {plan.product_name} ({plan.accelerator_memory_gib} GiB)"
    else:
        what = f"{plan.devices_per_pod} x {plan.product_name}"
    if plan.node_count > 1:
        what = f"{plan.node_count} nodes x {what}"
    return f"{what} from {plan.device_class}"


def more_replicas(plan: LaunchPlan, inventory: Inventory, limit: int) -> int:
    """How many more replicas of ``plan`` the inventory's free devices hold, counted up to ``limit``."""
    return len(_placements(plan, inventory, limit))


def with_preemption(
    plan: LaunchPlan, inventory: Inventory, limit: int, victims: Sequence[Replica]
) -> tuple[int, tuple[Replica, ...]]:
    """When the free devices hold fewer than ``limit`` more replicas of ``plan``: how many more
    replicas preempting ``victims`` places besides (0 when it places none more), and the fewest
    victims that takes, lowest first, as ``Ledger.take`` picks them for a new plan.

    ``victims``: ``preemption.victims`` of the order, from the same ledger state as ``inventory``
    (strictly lower priority, lowest first). As many missing replicas as preempting every victim
    would place are placed by the shortest prefix of ``victims`` that places that many; of that
    prefix, only the victims whose devices those replicas take are returned. Nothing is preempted
    while the free devices hold every missing replica.
    """
    free = len(_placements(plan, inventory, limit))
    if free >= limit or not victims:
        return 0, ()
    best = len(_placements(plan, preemption.without(inventory, victims), limit))
    if best <= free:
        return 0, ()
    for n in range(1, len(victims) + 1):
        picks = _placements(plan, preemption.without(inventory, victims[:n]), limit)
        if len(picks) >= best:
            used = frozenset(k for keys in picks for k in keys)
            return best - free, tuple(v for v in victims[:n] if v.use.keys & used)
    return 0, ()  # unreachable: the whole prefix is every victim


def _placements(plan: LaunchPlan, inventory: Inventory, limit: int) -> list[tuple[DeviceKey, ...]]:
    """The devices of each more replica of ``plan`` the free devices hold, up to ``limit`` replicas."""
    if limit <= 0:
        return []
    matching = _matching(plan, inventory)
    if not matching:
        return []
    out: list[tuple[DeviceKey, ...]] = []
    inv = inventory
    share = _share_bytes(plan) if plan.sharing_mode in SHARED_MODES else None
    while len(out) < limit:
        keys = _one_replica(plan, matching, inv, share)
        if keys is None:
            break
        inv = inv.with_allocation(keys, memory=share)
        out.append(keys)
    return out


def _one_replica(
    plan: LaunchPlan, matching: Sequence[Device], inv: Inventory, share: int | None
) -> tuple[DeviceKey, ...] | None:
    """The devices one more replica would take (a group: every pod's), or None when none fit."""
    busy = inv.busy()
    pods = max(1, plan.node_count)
    if share is not None:  # one device per pod, the share of its memory; a device may take several
        picked: list[DeviceKey] = []
        left: dict[DeviceKey, int] = {}
        for d in matching:
            if d.key in busy and inv.consumed.get(d.key, 0) <= 0:
                continue  # taken whole, or through a relative
            left[d.key] = inv.free_memory(d)
            while left[d.key] >= share and len(picked) < pods:
                picked.append(d.key)
                left[d.key] -= share
            if len(picked) == pods:
                return tuple(picked)
        return None
    per_pod = max(1, plan.devices_per_pod)
    by_node: dict[str, list[DeviceKey]] = defaultdict(list)
    for d in matching:
        if d.key not in busy:
            by_node[d.node].append(d.key)
    chosen: list[DeviceKey] = []
    placed = 0
    for node in sorted(by_node):
        free = by_node[node]
        while len(free) >= per_pod and placed < pods:
            chosen += free[:per_pod]
            free = free[per_pod:]
            placed += 1
        if placed == pods:
            return tuple(chosen)
    return None


PlanKey = tuple[str, str, str, tuple[str, ...]]
# The devices a plan's claim accepts, per fleet (the ledger's groups) while its devices are unchanged:
# judging the selectors on every device of a large fleet costs tens of milliseconds under the lock.
_MATCHING: weakref.WeakKeyDictionary[FleetGroups, tuple[int, dict[PlanKey, tuple[Device, ...]]]] = (
    weakref.WeakKeyDictionary()
)
MAX_PLANS = 256


def _matching(plan: LaunchPlan, inventory: Inventory) -> tuple[Device, ...]:
    """The devices of the plan's class its claim accepts, in the inventory's device order."""
    groups = fleet_groups(inventory)
    key = (plan.device_class, plan.product_name, plan.sharing_mode, tuple(plan.device_selectors))
    version, found = _MATCHING.get(groups, (-1, {}))
    if version != groups.version:
        found = {}
        _MATCHING[groups] = (groups.version, found)
    if key not in found:
        if len(found) >= MAX_PLANS:
            found.clear()
        members = groups.view(plan.device_class, None).members.values()
        found[key] = tuple(d for d, _ in sorted(members, key=lambda m: m[1]) if _accepts(plan, d))
    return found[key]


def _accepts(plan: LaunchPlan, device: Device) -> bool:
    """Whether the plan's claim could be given the device: its class, mode and every selector."""
    if plan.device_class not in device.device_classes or device.product_name != plan.product_name:
        return False
    if not mode_accepts(plan.sharing_mode, device):
        return False
    try:
        return all(_SELECTORS.matches(_compiled(e), device.view) for e in plan.device_selectors)
    except CelError:
        return False  # the scheduler cannot give it either


@functools.lru_cache(maxsize=64)
def _compiled(expression: str) -> Selector:
    return compile_selector(expression)


def _share_bytes(plan: LaunchPlan) -> int:
    """The memory the claim asks of a shared device (its capacity request), else the plan's share."""
    text = (plan.capacity_requests or {}).get("memory")
    try:
        return math.ceil(parse_quantity(text)) if text else plan.accelerator_memory_gib * GIB
    except QuantityError:
        return plan.accelerator_memory_gib * GIB
