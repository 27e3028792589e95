"""The ledger's view of an order built from scratch, as ``Ledger._view`` did before it kept the usage
up to date per event: every other claim and reservation added up. A test oracle, not production."""

from __future__ import annotations

from decimal import Decimal

from controller.planner.inventory import DeviceKey, Inventory
from controller.planner.ledger import Ledger, OrderKey, Use


def view_from_scratch(ledger: Ledger, order: OrderKey, own_claims: frozenset[str]) -> Inventory:
    ns = order[0]
    allocated: set[DeviceKey] = set()
    held: set[DeviceKey] = set()
    consumed: dict[DeviceKey, int] = {}
    counters: dict[tuple[str, str, str, str], Decimal] = {
        k: v for c in ledger._slices.counters.values() for k, v in c.items()
    }
    roster = ledger._fleet.roster
    by_key = roster.index().by_key

    def take(use: Use) -> None:
        for k in use.whole:
            allocated.add(k)
            device = by_key.get(k)
            for counter_set, counter, amount in device.consumes if device else ():
                ck = (k[0], k[1], counter_set, counter)
                if ck in counters:
                    counters[ck] -= amount
        for k, n in use.shared:
            consumed[k] = consumed.get(k, 0) + n

    for (cns, cname), claim in ledger._claims.items():
        if cns == ns and cname in own_claims:
            held.update(claim.use.keys)
        else:
            take(claim.use)
    for other, reservation in ledger._reservations.items():
        if other != order:
            take(reservation.use)
    return Inventory(
        devices=roster.devices(),
        device_classes=frozenset(ledger._classes),
        device_class_errors=dict(ledger._class_errors),
        allocated=frozenset(allocated),
        consumed=consumed,
        held=frozenset(held),
        counters=counters,
    )
