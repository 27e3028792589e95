"""Priority and preemption: which devices an order could take from lower-priority orders. Pure.

A class's ``scaling.priorityClassName`` is rendered as its orders' pods' ``priorityClassName``
(``controller/render/pod.py``). An order's priority is that PriorityClass's ``value``; a name
that is not set or whose PriorityClass does not exist counts as 0, the value Kubernetes gives a
pod without a priority class when no class is ``globalDefault`` (``priority_value``).

What a preemptor of priority P could take (``victims``): the replicas of other orders whose
priority is strictly lower than P, each whole. A replica is the unit the scheduler evicts: one
pod, so every device of its claim (a tensor-parallel replica's devices go together: taking one
kills the replica); a multi-node replica is every pod of its group (the caller says which claims
go together, ``replica_of``). Never the order's own replicas, never a claim that no order owns
(another workload's pod: its priority is not ours to read), never a claim being deleted (it
frees its devices anyway). Lowest priority first, as the scheduler picks its victims.

Whether the planner may count them as available is a fact about the kube-scheduler, not a
choice: it is measured by tests/integration/test_dra_preemption.py. kube-scheduler v1.37.2 does
NOT preempt for DRA devices (its DRA filter refuses a node whose devices are taken as
``UnschedulableAndUnresolvable``, and the plugin has no ``RemovePod`` for the preemption dry run),
so ``SCHEDULER_PREEMPTS_FOR_DRA`` is False and ``available_to`` (the scheduler's preemption)
returns the view unchanged. The controller preempts instead: ``Ledger.take``, given the order's
priority, plans again on ``without(view, victims[:n])`` (lowest first, one more each time) when
nothing fits the view, records the claims the plan counts on (``Reservation.preempts``), and the
order's reconcile evicts the pods those claims are reserved for through the Eviction API
(``booking.evictions``, ``act.Actor._evict``; a deleted victim pod frees its device in well under a
second). A serving single-node order whose autoscaler wants more replicas than the free devices
hold counts and evicts its victims the same way, without a reservation (``headroom.with_preemption``,
``booking.room``, ``booking.scale_up_evictions``). Multi-node victims are taken claim by claim (the claim book does not know a claim's pod
group): only single-node replicas are preempted whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from controller.planner.claims import Claim, ClaimKey, OrderKey
from controller.planner.inventory import Inventory
from controller.planner.uses import Use

# Measured on kube-scheduler v1.37.2 (tests/integration/test_dra_preemption.py): it never preempts
# a pod to free a DRA device. Flip only with that test showing the scheduler does.
SCHEDULER_PREEMPTS_FOR_DRA: Final = False
DEFAULT_PRIORITY: Final = 0  # a pod without a PriorityClass, no class being globalDefault


def priority_value(name: str | None, values: Mapping[str, int]) -> int:
    """The value of PriorityClass ``name`` (``values``: name -> value, what the controller's
    PriorityClass informer holds); 0 when unnamed or missing."""
    if not name:
        return DEFAULT_PRIORITY
    return int(values.get(name, DEFAULT_PRIORITY))


def order_priorities(orders: Iterable[Mapping[str, Any]], values: Mapping[str, int]) -> dict[OrderKey, int]:
    """Each order's priority, from the class's priority class its status records
    (``status.constraints.priorityClassName``, as ``wiring.waiting_orders`` ranks them)."""
    out: dict[OrderKey, int] = {}
    for o in orders:
        meta = o.get("metadata") or {}
        prio = ((o.get("status") or {}).get("constraints") or {}).get("priorityClassName")
        out[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = priority_value(prio, values)
    return out


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica of an order and everything its claims hold: what preemption takes or leaves."""

    order: OrderKey
    name: str  # the claim's name, or the group's a multi-node replica's claims share
    priority: int
    use: Use


def claim_replica(key: ClaimKey) -> str:
    """The replica a claim belongs to when each claim is its own pod's (a single-node plan: one
    claim per pod, every device of the replica in it)."""
    return key[1]


def replicas(
    claims: Iterable[tuple[ClaimKey, Claim]],
    priority_of: Callable[[OrderKey], int],
    replica_of: Callable[[ClaimKey], str] = claim_replica,
) -> tuple[Replica, ...]:
    """The replicas the allocated claims make up (the ledger's ``ClaimBook.items()``), with their
    order's priority. Claims no order owns and claims being deleted are left out."""
    grouped: dict[tuple[OrderKey, str], list[Use]] = {}
    for key, claim in claims:
        if claim.order is None or not claim.live or not claim.use.keys:
            continue
        grouped.setdefault((claim.order, replica_of(key)), []).append(claim.use)
    return tuple(
        Replica(order, name, priority_of(order), _joined(uses))
        for (order, name), uses in sorted(grouped.items())
    )


def victims(order: OrderKey, priority: int, held: Iterable[Replica]) -> tuple[Replica, ...]:
    """The replicas an order of ``priority`` could preempt: other orders', strictly lower, lowest
    first (then by order and name, so the answer is stable)."""
    out = [r for r in held if r.order != order and r.priority < priority]
    return tuple(sorted(out, key=lambda r: (r.priority, r.order, r.name)))


def preemptible_use(order: OrderKey, priority: int, held: Iterable[Replica]) -> Use:
    """Everything the order's victims hold, as one use (what the ledger's ``Usage.minus`` takes
    off the aggregate, like the order's own claims)."""
    return _joined([r.use for r in victims(order, priority, held)])


def without(view: Inventory, gone: Iterable[Replica]) -> Inventory:
    """The view as if the ``gone`` replicas' pods were deleted: their whole devices free (with the
    shared counters they consumed given back, and so their MIG relatives unblocked), their shares'
    memory free. The replicas must be taken from the same ledger state as the view (a whole device
    is one claim's); the order's own ``held`` devices are never touched."""
    whole: set[tuple[str, str, str]] = set()
    shares: dict[tuple[str, str, str], int] = {}
    for r in gone:
        whole |= r.use.whole
        for k, n in r.use.shared:
            shares[k] = shares.get(k, 0) + n
    freed = (whole & view.allocated) - view.held
    consumed = dict(view.consumed)
    for k, n in shares.items():
        if k in consumed:
            left = consumed[k] - n
            if left > 0:
                consumed[k] = left
            else:
                del consumed[k]
    counters = dict(view.counters)
    by_key = view.device_index().by_key
    for k in freed:
        device = by_key.get(k)
        for counter_set, counter, amount in device.consumes if device else ():
            ck = (k[0], k[1], counter_set, counter)
            if ck in counters:
                counters[ck] += amount
    return replace(view, allocated=view.allocated - freed, consumed=consumed, counters=counters)


def available_to(
    view: Inventory,
    order: OrderKey,
    priority: int,
    held: Iterable[Replica],
    *,
    preempts: bool = SCHEDULER_PREEMPTS_FOR_DRA,
) -> Inventory:
    """The inventory the planner may plan the order on: its view, plus what it could preempt when
    the scheduler preempts for DRA devices (``preempts``; measured False on v1.37.2, so by default
    the view itself: devices of lower-priority orders stay taken)."""
    if not preempts:
        return view
    return without(view, victims(order, priority, held))


def _joined(uses: Iterable[Use]) -> Use:
    whole: frozenset[tuple[str, str, str]] = frozenset()
    shared: list[tuple[tuple[str, str, str], int]] = []
    for u in uses:
        whole |= u.whole
        shared.extend(u.shared)
    return Use(whole, tuple(shared))
