"""What a claim or a reservation takes from the ledger (``Use``), read from a claim's allocation or a
planner outcome. Pure."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from controller.planner.inventory import Device, DeviceKey, Inventory
from controller.planner.shapes import ClaimShape
from shared.quantity import parse_quantity

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Use:
    """What one claim or reservation takes: whole devices, or memory on shared devices."""

    whole: frozenset[DeviceKey] = frozenset()
    shared: tuple[tuple[DeviceKey, int], ...] = ()  # (device, bytes) on multiple-allocation devices

    @property
    def keys(self) -> frozenset[DeviceKey]:
        return self.whole | frozenset(k for k, _ in self.shared)


@dataclass(frozen=True, slots=True)
class Reservation:
    """A plan's place, until the order's claims stand for it. ``shape``: what the plan's claims ask
    for (None: unknown, only ``settle`` drops it); ``prior``: the order's claims allocated when it was
    made, which stand for an earlier plan, never for this one; ``preempts``: the claims (namespace,
    name) of lower-priority orders' replicas whose devices the plan counts on, which the controller
    evicts (``controller.planner.preemption``): until they are gone the reservation overlaps them."""

    plan_hash: str
    use: Use
    shape: ClaimShape | None = None
    prior: frozenset[str] = frozenset()
    preempts: frozenset[tuple[str, str]] = frozenset()


def claim_use(claim: Obj, known: Mapping[DeviceKey, Device]) -> Use:
    """What an allocated claim takes. A result that consumed ``memory`` is a share of a
    multiple-allocation device (only such devices record consumed capacity), unless the device is
    known to be exclusive: the claim may arrive before the slice that publishes its device."""
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
        "results"
    ) or []
    whole: set[DeviceKey] = set()
    parts: list[tuple[DeviceKey, int]] = []
    for r in results:
        key = (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        consumed = r.get("consumedCapacity") or {}
        device = known.get(key)
        if "memory" in consumed and (device is None or device.multiple_allocations):
            parts.append((key, math.ceil(parse_quantity(consumed["memory"]))))
        else:
            whole.add(key)
    return Use(frozenset(whole), tuple(parts))


def use_of(allocation: Iterable[DeviceKey], shared_bytes: int | None) -> Use:
    """What a planner outcome takes: whole devices, or ``shared_bytes`` on each (TimeSlicing/MPS)."""
    keys = tuple(allocation)
    if shared_bytes is not None:
        return Use(shared=tuple((k, shared_bytes) for k in keys))
    return Use(whole=frozenset(keys))


def with_devices(inventory: Inventory, devices: Iterable[Device]) -> Inventory:
    """The same allocations over another set of devices (for tests and the benchmark)."""
    return replace(inventory, devices=tuple(devices), index=None, groups=None)
