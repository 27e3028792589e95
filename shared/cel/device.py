"""One device as a DRA CEL expression sees it: ``device.driver``, ``device.attributes``, ``device.capacity``. Pure.

A domain that the device does not have is an empty map, so ``"x" in device.attributes["other.example.com"]``
is false; reading a missing name is an error, as in Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from celpy import celtypes

from shared.cel.errors import CelError
from shared.cel.library import Quantity
from shared.cel.semver import Semver
from shared.quantity import QuantityError, parse_quantity

AttributeValue = bool | int | str | Semver


@dataclass(frozen=True)
class DeviceView:
    """One device as a DRA CEL expression sees it."""

    driver: str
    attributes: Mapping[str, Mapping[str, AttributeValue]] = field(default_factory=dict)
    capacity: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)


def device_view(driver: str, device: Mapping[str, Any]) -> DeviceView:
    """The view of a raw ResourceSlice device (``resource.k8s.io/v1``) published by ``driver``.

    Unqualified attribute and capacity names belong to the driver's domain; ``domain/name`` names
    to their own domain. A value that cannot be read raises CelError.
    """
    attributes: dict[str, dict[str, AttributeValue]] = {}
    for name, raw in (device.get("attributes") or {}).items():
        domain, short = _qualify(driver, name)
        attributes.setdefault(domain, {})[short] = _attribute_value(name, raw)
    capacity: dict[str, dict[str, Decimal]] = {}
    for name, raw in (device.get("capacity") or {}).items():
        domain, short = _qualify(driver, name)
        value = raw.get("value") if isinstance(raw, Mapping) else raw
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise CelError(f"capacity {name!r} is not a quantity: {value!r}")
        try:
            capacity.setdefault(domain, {})[short] = parse_quantity(value)
        except QuantityError as e:
            raise CelError(f"capacity {name!r} is not a quantity: {value!r}") from e
    return DeviceView(driver=driver, attributes=attributes, capacity=capacity)


def _qualify(driver: str, name: str) -> tuple[str, str]:
    domain, sep, short = name.rpartition("/")
    return (domain, short) if sep else (driver, name)


def _attribute_value(name: str, raw: Any) -> AttributeValue:
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise CelError(f"attribute {name!r} must have exactly one of bool, int, string, version")
    ((kind, value),) = raw.items()
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "version" and isinstance(value, str):
        return Semver.parse(value)
    raise CelError(f"attribute {name!r} has an unreadable value {raw!r}")


class _DomainMap(celtypes.MapType):
    """``device.attributes`` / ``device.capacity``: a domain the device lacks is an empty map."""

    def __getitem__(self, key: Any) -> Any:
        if key in self:
            return super().__getitem__(key)
        return celtypes.MapType()


def to_cel(device: DeviceView) -> celtypes.MapType:
    """The ``device`` variable of a selector evaluation."""
    attributes = _DomainMap(
        {
            celtypes.StringType(domain): celtypes.MapType(
                {celtypes.StringType(k): _cel_value(v) for k, v in values.items()}
            )
            for domain, values in device.attributes.items()
        }
    )
    capacity = _DomainMap(
        {
            celtypes.StringType(domain): celtypes.MapType(
                {celtypes.StringType(k): Quantity(v) for k, v in values.items()}
            )
            for domain, values in device.capacity.items()
        }
    )
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(device.driver),
            celtypes.StringType("attributes"): attributes,
            celtypes.StringType("capacity"): capacity,
        }
    )


def _cel_value(value: AttributeValue) -> Any:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    return value
