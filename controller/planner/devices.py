"""One published device and the lookups over a fleet of them: what the inventory, the groups and the
ledger share. Pure.

``inventory`` (what is free now), ``groups`` and ``fleet`` (the devices grouped for the search) all
read these types; keeping them here keeps those three modules free of an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from shared.cel import DeviceView, Semver

DeviceKey = tuple[str, str, str]  # (driver, pool, device name): how allocation results name a device


@dataclass(frozen=True)
class Device:
    """One published device, with the attributes the planner reads."""

    key: DeviceKey
    node: str
    view: DeviceView
    kind: str  # the driver's `type` attribute: gpu | mig | ...
    product_name: str
    memory_bytes: int
    compute_capability: Semver | None
    uuid: str | None
    parent_uuid: str | None
    profile: str | None
    multiple_allocations: bool
    consumes: tuple[tuple[str, str, Decimal], ...]  # (counter set, counter, amount)
    device_classes: frozenset[str]

    @property
    def pool(self) -> str:
        return self.key[1]

    @property
    def name(self) -> str:
        return self.key[2]

    @property
    def label(self) -> str:
        return f"{self.node}/{self.name}"


@dataclass(frozen=True)
class DeviceIndex:
    """Lookups over one fleet of devices, built once per fleet (the ledger keeps one per version).

    ``busy`` reads only the taken devices and their relatives through it, instead of scanning the
    whole fleet for every plan.
    """

    by_key: Mapping[DeviceKey, Device]
    children: Mapping[str, tuple[DeviceKey, ...]]  # a uuid -> the devices naming it as parentUUID
    by_uuid: Mapping[str, tuple[DeviceKey, ...]]
    counted: tuple[Device, ...]  # the devices that consume shared counters


def index_devices(devices: Iterable[Device]) -> DeviceIndex:
    by_key: dict[DeviceKey, Device] = {}
    children: dict[str, list[DeviceKey]] = {}
    by_uuid: dict[str, list[DeviceKey]] = {}
    counted: list[Device] = []
    for d in devices:
        by_key[d.key] = d
        if d.parent_uuid is not None:
            children.setdefault(d.parent_uuid, []).append(d.key)
        if d.uuid is not None:
            by_uuid.setdefault(d.uuid, []).append(d.key)
        if d.consumes:
            counted.append(d)
    return DeviceIndex(
        by_key=by_key,
        children={k: tuple(v) for k, v in children.items()},
        by_uuid={k: tuple(v) for k, v in by_uuid.items()},
        counted=tuple(counted),
    )
