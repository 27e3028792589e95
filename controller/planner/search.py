"""The smallest fitting candidate of one (device class, sharing mode), searched group by group. Pure.

It returns exactly ``placement.candidates(...)[0]``, the first of every candidate sorted by the
memory taken, device count, product name, node and device names (then the inventory's device
order, as the stable sort left it), without building the candidates:

- Exclusive: in a group of identical devices (product, memory, compute capability), a node offers
  a candidate exactly when it has at least ``n`` free devices, ``n`` the smallest tensor-parallel
  size that fits the device's memory; every node of the group gives the same memory and count, so
  the group's best is the first node by name with ``n`` free, and only nodes with a taken device
  can fail, so the walk is as long as the taken devices of the group.
- MIG and TimeSlicing/MPS (never MPS on the NVIDIA driver's devices, as ``mode_accepts``): every device of a group gives the same key up to (node, name), so the
  group's best is its first usable device in (node, name) order.

Time per call: the groups of the class, plus the taken devices (``busy``) of the order's view.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from controller.planner.estimate import MemoryEstimate
from controller.planner.groups import ClassGroups, Order
from controller.planner.inventory import DeviceKey, Inventory
from controller.planner.placement import MIB, NVIDIA_DRIVER, SHARED_MODES, Candidate, utilization
from controller.planner.recipes import RecipeChoice, runs_on
from shared.cel import Semver

SortKey = tuple[int, int, str, str, tuple[str, ...], Order]
RecipeFor = Callable[[Semver | None], RecipeChoice | None]


@dataclass(frozen=True)
class Taken:
    """What the order's view takes: ``inventory`` None means an empty cluster (nothing taken)."""

    busy: frozenset[DeviceKey]
    inventory: Inventory | None

    @staticmethod
    def of(inventory: Inventory) -> Taken:
        return Taken(inventory.busy(), inventory)

    @staticmethod
    def nothing() -> Taken:
        return Taken(frozenset(), None)


def recipes_by_capability(choices: Sequence[RecipeChoice]) -> RecipeFor:
    """The first recipe that runs on a compute capability, memoised."""
    memo: dict[Semver | None, RecipeChoice | None] = {}

    def recipe_for(cap: Semver | None) -> RecipeChoice | None:
        if cap not in memo:
            memo[cap] = next((c for c in choices if runs_on(c, cap)), None)
        return memo[cap]

    return recipe_for


def best(
    *,
    device_class: str,
    mode: str,
    groups: ClassGroups,
    taken: Taken,
    estimate: MemoryEstimate,
    recipe_for: RecipeFor,
    tp_sizes: Sequence[int],
) -> Candidate | None:
    """``candidates(...)[0]`` for the class's devices in ``groups``, or None when nothing fits."""
    if mode == "Exclusive":
        found = _exclusive(device_class, groups, taken, estimate, recipe_for, tp_sizes)
    elif mode == "MIG":
        found = _mig(device_class, groups, taken, estimate, recipe_for)
    elif mode in SHARED_MODES:
        found = _shared(device_class, mode, groups, taken, estimate, recipe_for)
    else:
        found = None
    return found[1] if found else None


def _exclusive(
    device_class: str,
    groups: ClassGroups,
    taken: Taken,
    estimate: MemoryEstimate,
    recipe_for: RecipeFor,
    tp_sizes: Sequence[int],
) -> tuple[SortKey, Candidate] | None:
    busy = taken.busy
    # Busy devices per (group, node). The compute capability is keyed by its precedence, a plain
    # tuple: hashing and comparing Semvers in these loops was most of a plan on a large fleet.
    per_node: dict[tuple[str, int, object, str], int] = {}
    for k in busy:
        member = groups.members.get(k)
        if member is not None and member[0].kind != "mig":
            d = member[0]
            at = (d.product_name, d.memory_bytes, _plain(d.compute_capability), d.node)
            per_node[at] = per_node.get(at, 0) + 1
    found: tuple[SortKey, Candidate] | None = None
    for gk, group in groups.exclusive.items():
        product, memory, cap = gk
        choice = recipe_for(cap)
        if choice is None:
            continue
        util = utilization(choice)
        n = next((n for n in tp_sizes if estimate.per_device_need(n, util) <= memory), None)
        if n is None:
            continue
        plain = _plain(cap)
        for node in group.at_least.get(n, ()):
            entries = group.nodes[node]
            if per_node.get((product, memory, plain, node)):
                entries = [e for e in entries if e[3] not in busy]
                if len(entries) < n:
                    continue
            chosen = entries[:n]
            key = (memory * n, n, product, node, tuple(e[0] for e in chosen), min(e[2] for e in entries))
            if found is None or key < found[0]:
                devices = tuple(groups.members[e[3]][0] for e in chosen)
                found = (key, Candidate(device_class, "Exclusive", devices, choice, util))
            break
    return found


def _plain(cap: Semver | None) -> object:
    """What identifies a compute capability for equality (``Semver`` compares by precedence)."""
    return None if cap is None else cap.precedence()


def _mig(
    device_class: str, groups: ClassGroups, taken: Taken, estimate: MemoryEstimate, recipe_for: RecipeFor
) -> tuple[SortKey, Candidate] | None:
    found: tuple[SortKey, Candidate] | None = None
    for (memory, product, cap), entries in groups.mig.items():
        choice = recipe_for(cap)
        if choice is None or estimate.per_device_need(1, utilization(choice)) > memory:
            continue
        entry = next((e for e in entries if e[3] not in taken.busy), None)
        if entry is None:
            continue
        key = (memory, 1, product, entry[0], (entry[1],), entry[2])
        if found is None or key < found[0]:
            device = groups.members[entry[3]][0]
            found = (key, Candidate(device_class, "MIG", (device,), choice, utilization(choice)))
    return found


def _shared(
    device_class: str,
    mode: str,
    groups: ClassGroups,
    taken: Taken,
    estimate: MemoryEstimate,
    recipe_for: RecipeFor,
) -> tuple[SortKey, Candidate] | None:
    inventory, busy = taken.inventory, taken.busy
    consumed = inventory.consumed if inventory is not None else {}
    found: tuple[SortKey, Candidate] | None = None
    for (product, memory, cap, strategy, driver), entries in groups.shared.items():
        if (strategy is not None and strategy != mode.lower()) or (mode == "MPS" and driver == NVIDIA_DRIVER):
            continue
        choice = recipe_for(cap)
        if choice is None or memory <= 0:
            continue
        util = utilization(choice)
        need = estimate.per_device_need(1, util)
        percent = max(1, math.ceil(need * 100 / memory))
        share = math.ceil(memory * percent / 100 / MIB) * MIB
        if percent > 100 or share > memory:
            continue
        for node, name, order, k in entries:
            if inventory is not None and (k in busy or k in consumed):
                if k in busy and consumed.get(k, 0) <= 0:
                    continue
                if share > inventory.free_memory(groups.members[k][0]):
                    continue
            key = (share, 1, product, node, (name,), order)
            if found is None or key < found[0]:
                device = groups.members[k][0]
                found = (key, Candidate(device_class, mode, (device,), choice, util, share, percent))
            break
    return found
