"""Lookups over one fleet of devices that every plan would otherwise recompute. Pure (a memo).

The ledger hands each plan the same ``devices`` tuple until a ResourceSlice or DeviceClass changes,
so the index is kept per tuple (by identity, holding the tuple so its id is never reused) for the
last few fleets. It answers, without a pass over the fleet: the devices of each DeviceClass (in
fleet order), a device by key, the devices whose parent is a given UUID (a GPU's MIG devices),
the devices with a given UUID, and the devices that consume shared counters.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # inventory imports this module
    from controller.planner.inventory import Device, DeviceKey

KEEP = 4


@dataclass(frozen=True)
class FleetIndex:
    by_class: Mapping[str, tuple[Device, ...]]
    by_key: Mapping[DeviceKey, Device]
    children: Mapping[str, tuple[DeviceKey, ...]]  # parent UUID -> devices that name it
    with_uuid: Mapping[str, tuple[DeviceKey, ...]]  # UUID -> devices that carry it
    with_counters: tuple[Device, ...]


_lock = threading.Lock()
_recent: list[tuple[tuple[Device, ...], FleetIndex]] = []


def index_of(devices: tuple[Device, ...]) -> FleetIndex:
    with _lock:
        for known, index in _recent:
            if known is devices:
                return index
    index = _build(devices)
    with _lock:
        _recent.insert(0, (devices, index))
        del _recent[KEEP:]
    return index


def _build(devices: tuple[Device, ...]) -> FleetIndex:
    by_class: dict[str, list[Device]] = {}
    children: dict[str, list[DeviceKey]] = {}
    with_uuid: dict[str, list[DeviceKey]] = {}
    for d in devices:
        for c in d.device_classes:
            by_class.setdefault(c, []).append(d)
        if d.parent_uuid:
            children.setdefault(d.parent_uuid, []).append(d.key)
        if d.uuid:
            with_uuid.setdefault(d.uuid, []).append(d.key)
    return FleetIndex(
        by_class={c: tuple(ds) for c, ds in by_class.items()},
        by_key={d.key: d for d in devices},
        children={u: tuple(ks) for u, ks in children.items()},
        with_uuid={u: tuple(ks) for u, ks in with_uuid.items()},
        with_counters=tuple(d for d in devices if d.consumes),
    )
