"""Reading ``resource.k8s.io/v1`` objects: DeviceClasses (their selectors), ResourceSlices (their
devices, classified by the DeviceClasses, and shared counters), and ``build_inventory``, the
one-shot inventory from the informer caches that ``ledger.Ledger`` maintains incrementally. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

from controller.planner.inventory import Device, DeviceKey, Inventory
from controller.planner.selectors import SelectorCache
from shared.cel import CelError, Selector, Semver, compile_selector, device_view
from shared.quantity import QuantityError, parse_quantity


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
