"""The devices of each DeviceClass over one fleet, which every plan would otherwise recompute with a
pass over the whole fleet. Pure (a memo).

The ledger hands each plan the same ``devices`` tuple until a ResourceSlice or DeviceClass changes,
so the lookup is kept per tuple (by identity, holding the tuple so its id is never reused) for the
last few fleets. Relatives and counters are ``Inventory.device_index`` (inventory.py).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # inventory imports the planner's modules
    from controller.planner.inventory import Device

KEEP = 4


@dataclass(frozen=True)
class FleetIndex:
    by_class: Mapping[str, tuple[Device, ...]]  # DeviceClass -> its devices, in fleet order


_lock = threading.Lock()
_recent: list[tuple[tuple[Device, ...], FleetIndex]] = []


def index_of(devices: tuple[Device, ...]) -> FleetIndex:
    with _lock:
        for known, index in _recent:
            if known is devices:
                return index
    by_class: dict[str, list[Device]] = {}
    for d in devices:
        for c in d.device_classes:
            by_class.setdefault(c, []).append(d)
    index = FleetIndex(by_class={c: tuple(ds) for c, ds in by_class.items()})
    with _lock:
        _recent.insert(0, (devices, index))
        del _recent[KEEP:]
    return index
