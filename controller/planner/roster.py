"""The ledger's devices in inventory order (node, key) and their ``DeviceIndex``, kept per change.

Adding or removing a device costs a bisection and a list move, not a sort of the fleet; the
inventory's device tuple is copied from the list on the first view after a change (a C-speed copy).
The ``DeviceIndex`` handed out reads the roster's own maps, so an inventory describes the fleet
of its moment only while the ledger's lock is held (``Ledger.take`` and ``hold`` use it so).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from controller.planner.fleet import FleetGroups, device_order
from controller.planner.inventory import Device, DeviceIndex, DeviceKey


class Roster:
    def __init__(self) -> None:
        self._order: list[tuple[str, DeviceKey]] = []
        self._devices: list[Device] = []
        self._tuple: tuple[Device, ...] | None = None
        self._by_key: dict[DeviceKey, Device] = {}
        self._children: dict[str, tuple[DeviceKey, ...]] = {}
        self._by_uuid: dict[str, tuple[DeviceKey, ...]] = {}
        self._counted: dict[DeviceKey, Device] = {}
        self._index: DeviceIndex | None = None

    def add(self, device: Device) -> None:
        at = (device.node, device.key)
        i = bisect_right(self._order, at)
        self._order.insert(i, at)
        self._devices.insert(i, device)
        self._by_key[device.key] = device
        if device.parent_uuid is not None:
            self._children[device.parent_uuid] = (*self._children.get(device.parent_uuid, ()), device.key)
        if device.uuid is not None:
            self._by_uuid[device.uuid] = (*self._by_uuid.get(device.uuid, ()), device.key)
        if device.consumes:
            self._counted[device.key] = device
        self._tuple = self._index = None

    def remove(self, device: Device) -> None:
        at = (device.node, device.key)
        i = bisect_left(self._order, at)
        while i < len(self._order) and self._order[i] == at and self._devices[i] is not device:
            i += 1
        if i == len(self._order) or self._devices[i] is not device:
            return
        del self._order[i]
        del self._devices[i]
        if self._by_key.get(device.key) is device:
            del self._by_key[device.key]
            self._counted.pop(device.key, None)
        _drop(self._children, device.parent_uuid, device.key)
        _drop(self._by_uuid, device.uuid, device.key)
        self._tuple = self._index = None

    def devices(self) -> tuple[Device, ...]:
        if self._tuple is None:
            self._tuple = tuple(self._devices)
        return self._tuple

    def index(self) -> DeviceIndex:
        if self._index is None:
            self._index = DeviceIndex(
                by_key=self._by_key,
                children=self._children,
                by_uuid=self._by_uuid,
                counted=tuple(self._counted.values()),
            )
        return self._index


def _drop(keys: dict[str, tuple[DeviceKey, ...]], uuid: str | None, key: DeviceKey) -> None:
    if uuid is None or uuid not in keys:
        return
    left = list(keys[uuid])
    if key in left:
        left.remove(key)
    if left:
        keys[uuid] = tuple(left)
    else:
        del keys[uuid]


class Fleet:
    """What the ledger keeps of its devices: the roster (order, index) and the search's groups."""

    def __init__(self, devices: tuple[Device, ...] = ()) -> None:
        self.roster = Roster()
        self.groups = FleetGroups()
        for d in devices:
            self.add(d)

    def add(self, device: Device) -> None:
        self.roster.add(device)
        self.groups.add(device, device_order(device))

    def remove(self, device: Device) -> None:
        self.roster.remove(device)
        self.groups.remove(device)
