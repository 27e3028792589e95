"""The capacity ledger: one per controller, fed by the informers, so no two orders book one place.

It holds every device the ResourceSlices publish and what takes it:

- **allocations** of ResourceClaims (what the scheduler has given out);
- **reservations**: places this controller planned for an order whose claims are not allocated
  yet, keyed by order and plan hash. A reservation is released when the order's claims are
  allocated (``settle``, or at once in ``on_claim``: ``claims.covers``), when the order gets another
  plan (``take`` replaces it), when the order is deleted, or when its pods could not be created
  within the claim grace (``release``; ``controller.lapse``).

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
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, TypeVar

from controller.planner import preemption
from controller.planner.claims import ClaimBook, ClaimKey, OrderKey, covers, over_committed, read_claim
from controller.planner.inventory import Device, DeviceKey, Inventory
from controller.planner.roster import Fleet
from controller.planner.shapes import ClaimShape, shape_of
from controller.planner.slices import classify, parse_device_class, parse_slice
from controller.planner.usage import Usage
from controller.planner.uses import Reservation, Use, use_of, with_devices
from shared.cel import Selector
from shared.names import order_of

__all__ = ["ClaimShape", "Ledger", "OrderKey", "Reservation", "Use", "shape_of", "use_of", "with_devices"]

Obj = Mapping[str, Any]
CounterKey = tuple[str, str, str, str]  # (driver, pool, counter set, counter)
T = TypeVar("T")


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
        self._claims = ClaimBook()  # allocated claims, and each order's (its order label)
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
        """Record a claim's allocation, and settle its order's reservation once the order's claims
        stand for it (``claims.covers``). Returns whether capacity was freed (waiting orders may fit)."""
        meta = obj.get("metadata", {})
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        with self._lock:
            claim = None if deleted else read_claim(obj, self._fleet.roster.index().by_key)
            before = self._claims.put(key, claim)
            use = claim.use if claim is not None else Use()
            if before is not None:
                self._usage.remove(before.use, claim=True)
            if use.keys:
                self._usage.add(use, claim=True)
            freed = bool((before.use.keys if before else frozenset()) - use.keys)
            if freed:
                self._epoch += 1
            if deleted:
                self._forget_prior(key, order_of(obj))
            order = claim.order if claim is not None and claim.live and use.keys else None
            reservation = self._reservations.get(order) if order is not None else None
            if order and reservation and covers(reservation, self._claims.of_order(order)):
                freed = self._settle(order) or freed
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
        shape: Callable[[], ClaimShape | None] = lambda: None,
        *,
        priority: int | None = None,
        priority_of: Callable[[OrderKey], int] | None = None,
    ) -> None:
        """Run ``plan`` on the order's view and book what it returns, atomically.

        ``plan`` returns the plan hash and the devices it counts on (``None``: nothing planned;
        the order's previous reservation is released). ``shape``, asked after ``plan``: what the
        plan's claims will ask for (``shapes.shape_of`` of its claim template's devices); without
        it only ``settle`` drops the reservation.

        Preemption (``priority`` and ``priority_of`` given, the controller evicts): when nothing
        fits the view, ``plan`` runs again on the view less the replicas of strictly lower-priority
        orders (``preemption.victims``), taking them lowest first, one more each time, until it
        fits or none is left; the reservation records the claims whose devices the plan counts on
        (``Reservation.preempts``), never more.
        """
        with self._lock:
            view = self._view(order, frozenset(own_claims))
            plan_hash, use = plan(view)
            taken: frozenset[ClaimKey] = frozenset()
            if plan_hash is None and priority is not None and priority_of is not None:
                held = preemption.replicas(self._claims.items(), priority_of)
                victims = preemption.victims(order, priority, held)
                if victims and plan(preemption.without(view, victims))[0] is not None:
                    for n in range(1, len(victims) + 1):
                        plan_hash, use = plan(preemption.without(view, victims[:n]))
                        if plan_hash is not None:
                            taken = frozenset(
                                (r.order[0], r.name) for r in victims[:n] if r.use.keys & use.keys
                            )
                            break
            self._reserve(order, plan_hash, use, shape() if plan_hash is not None else None, taken)

    def preempted(self, order: OrderKey) -> tuple[tuple[ClaimKey, OrderKey | None, tuple[str, ...]], ...]:
        """The claims the order's reservation preempts that are still there: (claim, its order,
        the pods it is reserved for), the pods to evict."""
        with self._lock:
            reservation = self._reservations.get(order)
            return self.holders(reservation.preempts if reservation else ())

    def holders(
        self, claims: Iterable[ClaimKey]
    ) -> tuple[tuple[ClaimKey, OrderKey | None, tuple[str, ...]], ...]:
        """Of ``claims``, those still there: (claim, its order, the pods it is reserved for)."""
        with self._lock:
            out = []
            for key in sorted(claims):
                claim = self._claims.get(key)
                if claim is not None and claim.live:
                    out.append((key, claim.order, claim.pods))
            return tuple(out)

    def held_replicas(self, priority_of: Callable[[OrderKey], int]) -> tuple[preemption.Replica, ...]:
        """Every order's replicas the allocated claims make up, with their priority
        (``preemption.replicas``). Called inside ``look``'s ``answer`` (the lock is reentrant), they
        are of the same ledger state as its inventory, as ``preemption.without`` needs."""
        with self._lock:
            return preemption.replicas(self._claims.items(), priority_of)

    def look(
        self, order: OrderKey, answer: Callable[[Inventory, frozenset[str], Reservation | None], T]
    ) -> T:
        """Run ``answer`` under the lock on the fleet as it stands: every claim and reservation taken,
        the order's own too (what nobody holds is free), with the names of the order's allocated
        claims and its reservation. Books nothing (``headroom``: the room for more replicas)."""
        with self._lock:
            return answer(
                self._view(None, frozenset()), self._claims.names_of(order), self._reservations.get(order)
            )

    def hold(
        self,
        order: OrderKey,
        plan_hash: str,
        pick: Callable[[Inventory], Use],
        shape: ClaimShape | None = None,
    ) -> None:
        """Rebuild the reservation of a plan in force whose claims are not allocated (a restart),
        unless the order already holds one for that plan."""
        with self._lock:
            current = self._reservations.get(order)
            if current is not None and current.plan_hash == plan_hash:
                return
            self._reserve(order, plan_hash, pick(self._view(order, frozenset())), shape)

    def settle(self, order: OrderKey) -> None:
        """The order's claims are allocated: the allocation now stands for the reservation.

        The scheduler may have allocated other devices than the ones reserved (a plan names a
        product, not a device): reserved devices that no claim holds are free again, so capacity grew.
        """
        with self._lock:
            self._settle(order)

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
        """Devices booked twice (must always be empty): ``claims.over_committed``."""
        with self._lock:
            return over_committed(self._claims, self._reservations)

    def device_count(self) -> int:
        with self._lock:
            return len(self._fleet.roster.devices())

    # ------------------------------------------------------------------ internals

    def _reserve(
        self,
        order: OrderKey,
        plan_hash: str | None,
        use: Use,
        shape: ClaimShape | None,
        preempts: frozenset[ClaimKey] = frozenset(),
    ) -> None:
        old = self._reservations.pop(order, None)
        if old is not None:
            self._usage.remove(old.use)
        if plan_hash is not None and use.keys:
            self._reservations[order] = Reservation(
                plan_hash, use, shape, self._claims.names_of(order), preempts
            )
            self._usage.add(use)
        if old is not None and old.use.keys - use.keys:
            self._epoch += 1

    def _forget_prior(self, claim: tuple[str, str], order: str | None) -> None:
        """A deleted claim stands for no earlier plan any more: a claim of that name is a new one."""
        reservation = self._reservations.get((claim[0], order)) if order else None
        if order and reservation is not None and claim[1] in reservation.prior:
            self._reservations[(claim[0], order)] = replace(reservation, prior=reservation.prior - {claim[1]})

    def _settle(self, order: OrderKey) -> bool:
        """Drop the order's reservation; whether that freed capacity (a reserved device no claim holds)."""
        old = self._reservations.pop(order, None)
        if old is None:
            return False
        self._usage.remove(old.use)
        if any(not self._usage.claimed(k) for k in old.use.keys):
            self._epoch += 1
            return True
        return False

    def _reclassify(self) -> None:
        """A DeviceClass changed: every device's class membership is computed again (rare)."""
        for name, devices in list(self._slices.devices.items()):
            self._slices.devices[name] = tuple(
                classify(d, self._classes, self._class_errors) for d in devices
            )
        self._fleet = Fleet(tuple(d for ds in self._slices.devices.values() for d in ds))
        self._all_counters = None  # and the usage reads the new fleet's devices
        self._epoch += 1

    def _view(self, order: OrderKey | None, own_claims: frozenset[str]) -> Inventory:
        """The aggregate usage less the order's own claims (held) and reservation: in proportion to
        those, not to every claim and reservation (``tests/unit/planner/ledger_oracle.py`` adds up
        every other use instead, as this did before). ``order`` None: nobody's view, every use taken."""
        roster = self._fleet.roster
        if self._all_counters is None:
            self._all_counters = {k: v for c in self._slices.counters.values() for k, v in c.items()}
            self._usage.refleet(self._all_counters, roster.index().by_key)
        ns = order[0] if order is not None else ""
        own = [c.use for c in (self._claims.get((ns, name)) for name in own_claims) if c is not None]
        held = frozenset().union(*(u.keys for u in own))
        reservation = self._reservations.get(order) if order is not None else None
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
