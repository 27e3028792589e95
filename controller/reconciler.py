"""The reconciler: observe -> plan (the ledger) -> decide -> act, for one order key.

Level-triggered: it takes a key, never an event, and enforces the whole desired state every time.
Return value: seconds until the key should be looked at again (``None``: only on events).
Exceptions mean a rate-limited requeue (a 409 on the status write is re-read and retried).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pydantic import ValidationError

from controller import booking, decide, lapse
from controller.act import Actor
from controller.caching import parsed
from controller.classes import class_status
from controller.kinds import Cache
from controller.observe import Observer
from controller.planner import LaunchPlan

log = logging.getLogger(__name__)


@dataclass
class Reconciler:
    observer: Observer
    actor: Actor
    clock: Callable[[], float] = time.time
    # The plan this process last put in force, per order: applied, or written as Planned with its
    # workload applied on the next pass (``decide.planned_first``); the Deployment cache may lag.
    applied: dict[tuple[str, str], LaunchPlan] = field(default_factory=dict)
    # The resourceVersion of our last status write, per order: an older cached order is stale.
    written: dict[tuple[str, str], str] = field(default_factory=dict)
    # Orders whose reservation lapsed (``controller.lapse``), until they plan again or run.
    lapsed: set[tuple[str, str]] = field(default_factory=set)
    # Called when this process released a place (a reservation freed): waiting orders may fit now.
    on_capacity: Callable[[], None] = lambda: None

    def reconcile_order(self, namespace: str, name: str) -> float | None:
        key = (namespace, name)
        epoch = self.observer.ledger.epoch
        try:
            return self._reconcile(key)
        finally:
            if self.observer.ledger.epoch > epoch:
                self.on_capacity()

    def _reconcile(self, key: tuple[str, str]) -> float | None:
        namespace, name = key
        raw = self.observer.store.get(Cache.ORDERS, namespace, name)
        if raw is None or raw["metadata"].get("deletionTimestamp"):
            self.forget(key)  # the garbage collector deletes what the order owns
            return None
        try:
            order = parsed.ORDERS(raw)
        except ValidationError as e:  # the webhook and the schema make this impossible
            log.warning("order %s/%s does not parse: %s", namespace, name, e)
            return None
        if _older(raw["metadata"].get("resourceVersion"), self.written.get(key)):
            return 1.0  # the cache has not seen our last status write yet
        s = self.observer.snapshot(order, raw, self.clock())
        s = replace(s, capacity=replace(s.capacity, room=booking.room(self.observer.ledger, s)))
        planned = booking.book(self.observer.ledger, s, self.actor.metrics)
        intents = decide.decide(s, planned)
        done = self.actor.act(s, intents)
        booking.after_act(self.observer.ledger, s, planned, intents, done)
        if planned.outcome is None and lapse.lapsed(s):
            self.lapsed.add(key)
        elif s.claims_allocated or (planned.outcome is not None and planned.outcome.ok and done.applied):
            self.lapsed.discard(key)
        if done.applied and intents.plan is not None:
            self.applied[key] = intents.plan
        if done.written_rv:
            self.written[key] = done.written_rv
        if intents.probe is not None:
            self.observer.probes.request(key, intents.probe.url, intents.probe.token)
        if intents.scrape is not None:
            if intents.scrape.due:
                self.observer.progress.request(key, intents.scrape.pod, intents.scrape.address)
        else:
            self.observer.progress.forget(key)
        return intents.requeue

    def rebuild_reservations(self) -> None:
        """After a start, before any worker runs: unallocated plans in force book their places."""
        self.lapsed |= booking.rebuild(self.observer, self.clock())

    def forget(self, key: tuple[str, str]) -> None:
        self.applied.pop(key, None)
        self.written.pop(key, None)
        self.lapsed.discard(key)
        self.observer.probes.forget(key)
        self.observer.progress.forget(key)
        self.observer.ledger.release(key)

    def reconcile_class(self, name: str) -> float | None:
        return class_status(self.observer, self.actor, name, self.clock())


def _older(cached: str | None, written: str | None) -> bool:
    """Whether the cached object predates our own last write. resourceVersions are opaque in the API
    contract; etcd hands out increasing integers, and anything else is "not older"."""
    if not cached or not written:
        return False
    try:
        return int(cached) < int(written)
    except ValueError:
        return False
