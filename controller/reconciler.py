"""The reconciler: observe -> plan (the ledger) -> decide -> act, for one order key.

Level-triggered: it takes a key, never an event, and enforces the whole desired state every time.
Return value: seconds until the key should be looked at again (``None``: only on events).
Exceptions mean a rate-limited requeue (a 409 on the status write is re-read and retried).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from controller import decide, planning, render
from controller.act import Actor
from controller.classes import class_status
from controller.kinds import Cache
from controller.observe import Observer
from controller.planner import LaunchPlan, PlanRequest, plan_order
from controller.planner.inventory import Inventory
from controller.planner.ledger import Use, use_of
from controller.planner.reserve import devices_for
from controller.readings import own_claim_names
from controller.snapshot import Planning, Snapshot
from shared import names
from shared.api.order import InferenceService

log = logging.getLogger(__name__)


@dataclass
class Reconciler:
    observer: Observer
    actor: Actor
    clock: Callable[[], float] = time.time
    # The plan this process last applied, per order: the Deployment cache may lag our own apply.
    applied: dict[tuple[str, str], LaunchPlan] = field(default_factory=dict)
    # The resourceVersion of our last status write, per order: an older cached order is stale.
    written: dict[tuple[str, str], str] = field(default_factory=dict)
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
            order = InferenceService.model_validate(raw)
        except ValidationError as e:  # the webhook and the schema make this impossible
            log.warning("order %s/%s does not parse: %s", namespace, name, e)
            return None
        if _older(raw["metadata"].get("resourceVersion"), self.written.get(key)):
            return 1.0  # the cache has not seen our last status write yet
        s = self.observer.snapshot(order, raw, self.clock())
        planned = self._plan(s)
        intents = decide.decide(s, planned)
        done = self.actor.act(s, intents)
        ledger = self.observer.ledger
        if done.applied and intents.plan is not None:
            self.applied[key] = intents.plan
        if not done.applied or (planned.outcome is not None and not planned.outcome.ok):
            ledger.release(key)
        elif s.claims_allocated and planned.outcome is None:
            ledger.settle(key)
        if intents.waiting:
            ledger.mark_exhausted(key)
        else:
            ledger.clear_exhausted(key)
        if done.written_rv:
            self.written[key] = done.written_rv
        if intents.probe is not None:
            self.observer.probes.request(key, intents.probe.url, intents.probe.token)
        return intents.requeue

    def _plan(self, s: Snapshot) -> Planning:
        """Ask the ledger for a place when the decision is to (re)compute; else keep the plan in force."""
        if s.klass is None or s.model is None or not s.model.verdict.ok or s.model.facts is None:
            return Planning()
        d = planning.plan_decision(s)
        if not d.compute:
            return Planning(trigger=d.trigger, tried=d.tried)
        facts, endpoint_type, cspec = s.model.facts, s.model.endpoint_type, s.klass.spec
        assert endpoint_type is not None
        result: list[Any] = []

        def plan(inventory: Inventory) -> tuple[str | None, Use]:
            outcome = plan_order(
                PlanRequest(
                    facts=facts,
                    endpoint_type=endpoint_type,
                    class_spec=cspec,
                    recipes=list(s.recipes),
                    inventory=inventory,
                    served_model_name=s.order.spec.model.ref.name,
                    skip_device_classes=d.tried,
                    previous=planning.usable_in_force(s),
                    requires_token=render.requires_token(cspec),
                )
            )
            result.append(outcome)
            if not outcome.ok or outcome.plan is None:
                return None, Use()
            return _hash(outcome.plan), use_of(outcome.allocation, outcome.shared_bytes)

        self.observer.ledger.take(s.key, own_claim_names(s.pods), plan)
        self.actor.metrics.plans.labels(outcome=result[0].reason).inc()
        return Planning(outcome=result[0], trigger=d.trigger, count=d.count, tried=d.tried)

    def rebuild_reservations(self) -> None:
        """After a start: every plan in force whose claims are not allocated holds its place again."""
        for raw in self.observer.store.list(Cache.ORDERS):
            try:
                order = InferenceService.model_validate(raw)
            except ValidationError:
                continue
            key = (order.metadata.namespace or "", order.metadata.name)
            plan = self.observer.plan_in_force(order)
            if plan is not None and not self.observer.claims_allocated(order, plan):
                self.observer.ledger.hold(key, _hash(plan), _picker(plan))

    def forget(self, key: tuple[str, str]) -> None:
        self.applied.pop(key, None)
        self.written.pop(key, None)
        self.observer.probes.forget(key)
        self.observer.ledger.release(key)

    def reconcile_class(self, name: str) -> float | None:
        return class_status(self.observer, self.actor, name, self.clock())


def _picker(plan: LaunchPlan) -> Callable[[Inventory], Use]:
    return lambda inventory: devices_for(plan, inventory)


def _hash(plan: LaunchPlan) -> str:
    return names.short_hash(plan.model_dump_json(), 16)


def _older(cached: str | None, written: str | None) -> bool:
    """Whether the cached object predates our own last write. resourceVersions are opaque in the API
    contract; etcd hands out increasing integers, and anything else is "not older"."""
    if not cached or not written:
        return False
    try:
        return int(cached) < int(written)
    except ValueError:
        return False
