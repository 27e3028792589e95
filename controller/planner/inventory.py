"""The device inventory: what ResourceSlices publish, what DeviceClasses select, what is free now.

``slices.build_inventory`` turns the raw ``resource.k8s.io/v1`` objects from the informer caches
into an ``Inventory`` (and the ledger keeps one up to date); the planner reads it and never
touches Kubernetes. Pure.

Free means: not in the allocation of any ResourceClaim, not blocked by an allocated relative (a
whole GPU and its MIG devices exclude each other, through ``parentUUID`` and through the slice's
shared counters when the driver publishes them), and, for devices that allow multiple allocations
(consumable capacity), the capacity not yet consumed. The order's own claims (name prefix in the
order's namespace) are recorded as *held*: they are not offered back to the order ("while it holds
that place, the place is not published"), and the planner may keep an unchanged plan on them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal

from controller.planner.devices import Device, DeviceIndex, DeviceKey, index_devices
from controller.planner.fleet import FleetGroups, device_order

# The device types live in ``devices`` (so that ``groups`` and ``fleet`` need not import this module);
# they are re-exported here for the modules that read them with the inventory.
__all__ = ["Device", "DeviceIndex", "DeviceKey", "Inventory", "fleet_groups", "index_devices"]


@dataclass(frozen=True)
class Inventory:
    """Every device, the device classes that exist, and what is allocated now.

    ``device_class_errors`` holds a message for each DeviceClass whose selectors do not compile or
    fail on some device: using such a class makes placement undecidable.
    """

    devices: tuple[Device, ...]
    device_classes: frozenset[str]
    device_class_errors: Mapping[str, str] = field(default_factory=dict)
    allocated: frozenset[DeviceKey] = frozenset()  # whole allocations by other claims
    consumed: Mapping[DeviceKey, int] = field(default_factory=dict)  # memory consumed on shared devices
    held: frozenset[DeviceKey] = frozenset()  # allocated to the order's own claims
    counters: Mapping[tuple[str, str, str, str], Decimal] = field(default_factory=dict)  # left per counter
    # Lookups over ``devices``; must describe exactly ``devices`` (built on first use when None).
    index: DeviceIndex | None = field(default=None, compare=False, repr=False)
    # The devices grouped for the search (``fleet_groups``), valid while its version is this.
    groups: FleetGroups | None = field(default=None, compare=False, repr=False)
    groups_version: int = field(default=-1, compare=False, repr=False)

    def device_index(self) -> DeviceIndex:
        if self.index is None:
            object.__setattr__(self, "index", index_devices(self.devices))
        assert self.index is not None
        return self.index

    def busy(self) -> frozenset[DeviceKey]:
        """Devices that cannot be taken whole: allocated, held, partly consumed, or a relative is.

        In proportion to what is taken (and the devices with shared counters), not to the fleet.
        """
        taken = self.allocated | self.held | frozenset(k for k, v in self.consumed.items() if v > 0)
        index = self.device_index()
        blocked = set(taken)
        for k in taken:
            d = index.by_key.get(k)
            if d is None:
                continue
            if d.uuid is not None:
                blocked.update(index.children.get(d.uuid, ()))  # MIG devices of a taken GPU
            if d.parent_uuid is not None:
                blocked.update(index.by_uuid.get(d.parent_uuid, ()))  # the GPU of a taken MIG device
        for d in index.counted:
            if not self._counters_left(d):
                blocked.add(d.key)
        return frozenset(blocked)

    def _counters_left(self, device: Device) -> bool:
        for counter_set, counter, amount in device.consumes:
            left = self.counters.get((device.key[0], device.key[1], counter_set, counter))
            if left is not None and left < amount:
                return False
        return True

    def free_memory(self, device: Device) -> int:
        """Memory a shared allocation may still take on a multiple-allocation device (0 if blocked)."""
        if device.key in self.allocated or device.key in self.held:
            return 0
        return max(0, device.memory_bytes - self.consumed.get(device.key, 0))

    def with_allocation(self, keys: Iterable[DeviceKey], *, memory: int | None = None) -> Inventory:
        """The inventory after a claim takes ``keys`` whole, or ``memory`` bytes of each when shared."""
        keys = tuple(keys)
        if memory is not None:
            consumed = dict(self.consumed)
            for k in keys:
                consumed[k] = consumed.get(k, 0) + memory
            return replace(self, consumed=consumed)
        counters = dict(self.counters)
        by_key = self.device_index().by_key
        for k in keys:
            device = by_key.get(k)
            for counter_set, counter, amount in device.consumes if device else ():
                ck = (k[0], k[1], counter_set, counter)
                if ck in counters:
                    counters[ck] -= amount
        return replace(self, allocated=self.allocated | frozenset(keys), counters=counters)


def fleet_groups(inventory: Inventory) -> FleetGroups:
    """The inventory's groups: the ledger's when they still describe its devices, else built once."""
    groups = inventory.groups
    if groups is not None and groups.version == inventory.groups_version:
        return groups
    devices = inventory.devices
    in_order = all((a.node, a.key) < (b.node, b.key) for a, b in itertools.pairwise(devices))
    groups = FleetGroups()
    for i, d in enumerate(devices):
        groups.add(d, device_order(d) if in_order else ("", "", "", "", i))
    object.__setattr__(inventory, "groups", groups)
    object.__setattr__(inventory, "groups_version", groups.version)
    return groups
