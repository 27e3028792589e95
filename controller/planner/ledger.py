"""The capacity ledger: one per controller, fed by the informers, so no two orders book one place.

It holds every device the ResourceSlices publish and what takes it:

- **allocations** of ResourceClaims (what the scheduler has given out);
- **reservations**: places this controller planned for an order whose claims are not allocated
  yet, keyed by order and plan hash. A reservation is released when the order's claims are
  allocated (``settle``), when the order gets another plan (``take`` replaces it), or when the
  order is deleted (``release``).

``take`` runs the planner against the free view and books the answer in one critical section, so
two workers can never book the same device, MIG device or share. After a restart ``hold`` rebuilds
the reservation of an order from the plan it has in force, never from memory alone.

Updates are incremental: a ResourceSlice or claim event costs time in proportion to that object.
A slice that cannot be read is skipped and reported (``unreadable``), never fatal for the fleet.
``epoch`` grows whenever capacity grows (a device published that was not there before, an
allocation or reservation released), so an order that found nothing knows when trying again can
help.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from controller.planner.inventory import Device, DeviceKey, Inventory
from controller.planner.roster import Fleet
from controller.planner.slices import classify, parse_device_class, parse_slice
from controller.planner.usage import Usage
from controller.planner.uses import Reservation, Use, claim_use, use_of, with_devices
from shared.cel import Selector

__all__ = ["Ledger", "OrderKey", "Reservation", "Use", "use_of", "with_devices"]

Obj = Mapping[str, Any]
OrderKey = tuple[str, str]  # (namespace, name)
CounterKey = tuple[str, str, str, str]  # (driver, pool, counter set, counter)


@dataclass
class _Slices:
    devices: dict[str, tuple[Device, ...]] = field(default_factory=dict)  # slice name -> devices
    counters: dict[str, dict[CounterKey, Decimal]] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)  # slice name -> why


class Ledger:
    """Thread-safe. Informer handlers call ``on_*``; workers call ``take``/``hold``/``settle``."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._slices = _Slices()
        self._classes: dict[str, list[Selector]] = {}
        self._class_errors: dict[str, str] = {}
        self._claims: dict[tuple[str, str], Use] = {}
        self._claim_owner: dict[tuple[str, str], str] = {}  # claim -> the pod it was generated for
        self._reservations: dict[OrderKey, Reservation] = {}
        self._exhausted: dict[OrderKey, int] = {}
        self._epoch = 0
        self._fleet = Fleet()  # devices in order, their index and groups, changed with each slice
        self._all_counters: dict[CounterKey, Decimal] | None = None  # every slice's, same lifetime
        self._usage = Usage()  # every claim and reservation added up, read with the fleet's counters

    # ------------------------------------------------------------------ informer feed

    @property
    def epoch(self) -> int:
        return self._epoch

    def on_device_class(self, obj: Obj, *, deleted: bool = False) -> None:
        name = str(obj.get("metadata", {}).get("name", ""))
        with self._lock:
            self._classes.pop(name, None)
            self._class_errors.pop(name, None)
            if not deleted:
                selectors, error = parse_device_class(obj)
                self._classes[name] = selectors
                if error:
                    self._class_errors[name] = error
            self._reclassify()

    def on_slice(self, obj: Obj, *, deleted: bool = False) -> None:
        name = str(obj.get("metadata", {}).get("name", ""))
        with self._lock:
            before = {(d.key, d.memory_bytes) for d in self._slices.devices.get(name, ())}
            for d in self._slices.devices.get(name, ()):
                self._fleet.remove(d)
            self._slices.devices.pop(name, None)
            self._slices.counters.pop(name, None)
            self._slices.unreadable.pop(name, None)
            if not deleted:
                parsed = parse_slice(obj, self._classes, self._class_errors)
                if isinstance(parsed, str):
                    self._slices.unreadable[name] = parsed
                else:
                    devices, counters = parsed
                    self._slices.devices[name] = devices
                    for d in devices:
                        self._fleet.add(d)
                    self._slices.counters[name] = counters
            self._all_counters = None
            if {(d.key, d.memory_bytes) for d in self._slices.devices.get(name, ())} - before:
                self._epoch += 1  # a device, or more memory on one, that was not there before

    def on_claim(self, obj: Obj, *, deleted: bool = False) -> bool:
        """Record a claim's allocation. Returns whether capacity was freed (waiting orders may fit)."""
        meta = obj.get("metadata", {})
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        with self._lock:
            use = Use() if deleted else claim_use(obj, self._fleet.roster.index().by_key)
            before = self._claims.pop(key, Use())
            self._usage.remove(before, claim=True)
            if use.keys:
                self._claims[key] = use
                self._usage.add(use, claim=True)
            owners = [o.get("name") for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod"]
            if owners and not deleted:
                self._claim_owner[key] = str(owners[0])
            elif deleted:
                self._claim_owner.pop(key, None)
            freed = bool(before.keys - use.keys)
            if freed:
                self._epoch += 1
            return freed

    # ------------------------------------------------------------------ planning

    def view(self, order: OrderKey, own_claims: Iterable[str] = ()) -> Inventory:
        """The inventory as the order sees it: other orders' reservations count as allocations, its
        own claims as held (api.md: the place an order holds is not offered back to it)."""
        with self._lock:
            return self._view(order, frozenset(own_claims))

    def take(
        self,
        order: OrderKey,
        own_claims: Iterable[str],
        plan: Callable[[Inventory], tuple[str | None, Use]],
    ) -> None:
        """Run ``plan`` on the order's view and book what it returns, atomically.

        ``plan`` returns the plan hash and the devices it counts on (``None``: nothing planned;
        the order's previous reservation is released).
        """
        with self._lock:
            plan_hash, use = plan(self._view(order, frozenset(own_claims)))
            self._reserve(order, plan_hash, use)

    def hold(self, order: OrderKey, plan_hash: str, pick: Callable[[Inventory], Use]) -> None:
        """Rebuild the reservation of a plan in force whose claims are not allocated (a restart),
        unless the order already holds one for that plan."""
        with self._lock:
            current = self._reservations.get(order)
            if current is not None and current.plan_hash == plan_hash:
                return
            self._reserve(order, plan_hash, pick(self._view(order, frozenset())))

    def settle(self, order: OrderKey) -> None:
        """The order's claims are allocated: the allocation now stands for the reservation.

        The scheduler may have allocated other devices than the ones reserved (a plan names a
        product, not a device): reserved devices that no claim holds are free again, so capacity grew.
        """
        with self._lock:
            old = self._reservations.pop(order, None)
            if old is None:
                return
            self._usage.remove(old.use)
            if any(not self._usage.claimed(k) for k in old.use.keys):
                self._epoch += 1

    def release(self, order: OrderKey) -> None:
        """The order is gone, or plans nothing: its reservation is freed."""
        with self._lock:
            old = self._reservations.pop(order, None)
            if old is not None:
                self._usage.remove(old.use)
                self._epoch += 1
            self._exhausted.pop(order, None)

    def reserved(self, order: OrderKey) -> Reservation | None:
        with self._lock:
            return self._reservations.get(order)

    def mark_exhausted(self, order: OrderKey) -> int:
        """Remember the epoch at which every device class failed the order; returns it."""
        with self._lock:
            return self._exhausted.setdefault(order, self._epoch)

    def exhausted_since(self, order: OrderKey) -> int | None:
        with self._lock:
            return self._exhausted.get(order)

    def clear_exhausted(self, order: OrderKey) -> None:
        with self._lock:
            self._exhausted.pop(order, None)

    # ------------------------------------------------------------------ reports

    def unreadable(self) -> dict[str, str]:
        """ResourceSlices skipped because they cannot be read, with why."""
        with self._lock:
            return dict(self._slices.unreadable)

    def over_committed(self) -> list[DeviceKey]:
        """Devices booked twice (must always be empty): taken whole by two claims, by two
        reservations, or by a reservation and another order's claim.

        Between an order's allocation and its ``settle`` (the order's next reconcile), its claims
        and its reservation stand for the same place, so neither of these is counted:
        - a reservation overlapping the order's own claim (claims are named after the order's
          pods, ``<order>-...``);
        - a reservation whose order's own claims already hold as many whole devices as it reserves:
          the scheduler put them elsewhere (a plan names a product, not a device), and another
          order's claim may take the reserved device before ``settle`` frees it."""
        with self._lock:
            out: set[DeviceKey] = set()
            seen: dict[DeviceKey, tuple[str, str]] = {}
            by_namespace: dict[str, list[tuple[str, int]]] = {}  # claim name, whole devices
            for (ns, name), use in self._claims.items():
                out.update(k for k in use.whole if k in seen)
                seen.update(dict.fromkeys(use.whole, (ns, name)))
                by_namespace.setdefault(ns, []).append((name, len(use.whole)))
            booked: set[DeviceKey] = set()
            for (ns, order), reservation in self._reservations.items():
                wanted = len(reservation.use.whole)
                own = sum(n for name, n in by_namespace.get(ns, ()) if name.startswith(f"{order}-"))
                if wanted and own >= wanted:
                    continue  # superseded by the order's own allocation; settle drops it
                for k in reservation.use.whole:
                    if k in booked:
                        out.add(k)
                    booked.add(k)
                    claim = seen.get(k)
                    if claim is not None and not (claim[0] == ns and claim[1].startswith(f"{order}-")):
                        out.add(k)
            return sorted(out)

    def device_count(self) -> int:
        with self._lock:
            return len(self._fleet.roster.devices())

    # ------------------------------------------------------------------ internals

    def _reserve(self, order: OrderKey, plan_hash: str | None, use: Use) -> None:
        old = self._reservations.pop(order, None)
        if old is not None:
            self._usage.remove(old.use)
        if plan_hash is not None and use.keys:
            self._reservations[order] = Reservation(plan_hash, use)
            self._usage.add(use)
        if old is not None and old.use.keys - use.keys:
            self._epoch += 1

    def _reclassify(self) -> None:
        """A DeviceClass changed: every device's class membership is computed again (rare)."""
        for name, devices in list(self._slices.devices.items()):
            self._slices.devices[name] = tuple(
                classify(d, self._classes, self._class_errors) for d in devices
            )
        self._fleet = Fleet(tuple(d for ds in self._slices.devices.values() for d in ds))
        self._all_counters = None  # and the usage reads the new fleet's devices
        self._epoch += 1

    def _view(self, order: OrderKey, own_claims: frozenset[str]) -> Inventory:
        """The aggregate usage less the order's own claims (held) and reservation: in proportion to
        those, not to every claim and reservation (``tests/unit/planner/ledger_oracle.py`` adds up
        every other use instead, as this did before)."""
        ns = order[0]
        roster = self._fleet.roster
        if self._all_counters is None:
            self._all_counters = {k: v for c in self._slices.counters.values() for k, v in c.items()}
            self._usage.refleet(self._all_counters, roster.index().by_key)
        own = [u for u in (self._claims.get((ns, c)) for c in own_claims) if u is not None]
        held = frozenset().union(*(u.keys for u in own))
        reservation = self._reservations.get(order)
        taken = self._usage.minus(own if reservation is None else [*own, reservation.use])
        return Inventory(
            devices=roster.devices(),
            device_classes=frozenset(self._classes),
            device_class_errors=dict(self._class_errors),
            allocated=taken.allocated,
            consumed=taken.consumed,
            held=held,
            counters=taken.counters,
            index=roster.index(),
            groups=self._fleet.groups,
            groups_version=self._fleet.groups.version,
        )
