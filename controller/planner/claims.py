"""The ledger's allocated ResourceClaims, each with the order that owns it, so an order's claims are
found without scanning every claim. Pure.

A claim's order is its order label (``shared.names.order_of``: the resource claim controller copies
it from the order's ResourceClaimTemplate) in the claim's namespace; claim names are the pods' and
say nothing reliable about the order. Only allocated claims are kept (an unallocated one takes
nothing and covers nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from controller.planner.inventory import Device, DeviceKey
from controller.planner.shapes import ClaimShape, shape_of
from controller.planner.uses import Reservation, Use, claim_use
from shared.names import order_of

ClaimKey = tuple[str, str]  # (namespace, name)
OrderKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True, slots=True)
class Claim:
    use: Use
    order: OrderKey | None  # from the order label; None: no order's claim
    shape: ClaimShape | None  # what it asks for (``controller.planner.shapes``)
    live: bool  # not being deleted
    pods: tuple[str, ...] = ()  # the pods it is reserved for (``status.reservedFor``)


def read_claim(obj: Mapping[str, Any], known: Mapping[DeviceKey, Device]) -> Claim:
    meta = obj.get("metadata") or {}
    owner = order_of(obj)
    return Claim(
        use=claim_use(obj, known),
        order=(str(meta.get("namespace", "")), owner) if owner else None,
        shape=shape_of((obj.get("spec") or {}).get("devices")),
        live=not meta.get("deletionTimestamp"),
        pods=tuple(
            str(ref.get("name"))
            for ref in (obj.get("status") or {}).get("reservedFor") or ()
            if ref.get("resource") == "pods" and ref.get("name")
        ),
    )


class ClaimBook:
    """Allocated claims by name, and the names of each order's. Not thread-safe (the ledger's lock)."""

    def __init__(self) -> None:
        self._claims: dict[ClaimKey, Claim] = {}
        self._by_order: dict[OrderKey, set[str]] = {}

    def put(self, key: ClaimKey, claim: Claim | None) -> Claim | None:
        """Record the claim (None, or one that takes nothing: forget it); returns what it replaced."""
        before = self._claims.pop(key, None)
        if before is not None and before.order is not None:
            names = self._by_order[before.order]
            names.discard(key[1])
            if not names:
                del self._by_order[before.order]
        if claim is not None and claim.use.keys:
            self._claims[key] = claim
            if claim.order is not None:
                self._by_order.setdefault(claim.order, set()).add(key[1])
        return before

    def get(self, key: ClaimKey) -> Claim | None:
        return self._claims.get(key)

    def items(self) -> Iterator[tuple[ClaimKey, Claim]]:
        return iter(self._claims.items())

    def names_of(self, order: OrderKey) -> frozenset[str]:
        """The names of the order's allocated claims (in the order's namespace)."""
        return frozenset(self._by_order.get(order, ()))

    def of_order(self, order: OrderKey) -> list[tuple[str, Claim]]:
        return [(n, self._claims[(order[0], n)]) for n in self._by_order.get(order, ())]


def covers(reservation: Reservation, mine: Iterable[tuple[str, Claim]]) -> bool:
    """Whether an order's allocated claims (``mine``) stand for its reservation, so it can be
    settled at once. Only claims of the reservation's plan count: live, asking for what the plan's
    claim template asks for (its ``shape``; a plan the ledger does not know the shape of is
    settled only by ``settle``), and allocated after the reservation was made (not ``prior``: an
    earlier plan's claims never settle a new plan's place). They stand for it when they hold every
    reserved device, or, the scheduler having chosen other devices, at least as many whole devices
    and as many shares as the reservation counts on: the whole plan's devices (a multi-node plan
    reserves every pod's devices, the leader's and the workers' claims each hold one pod's), not
    one pod's of several."""
    if reservation.shape is None:
        return False
    claims = [
        c.use for name, c in mine if c.live and c.shape == reservation.shape and name not in reservation.prior
    ]
    held = frozenset().union(*(u.keys for u in claims))
    if reservation.use.keys <= held:
        return True
    whole = sum(len(u.whole) for u in claims)
    shares = sum(len(u.shared) for u in claims)
    return len(reservation.use.whole) <= whole and len(reservation.use.shared) <= shares


def over_committed(claims: ClaimBook, reservations: Mapping[OrderKey, Reservation]) -> list[DeviceKey]:
    """Devices booked twice (must always be empty): taken whole by two claims, by two
    reservations, or by a reservation and another order's claim.

    Until its settle (at the allocation when ``covers`` says so, else at the order's next
    reconcile), an order's claims and its reservation may stand for the same place, so neither of
    these is counted (the order's claims: those with its order label, found through the book, not
    by a scan of every claim):
    - a reservation overlapping the order's own claim;
    - a reservation whose order's own claims already hold as many whole devices as it reserves:
      the scheduler put them elsewhere (a plan names a product, not a device), and another
      order's claim may take the reserved device before settle frees it;
    - a reservation overlapping the claims it preempts (``Reservation.preempts``): the controller
      evicts their pods, and the overlap ends when those claims are deleted."""
    out: set[DeviceKey] = set()
    seen: dict[DeviceKey, OrderKey | None] = {}  # device -> the order of the claim on it
    seen_claim: dict[DeviceKey, ClaimKey] = {}  # device -> the claim on it
    for key, claim in claims.items():
        out.update(k for k in claim.use.whole if k in seen)
        seen.update(dict.fromkeys(claim.use.whole, claim.order))
        seen_claim.update(dict.fromkeys(claim.use.whole, key))
    booked: set[DeviceKey] = set()
    for order, reservation in reservations.items():
        wanted = len(reservation.use.whole)
        own = sum(len(c.use.whole) for _, c in claims.of_order(order))
        if wanted and own >= wanted:
            continue  # superseded by the order's own allocation; settle drops it
        for k in reservation.use.whole:
            if k in booked:
                out.add(k)
            booked.add(k)
            if k in seen and seen[k] != order and seen_claim[k] not in reservation.preempts:
                out.add(k)
    return sorted(out)
