"""What every claim and reservation of the ledger takes, added up and kept up to date per change, so
an order's view costs the order's own uses, not every use in the cluster. Pure.

A device may be in several uses (shares of one device, or a claim and the reservation it settles),
so the aggregate keeps counts, never sets. An order's view is the aggregate minus its own uses
(``minus``): the same ``allocated``, ``consumed`` and ``counters`` as adding up every other use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from controller.planner.inventory import Device, DeviceKey
from controller.planner.uses import Use

CounterKey = tuple[str, str, str, str]  # (driver, pool, counter set, counter)


@dataclass(frozen=True)
class Taken:
    """One order's view of the aggregate: what the other uses take."""

    allocated: frozenset[DeviceKey]
    consumed: dict[DeviceKey, int]
    counters: dict[CounterKey, Decimal]


class Usage:
    """The sum of uses. ``counters`` of the fleet and its devices (``by_key``) are read when set:
    call ``refleet`` whenever either changes (a slice or device class event)."""

    def __init__(self) -> None:
        self._whole: dict[DeviceKey, int] = {}  # device -> uses taking it whole
        self._consumed: dict[DeviceKey, int] = {}  # device -> bytes taken by shares
        self._shares: dict[DeviceKey, int] = {}  # device -> share entries naming it
        self._keys: dict[DeviceKey, int] = {}  # device -> claims naming it (``claimed``)
        self._counters: dict[CounterKey, Decimal] = {}  # every slice's counters
        self._left: dict[CounterKey, Decimal] | None = None  # counters less every whole use
        self._by_key: Mapping[DeviceKey, Device] = {}
        self._allocated: frozenset[DeviceKey] | None = None

    def refleet(self, counters: dict[CounterKey, Decimal], by_key: Mapping[DeviceKey, Device]) -> None:
        self._counters, self._by_key, self._left = counters, by_key, None

    def add(self, use: Use, *, claim: bool = False) -> None:
        self._change(use, 1)
        if claim:
            for k in use.keys:
                self._keys[k] = self._keys.get(k, 0) + 1

    def remove(self, use: Use, *, claim: bool = False) -> None:
        self._change(use, -1)
        if claim:
            for k in use.keys:
                _drop(self._keys, k, 1)

    def claimed(self, key: DeviceKey) -> bool:
        """Whether some claim names the device (whole or a share)."""
        return key in self._keys

    def minus(self, own: Iterable[Use]) -> Taken:
        """The aggregate without ``own`` (uses it holds: the order's own claims and reservation)."""
        if self._allocated is None:
            self._allocated = frozenset(self._whole)
        if self._left is None:
            self._left = dict(self._counters)
            for k, n in self._whole.items():
                for _ in range(n):
                    self._count(k, self._left, -1)
        allocated, consumed, counters = self._allocated, dict(self._consumed), dict(self._left)
        whole: dict[DeviceKey, int] = {}
        shares: dict[DeviceKey, int] = {}
        for use in own:
            for k in use.whole:
                whole[k] = whole.get(k, 0) + 1
                self._count(k, counters, 1)
            for k, n in use.shared:
                shares[k] = shares.get(k, 0) + 1
                consumed[k] -= n
        gone = [k for k, n in whole.items() if self._whole[k] == n]
        if gone:
            allocated = allocated.difference(gone)
        for k, n in shares.items():
            if self._shares[k] == n:
                del consumed[k]
        return Taken(allocated, consumed, counters)

    def _change(self, use: Use, sign: int) -> None:
        if use.whole:
            self._allocated = None
        for k in use.whole:
            if sign > 0:
                self._whole[k] = self._whole.get(k, 0) + 1
            else:
                _drop(self._whole, k, 1)
            if self._left is not None:
                self._count(k, self._left, -sign)
        for k, n in use.shared:
            if sign > 0:
                self._consumed[k] = self._consumed.get(k, 0) + n
                self._shares[k] = self._shares.get(k, 0) + 1
            else:
                self._consumed[k] -= n
                if _drop(self._shares, k, 1):
                    del self._consumed[k]

    def _count(self, key: DeviceKey, counters: dict[CounterKey, Decimal], sign: int) -> None:
        device = self._by_key.get(key)
        for counter_set, counter, amount in device.consumes if device else ():
            ck = (key[0], key[1], counter_set, counter)
            if ck in counters:
                counters[ck] = counters[ck] + amount if sign > 0 else counters[ck] - amount


def _drop(counts: dict[DeviceKey, int], key: DeviceKey, n: int) -> bool:
    """Take ``n`` from a count; True (and the key removed) when none is left."""
    left = counts[key] - n
    if left:
        counts[key] = left
        return False
    del counts[key]
    return True
