"""Placement: which free devices of a device class hold the model, smallest fit first. Pure.

Candidates of one (device class, sharing mode):

- Exclusive: 1..maxAcceleratorsPerReplica whole devices of one product on one node; more than one
  is tensor parallel, and the size must be a power of two dividing the attention heads.
- MIG: one MIG device (``type: mig``); the smallest profile that fits comes first.
- TimeSlicing / MPS: a share of one device that allows multiple allocations (DRA consumable
  capacity on ``memory``); the smallest whole percentage that fits. Never MPS on a device of the
  NVIDIA DRA driver: it refuses MPS on devices shared across claims (its ``ConsumableShares``), and
  without that, one of its GPUs is never shared between two claims (docs/admin-guide.md).

Candidates sort by the memory they take from the cluster, then device count, product name, node
and device names, so that the smallest fit wins and ties break the same way every time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from controller.planner.estimate import DEFAULT_GPU_MEMORY_UTILIZATION, MemoryEstimate
from controller.planner.inventory import Device, DeviceKey, Inventory
from controller.planner.recipes import RecipeChoice, runs_on
from shared.cel import Semver

MIB = 2**20
SHARED_MODES = ("TimeSlicing", "MPS")
NVIDIA_DRIVER = "gpu.nvidia.com"


@dataclass(frozen=True)
class Candidate:
    """Devices one replica would take, with the recipe that runs on them."""

    device_class: str
    sharing_mode: str
    devices: tuple[Device, ...]
    recipe: RecipeChoice
    utilization: float
    share_bytes: int | None = None  # TimeSlicing/MPS: memory taken on the device
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
        return (
            self.memory_per_device * self.count,
            self.count,
            self.first.product_name,
            self.first.node,
            tuple(d.name for d in self.devices),
        )


def utilization(choice: RecipeChoice) -> float:
    return choice.recipe.spec.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION


def tensor_parallel_sizes(max_devices: int, attention_heads: int | None) -> list[int]:
    """1, 2, 4, 8 ... up to ``max_devices``, each dividing the attention heads (unknown heads: 1 only)."""
    sizes = [1]
    n = 2
    while n <= max_devices:
        if attention_heads and attention_heads % n == 0:
            sizes.append(n)
        n *= 2
    return sizes


def mode_accepts(mode: str, device: Device) -> bool:
    if mode == "MIG":
        return device.kind == "mig"
    if device.kind == "mig":
        return False
    if mode == "MPS" and device.key[0] == NVIDIA_DRIVER:
        return False
    if mode in SHARED_MODES:
        return device.multiple_allocations and _strategy_allows(device, mode)
    return True  # Exclusive


def _strategy_allows(device: Device, mode: str) -> bool:
    """A driver may say which sharing strategy a shared device runs (attribute ``sharingStrategy``)."""
    domain = device.view.attributes.get(device.key[0], {})
    strategy = domain.get("sharingStrategy")
    return not isinstance(strategy, str) or strategy.lower() == mode.lower()


def _available(device: Device, mode: str, inventory: Inventory | None, busy: frozenset[DeviceKey]) -> bool:
    if inventory is None or device.key not in busy:
        return True
    # a shared device that is only partly consumed still takes shares
    return mode in SHARED_MODES and inventory.consumed.get(device.key, 0) > 0


def first_recipe(choices: Sequence[RecipeChoice], device: Device) -> RecipeChoice | None:
    return next((c for c in choices if runs_on(c, device.compute_capability)), None)


def candidates(
    *,
    device_class: str,
    mode: str,
    devices: Iterable[Device],
    inventory: Inventory | None,
    busy: frozenset[DeviceKey],
    estimate: MemoryEstimate,
    choices: Sequence[RecipeChoice],
    tp_sizes: Sequence[int],
) -> list[Candidate]:
    """Every fitting candidate, sorted; ``inventory=None`` means on an empty cluster."""
    out: list[Candidate] = []
    by_capability: dict[Semver | None, RecipeChoice | None] = {}

    def recipe_for(device: Device) -> RecipeChoice | None:
        cap = device.compute_capability
        if cap not in by_capability:
            by_capability[cap] = first_recipe(choices, device)
        return by_capability[cap]

    usable = [d for d in devices if mode_accepts(mode, d) and _available(d, mode, inventory, busy)]
    if mode == "Exclusive":
        groups: dict[tuple[str, str, int, Semver | None], list[Device]] = defaultdict(list)
        for d in usable:
            groups[(d.node, d.product_name, d.memory_bytes, d.compute_capability)].append(d)
        for group in groups.values():
            choice = recipe_for(group[0])
            if choice is None:
                continue
            util = utilization(choice)
            for n in tp_sizes:
                if n > len(group):
                    break
                if estimate.per_device_need(n, util) <= group[0].memory_bytes:
                    chosen = tuple(sorted(group, key=lambda d: d.name)[:n])
                    out.append(Candidate(device_class, mode, chosen, choice, util))
                    break
    elif mode == "MIG":
        for d in usable:
            choice = recipe_for(d)
            if choice is not None and estimate.per_device_need(1, utilization(choice)) <= d.memory_bytes:
                out.append(Candidate(device_class, mode, (d,), choice, utilization(choice)))
    else:
        for d in usable:
            choice = recipe_for(d)
            if choice is None or d.memory_bytes <= 0:
                continue
            util = utilization(choice)
            need = estimate.per_device_need(1, util)
            percent = max(1, math.ceil(need * 100 / d.memory_bytes))
            share = math.ceil(d.memory_bytes * percent / 100 / MIB) * MIB
            free = d.memory_bytes if inventory is None else inventory.free_memory(d)
            if percent <= 100 and share <= free:
                out.append(Candidate(device_class, mode, (d,), choice, util, share, percent))
    out.sort(key=Candidate.sort_key)
    return out
