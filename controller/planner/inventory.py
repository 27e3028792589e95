"""The device inventory: what ResourceSlices publish, what DeviceClasses select, what is free now.

``build_inventory`` turns the raw ``resource.k8s.io/v1`` objects from the informer caches into an
``Inventory``; the planner reads it and never touches Kubernetes. Pure.

Free means: not in the allocation of any ResourceClaim, not blocked by an allocated relative (a
whole GPU and its MIG devices exclude each other, through ``parentUUID`` and through the slice's
shared counters when the driver publishes them), and, for devices that allow multiple allocations
(consumable capacity), the capacity not yet consumed. The order's own claims (name prefix in the
order's namespace) are recorded as *held*: they are not offered back to the order ("while it holds
that place, the place is not published"), and the planner may keep an unchanged plan on them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from controller.planner.selectors import SelectorCache
from shared.cel import CelError, DeviceView, Selector, Semver, compile_selector, device_view
from shared.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    from controller.planner.fleet import FleetGroups

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
    # The devices grouped for the search (``fleet.fleet_groups``), valid while its version is this.
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


def parse_device_class(dc: Mapping[str, Any]) -> tuple[list[Selector], str | None]:
    """A DeviceClass's compiled selectors, and a message when one does not compile."""
    name = str(dc.get("metadata", {}).get("name", ""))
    selectors: list[Selector] = []
    error: str | None = None
    for sel in (dc.get("spec") or {}).get("selectors") or []:
        expression = (sel.get("cel") or {}).get("expression", "")
        try:
            selectors.append(compile_selector(expression))
        except CelError as e:
            error = f"the selector of DeviceClass {name} does not compile: {e}"
    return selectors, error


_SELECTORS = SelectorCache()


def classify(device: Device, classes: Mapping[str, list[Selector]], errors: dict[str, str]) -> Device:
    """The device with the DeviceClasses whose selectors it matches; a selector that fails on it
    marks that class as erroneous in ``errors``."""
    matched: set[str] = set()
    for cname, selectors in classes.items():
        if cname in errors:
            continue
        try:
            if all(_SELECTORS.matches(s, device.view) for s in selectors):
                matched.add(cname)
        except CelError as e:
            errors[cname] = f"the selector of DeviceClass {cname} fails on {device.label}: {e}"
    return replace(device, device_classes=frozenset(matched))


def parse_slice(
    rs: Mapping[str, Any], classes: Mapping[str, list[Selector]], errors: dict[str, str]
) -> tuple[tuple[Device, ...], dict[tuple[str, str, str, str], Decimal]] | str:
    """One ResourceSlice's devices (classified) and shared counters, or why it cannot be read."""
    spec = rs.get("spec") or {}
    driver = str(spec.get("driver", ""))
    pool = str((spec.get("pool") or {}).get("name", ""))
    node = str(spec.get("nodeName") or "")
    slice_name = rs.get("metadata", {}).get("name")
    counters: dict[tuple[str, str, str, str], Decimal] = {}
    for cs in spec.get("sharedCounters") or []:
        for cname, c in (cs.get("counters") or {}).items():
            try:
                counters[(driver, pool, str(cs.get("name")), cname)] = parse_quantity(c.get("value", 0))
            except QuantityError:
                return f"ResourceSlice {slice_name}: counter {cname} is not a quantity"
    devices: list[Device] = []
    for raw in spec.get("devices") or []:
        try:
            device = _device(driver, pool, node, raw)
        except (CelError, QuantityError, TypeError, ValueError) as e:
            return f"ResourceSlice {slice_name}: device {raw.get('name')}: {e}"
        devices.append(classify(device, classes, errors))
    return tuple(devices), counters


def build_inventory(
    *,
    resource_slices: Sequence[Mapping[str, Any]],
    device_classes: Sequence[Mapping[str, Any]],
    resource_claims: Sequence[Mapping[str, Any]],
    own_claim_prefix: str | None = None,
    own_claims: Collection[str] = (),
    namespace: str | None = None,
) -> Inventory | str:
    """The inventory from raw ``resource.k8s.io/v1`` objects, or a message when a slice cannot be read.

    One-shot form of what ``ledger.Ledger`` maintains incrementally (tests and the benchmark's
    baseline use it). The order's own claims are those in ``namespace`` named in ``own_claims`` or
    starting with ``own_claim_prefix``: their devices are recorded as held rather than allocated.
    """
    classes: dict[str, list[Selector]] = {}
    errors: dict[str, str] = {}
    for dc in sorted(device_classes, key=lambda o: str(o.get("metadata", {}).get("name", ""))):
        name = str(dc.get("metadata", {}).get("name", ""))
        selectors, error = parse_device_class(dc)
        classes[name] = selectors
        if error:
            errors[name] = error
    devices: list[Device] = []
    counters: dict[tuple[str, str, str, str], Decimal] = {}
    for rs in resource_slices:
        parsed = parse_slice(rs, classes, errors)
        if isinstance(parsed, str):
            return parsed
        devices.extend(parsed[0])
        counters.update(parsed[1])
    devices.sort(key=lambda d: (d.node, d.key))
    inventory = Inventory(
        devices=tuple(devices),
        device_classes=frozenset(classes),
        device_class_errors=errors,
        counters=counters,
    )
    return _subtract_claims(inventory, resource_claims, own_claim_prefix, frozenset(own_claims), namespace)


def _subtract_claims(
    inventory: Inventory,
    claims: Sequence[Mapping[str, Any]],
    own_prefix: str | None,
    own_names: frozenset[str],
    namespace: str | None,
) -> Inventory:
    by_key = {d.key: d for d in inventory.devices}
    held: set[DeviceKey] = set()
    for claim in claims:
        meta = claim.get("metadata") or {}
        name = str(meta.get("name", ""))
        own = (name in own_names or (own_prefix is not None and name.startswith(own_prefix))) and (
            namespace is None or meta.get("namespace") == namespace
        )
        results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
            "results"
        ) or []
        for r in results:
            key = (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
            device = by_key.get(key)
            consumed = r.get("consumedCapacity") or {}
            if own:
                held.add(key)
            elif device is not None and device.multiple_allocations and "memory" in consumed:
                inventory = inventory.with_allocation(
                    [key], memory=math.ceil(parse_quantity(consumed["memory"]))
                )
            else:
                inventory = inventory.with_allocation([key])
    return replace(inventory, held=frozenset(held))


def _device(driver: str, pool: str, node: str, raw: Mapping[str, Any]) -> Device:
    view = device_view(driver, raw)
    attrs = view.attributes.get(driver, {})
    memory = view.capacity.get(driver, {}).get("memory", Decimal(0))
    capability = attrs.get("cudaComputeCapability")
    consumes = tuple(
        (str(cc.get("counterSet")), cname, parse_quantity(c.get("value", 0)))
        for cc in raw.get("consumesCounters") or []
        for cname, c in (cc.get("counters") or {}).items()
    )
    return Device(
        key=(driver, pool, str(raw.get("name"))),
        node=node or str(raw.get("nodeName") or ""),
        view=view,
        kind=str(attrs.get("type", "gpu")),
        product_name=str(attrs.get("productName", raw.get("name"))),
        memory_bytes=math.ceil(memory),
        compute_capability=capability if isinstance(capability, Semver) else None,
        uuid=_text(attrs.get("uuid")),
        parent_uuid=_text(attrs.get("parentUUID")),
        profile=_text(attrs.get("profile")),
        multiple_allocations=bool(raw.get("allowMultipleAllocations")),
        consumes=consumes,
        device_classes=frozenset(),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
