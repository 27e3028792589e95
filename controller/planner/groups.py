"""The devices of one device class (and class selector), grouped the way placement searches them.

A ``ClassGroups`` changes only when devices are added or removed (slice or DeviceClass events),
never per order, and each change costs time in proportion to the devices changed:

- Exclusive: whole devices (``type`` not ``mig``) by (product, memory, compute capability), and
  within such a group the devices of each node sorted by name, with, for each power of two ``k``,
  the nodes (sorted by name) that have at least ``k`` of them.
- MIG: MIG devices by (memory, product, compute capability), sorted by (node, name).
- TimeSlicing / MPS: multiple-allocation devices by (product, memory, compute capability, the
  driver's ``sharingStrategy``, the driver), sorted by (node, name).

Every device carries an ``Order``: its place in the inventory's device order, the last tie-break
of today's candidate sort (see ``search``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from controller.planner.devices import Device, DeviceKey
from shared.cel import Semver

Order = tuple[str, str, str, str, int]  # (node, driver, pool, name, 0) or ("", "", "", "", position)
ExclusiveKey = tuple[str, int, Semver | None]  # product, memory, compute capability
MigKey = tuple[int, str, Semver | None]  # memory, product, compute capability
SharedKey = tuple[str, int, Semver | None, str | None, str]  # ... the sharing strategy (lowercased), driver
Entry = tuple[str, str, Order, DeviceKey]  # (node, name, order, key) or (name, "", order, key)
K = TypeVar("K")


@dataclass
class ExclusiveGroup:
    nodes: dict[str, list[Entry]] = field(default_factory=dict)  # node -> sorted (name, "", order, key)
    at_least: dict[int, list[str]] = field(default_factory=dict)  # power of two k -> sorted node names
    size: int = 0

    def add(self, node: str, entry: Entry) -> None:
        entries = self.nodes.setdefault(node, [])
        insort(entries, entry)
        self.size += 1
        if _power_of_two(len(entries)):
            insort(self.at_least.setdefault(len(entries), []), node)

    def remove(self, node: str, entry: Entry) -> None:
        entries = self.nodes[node]
        count = len(entries)
        del entries[bisect_left(entries, entry)]
        self.size -= 1
        if _power_of_two(count):
            names = self.at_least[count]
            del names[bisect_left(names, node)]
            if not names:
                del self.at_least[count]
        if not entries:
            del self.nodes[node]


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass
class ClassGroups:
    """One device class's devices (those that pass one selector, for a class selector's view)."""

    members: dict[DeviceKey, tuple[Device, Order]] = field(default_factory=dict)
    exclusive: dict[ExclusiveKey, ExclusiveGroup] = field(default_factory=dict)
    mig: dict[MigKey, list[Entry]] = field(default_factory=dict)
    shared: dict[SharedKey, list[Entry]] = field(default_factory=dict)
    errors: dict[DeviceKey, tuple[Order, str]] = field(default_factory=dict)  # selector failures

    def add(self, device: Device, order: Order) -> None:
        if device.key in self.members:
            self.remove(device.key)
        self.members[device.key] = (device, order)
        cap, mem, product = device.compute_capability, device.memory_bytes, device.product_name
        if device.kind == "mig":
            insort(
                self.mig.setdefault((mem, product, cap), []), (device.node, device.name, order, device.key)
            )
            return
        self.exclusive.setdefault((product, mem, cap), ExclusiveGroup()).add(
            device.node, (device.name, "", order, device.key)
        )
        if device.multiple_allocations:
            entry = (device.node, device.name, order, device.key)
            insort(
                self.shared.setdefault((product, mem, cap, sharing_strategy(device), device.key[0]), []),
                entry,
            )

    def remove(self, key: DeviceKey) -> None:
        self.errors.pop(key, None)
        found = self.members.pop(key, None)
        if found is None:
            return
        device, order = found
        cap, mem, product = device.compute_capability, device.memory_bytes, device.product_name
        if device.kind == "mig":
            _drop(self.mig, (mem, product, cap), (device.node, device.name, order, key))
            return
        group = self.exclusive[(product, mem, cap)]
        group.remove(device.node, (device.name, "", order, key))
        if not group.size:
            del self.exclusive[(product, mem, cap)]
        if device.multiple_allocations:
            _drop(
                self.shared,
                (product, mem, cap, sharing_strategy(device), device.key[0]),
                (device.node, device.name, order, key),
            )

    def filtered(self, judge: Callable[[Device], str | bool]) -> ClassGroups:
        """The groups of the devices ``judge`` accepts (True); a string is why it failed on one.

        Built from these groups in their order, without sorting again."""
        verdicts = {k: judge(d) for k, (d, _) in self.members.items()}
        out = ClassGroups(members={k: m for k, m in self.members.items() if verdicts[k] is True})
        out.errors = {k: (self.members[k][1], v) for k, v in verdicts.items() if isinstance(v, str)}
        for gk, group in self.exclusive.items():
            kept = ExclusiveGroup()
            for node, entries in group.nodes.items():
                chosen = [e for e in entries if verdicts[e[3]] is True]
                if chosen:
                    kept.nodes[node] = chosen
                    kept.size += len(chosen)
            if kept.size:
                for node in sorted(kept.nodes):
                    k = 1
                    while k <= len(kept.nodes[node]):
                        kept.at_least.setdefault(k, []).append(node)
                        k *= 2
                out.exclusive[gk] = kept
        for source, target in ((self.mig, out.mig), (self.shared, out.shared)):
            for key, entries in source.items():
                chosen = [e for e in entries if verdicts[e[3]] is True]
                if chosen:
                    target[key] = chosen  # type: ignore[index]
        return out

    def fail(self, device: Device, order: Order, message: str) -> None:
        """The class selector failed on ``device``: remembered, the device is not a member."""
        self.errors[device.key] = (order, message)

    def first_error(self) -> tuple[Order, str] | None:
        return min(self.errors.values(), default=None)


def _drop(groups: dict[K, list[Entry]], key: K, entry: Entry) -> None:
    entries = groups[key]
    del entries[bisect_left(entries, entry)]
    if not entries:
        del groups[key]


def sharing_strategy(device: Device) -> str | None:
    """The driver's ``sharingStrategy`` attribute, lowercased (None: not published, allows any)."""
    strategy = device.view.attributes.get(device.key[0], {}).get("sharingStrategy")
    return strategy.lower() if isinstance(strategy, str) else None
