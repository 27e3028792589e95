"""The fleet grouped per device class, and per (device class, class selector): what the search reads.

``FleetGroups`` is changed in place by ``add``/``remove`` (the ledger calls them on slice and
DeviceClass events, each in proportion to the devices changed) and counts its changes in
``version``. A class selector's view is built from the class's groups on first use, kept while
the fleet changes (each change is applied to it too, evaluating the selector on the changed
devices only), and evicted when more than ``MAX_VIEWS`` selectors are in use.

An ``Inventory`` built by ``build_inventory`` gets its ``FleetGroups`` on first use
(``inventory.fleet_groups``), kept by the inventories ``with_allocation`` derives from it.
"""

from __future__ import annotations

from collections import OrderedDict

from controller.planner.devices import Device
from controller.planner.groups import ClassGroups, Order
from controller.planner.selectors import SelectorCache
from shared.cel import CelError, Selector

MAX_VIEWS = 32
_SELECTORS = SelectorCache()  # results are a pure function of (expression, device): kept for good


def device_order(device: Device) -> Order:
    """The order of the inventory's device tuple when it is sorted by (node, key), as the ledger's is."""
    return (device.node, *device.key, 0)


class FleetGroups:
    """Not thread-safe: the ledger changes and reads it under its lock."""

    def __init__(self) -> None:
        self.version = 0
        self._classes: dict[str, ClassGroups] = {}
        self._views: OrderedDict[tuple[str, str], tuple[Selector, ClassGroups]] = OrderedDict()

    def add(self, device: Device, order: Order) -> None:
        self.version += 1
        for name in device.device_classes:
            self._classes.setdefault(name, ClassGroups()).add(device, order)
        for (name, _), (selector, view) in self._views.items():
            if name in device.device_classes:
                _admit(view, selector, device, order)

    def remove(self, device: Device) -> None:
        self.version += 1
        for name in device.device_classes:
            groups = self._classes.get(name)
            if groups is not None:
                groups.remove(device.key)
        for (name, _), (_, view) in self._views.items():
            if name in device.device_classes:
                view.remove(device.key)

    def view(self, device_class: str, selector: Selector | None) -> ClassGroups:
        """The class's devices that pass ``selector`` (all of them when None), grouped."""
        base = self._classes.get(device_class) or ClassGroups()
        if selector is None:
            return base
        key = (device_class, selector.expression)
        found = self._views.get(key)
        if found is not None:
            self._views.move_to_end(key)
            return found[1]
        view = base.filtered(lambda device: _judge(selector, device))
        self._views[key] = (selector, view)
        if len(self._views) > MAX_VIEWS:
            self._views.popitem(last=False)
        return view


def _judge(selector: Selector, device: Device) -> str | bool:
    """Whether the device passes the class selector, or the message when the selector fails on it."""
    try:
        return _SELECTORS.matches(selector, device.view)
    except CelError as e:
        return f"`spec.placement.selector` of the class fails on {device.label}: {e}."


def _admit(view: ClassGroups, selector: Selector, device: Device, order: Order) -> None:
    verdict = _judge(selector, device)
    if isinstance(verdict, str):
        view.remove(device.key)
        view.fail(device, order, verdict)
        return
    if verdict:
        view.add(device, order)
    else:
        view.remove(device.key)
