"""Event mapping: which reconcile keys an event on some object maps to, by the kind's ``Fanout``. Pure.

- an order event maps to itself; a class event to the class and every order of it;
- a recipe or DeviceClass event to every class and every order (recipes and device classes are few);
- an owned object (Deployment, Pod, the order's Secrets ...) to the order in its label;
- a capacity event (ResourceSlice, ResourceClaim) that freed or added capacity to the orders
  waiting for it (a place, or room for a blocked scale-up), by priority then age
  (``waiting_orders``); any other capacity event to nobody;
- a catalog Model/ClusterModel event to the orders that reference it;
- a Namespace event to the orders in it (its labels decide which classes its orders may use).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from controller.kinds import BY_CACHE, Cache, Fanout
from shared import reasons as r
from shared.names import order_of as order_of  # the order label rule (the ledger reads it too)

Obj = dict[str, Any]
Key = tuple[str, str, str]  # ("order", namespace, name) | ("class", "", name)

# Planned reasons of an order that waits for capacity: more capacity may change its answer.
WAITING = frozenset({r.NO_CAPACITY, r.RESOURCE_CLAIM_EXHAUSTED, r.LAUNCH_PLAN_IN_FORCE})


def order_key(obj: Obj) -> Key:
    return ("order", obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def _spec(order: Obj) -> Obj:
    spec = order.get("spec")
    return spec if isinstance(spec, dict) else {}


def _planned(order: Obj) -> Obj | None:
    for c in (order.get("status") or {}).get("conditions") or []:
        if c.get("type") == r.PLANNED:
            return c if isinstance(c, dict) else None
    return None


def unanswered(order: Obj) -> bool:
    """The order has no Planned answer for its current generation yet (new, or edited since): its
    key goes to the front of the queue, so a plan's answer never waits behind other orders'
    workload applies (``WorkQueue.add(urgent=True)``)."""
    c = _planned(order)
    return (
        c is None
        or c.get("status") == "Unknown"
        or c.get("observedGeneration") != order["metadata"].get("generation")
    )


def _planned_reason(order: Obj) -> str | None:
    c = _planned(order)
    return str(c.get("reason")) if c is not None else None


def _scale_up_blocked(order: Obj) -> bool:
    for c in (order.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == r.SCALING_HEALTHY:
            return c.get("reason") == r.SCALE_UP_BLOCKED
    return False


def waits_for_capacity(order: Obj) -> bool:
    """Whether more capacity may change the order's answer: its Planned reason is one of ``WAITING``,
    or it serves but its scale-up is blocked (``ScalingHealthy=False/ScaleUpBlocked``: the ledger's
    room for its extra replicas is judged again when a place is freed)."""
    return _planned_reason(order) in WAITING or _scale_up_blocked(order)


def waiting_orders(orders: Iterable[Obj], priorities: Mapping[str, int]) -> list[Key]:
    """Orders waiting for capacity, highest priority first, then oldest first: the order in which
    freed places are offered."""

    def rank(o: Obj) -> tuple[int, str, str]:
        prio = ((o.get("status") or {}).get("constraints") or {}).get("priorityClassName")
        return (
            -priorities.get(str(prio), 0),
            str(o["metadata"].get("creationTimestamp", "")),
            o["metadata"]["name"],
        )

    return [order_key(o) for o in sorted((o for o in orders if waits_for_capacity(o)), key=rank)]


class WaitingOrders:
    """The orders waiting for capacity, kept from the orders' events (thread-safe), so a capacity
    change ranks only those rather than listing every cached order: at 2,000 orders that listing
    was 9% of the controller's CPU (docs/benchmarks.md)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._orders: dict[Key, Obj] = {}

    def observe(self, event: str, order: Obj) -> None:
        key = order_key(order)
        with self._lock:
            if event != "DELETED" and waits_for_capacity(order):
                self._orders[key] = order
            else:
                self._orders.pop(key, None)

    def orders(self) -> list[Obj]:
        with self._lock:
            return list(self._orders.values())


def keys_for(
    cache: Cache,
    obj: Obj,
    orders: Iterable[Obj],
    *,
    capacity_grew: bool = False,
    priorities: Mapping[str, int] | None = None,
) -> list[Key]:
    """The reconcile keys an event on ``obj`` in ``cache`` maps to."""
    meta = obj.get("metadata", {})
    name, ns = meta.get("name", ""), meta.get("namespace", "")
    fanout = BY_CACHE[cache].fanout
    if fanout is Fanout.SELF:
        return [order_key(obj)]
    if fanout is Fanout.CLASS:
        return [("class", "", name)] + [
            order_key(o) for o in orders if _spec(o).get("inferenceServiceClassName") == name
        ]
    if fanout is Fanout.EVERYTHING:
        return [order_key(o) for o in orders]
    if fanout is Fanout.CAPACITY:
        keys = waiting_orders(orders, priorities or {}) if capacity_grew else []
        owner = order_of(obj)
        if owner and ("order", ns, owner) not in keys:
            # A claim of the order's own pods: its allocation settles the order's reservation.
            keys.append(("order", ns, owner))
        return keys
    if fanout is Fanout.CATALOG:
        out = []
        for o in orders:
            model = _spec(o).get("model") or {}
            ref = model.get("ref") or {}
            if model.get("src") != "Catalog" or ref.get("name") != name:
                continue
            kind = ref.get("kind") or "ClusterModel"
            if (cache is Cache.CLUSTER_MODELS and kind == "ClusterModel") or (
                cache is Cache.MODELS and kind == "Model" and o["metadata"].get("namespace") == ns
            ):
                out.append(order_key(o))
        return out
    if fanout is Fanout.NAMESPACE:
        return [order_key(o) for o in orders if o["metadata"].get("namespace") == name]
    owner = order_of(obj)
    return [("order", ns, owner)] if owner else []


def class_keys(classes: Iterable[Obj]) -> list[Key]:
    return [("class", "", c["metadata"]["name"]) for c in classes]
