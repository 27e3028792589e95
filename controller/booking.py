"""Booking places in the capacity ledger for orders: the one bridge between a decision about one
order and the ledger every worker shares.

- ``book``: when ``planning.plan_decision`` says to (re)compute, run the planner on the ledger's
  free view and reserve its answer in one critical section;
- ``after_act``: settle, release or keep the reservation from what acting did, and remember
  whether the order waits for capacity (the ledger settles most reservations before, at the
  allocation of the plan's claims: ``claim_shape`` tells it which claims are the plan's), and
  release a reservation that lapsed (``controller.lapse``);
- ``room``: for a serving order that wants more replicas, how many the ledger can place
  (``controller.planner.headroom``), read into the snapshot before the decision;
- ``rebuild``: after a start, every plan in force whose claims are not allocated books its place
  again, before any worker runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pydantic import ValidationError

from controller import lapse, planning, render
from controller.act import Done
from controller.caching import parsed
from controller.intents import Evict, Intents
from controller.kinds import Cache
from controller.live import workload as readings
from controller.live import zero
from controller.live.workload import own_claim_names
from controller.metrics import ControllerMetrics
from controller.observe import Observer
from controller.planner import LaunchPlan, PlanOutcome, PlanRequest, plan_order, preemption
from controller.planner.claims import ClaimKey
from controller.planner.headroom import Room, more_replicas, replica_shape, with_preemption
from controller.planner.inventory import Inventory
from controller.planner.ledger import ClaimShape, Ledger, OrderKey, Reservation, Use, shape_of, use_of
from controller.planner.reserve import devices_for
from controller.render.claim import claim_devices
from controller.render.group import worker_claim_template_name
from controller.snapshot import Planning, Snapshot
from shared import names


def plan_hash(plan: LaunchPlan) -> str:
    return names.short_hash(plan.model_dump_json(), 16)


def claim_shape(plan: LaunchPlan | None) -> ClaimShape | None:
    """What the plan's claims ask for: its claim templates' devices (the leader's and the workers'
    are the same), as the ledger reads them from each claim to settle the plan's reservation."""
    return shape_of(claim_devices(plan)) if plan is not None else None


def book(ledger: Ledger, s: Snapshot, metrics: ControllerMetrics) -> Planning:
    """The planner's answer for this reconcile, booked; or the plan in force when nothing changed."""
    if s.klass is None or s.model is None or not s.model.verdict.ok or s.model.facts is None:
        return Planning()
    d = planning.plan_decision(s)
    if not d.compute:
        evict = _pending_evictions(ledger, s) or scale_up_evictions(ledger, s)
        return Planning(trigger=d.trigger, tried=d.tried, evict=evict)
    facts, endpoint_type, cspec = s.model.facts, s.model.endpoint_type, s.klass.spec
    assert endpoint_type is not None
    answers: list[PlanOutcome] = []

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
            )
        )
        answers.append(outcome)
        if not outcome.ok or outcome.plan is None:
            return None, Use()
        return plan_hash(outcome.plan), use_of(outcome.allocation, outcome.shared_bytes)

    priority = preemption.priority_value(render.replica_bounds(cspec)[2], s.priority_values)
    ledger.take(
        s.key,
        own_claim_names(s.pods),
        plan,
        lambda: claim_shape(answers[-1].plan),
        priority=priority if s.priority_of is not None else None,
        priority_of=s.priority_of,
    )
    outcome = answers[-1]  # the last plan run: on the view, or the view less the replicas it preempts
    metrics.plans.labels(outcome=outcome.reason).inc()
    evict = evictions(ledger, s, priority)
    return Planning(
        outcome=outcome, trigger=d.trigger, count=d.count, tried=d.tried, evict=evict, preempting=bool(evict)
    )


def evictions(ledger: Ledger, s: Snapshot, priority: int) -> tuple[Evict, ...]:
    """The pods to evict for the order's reservation: those the claims it preempts are reserved for,
    while those claims are there, of orders of strictly lower priority than ``priority`` (asked
    again each reconcile, so an eviction refused for a PodDisruptionBudget is tried again)."""
    if not s.pods:
        return ()  # not before the order's own pod waits for the device: the victim's would take it
    return _evict(s, priority, ledger.preempted(s.key), "its plan needs")


def scale_up_evictions(ledger: Ledger, s: Snapshot) -> tuple[Evict, ...]:
    """The pods to evict for the order's scale-up: those the claims of the lower-priority replicas
    its room preempts are reserved for (``room``, ``headroom.with_preemption``), once one of its
    own pods is unschedulable (the scheduler found no device for it: an earlier eviction would let
    the victim's replacement pod take the device first). Asked again each reconcile while the room
    is short, as the new plan's evictions are."""
    found, priority = s.capacity.room, _priority(s)
    if found is None or not found.victims or priority is None or not readings.unschedulable_pods(s.pods):
        return ()
    claims = [(v.order[0], v.name) for v in found.victims]
    return _evict(s, priority, ledger.holders(claims), "its scale-up needs")


def _priority(s: Snapshot) -> int | None:
    """The order's priority when it may preempt: its class known, other orders' priorities readable."""
    if s.klass is None or s.priority_of is None:
        return None
    return preemption.priority_value(render.replica_bounds(s.klass.spec)[2], s.priority_values)


def _evict(
    s: Snapshot,
    priority: int,
    held: tuple[tuple[ClaimKey, OrderKey | None, tuple[str, ...]], ...],
    needs: str,
) -> tuple[Evict, ...]:
    """Evict intents for the pods of ``held`` claims of other orders of strictly lower priority."""
    out: list[Evict] = []
    for claim, victim, pods in held:
        if victim is None or victim == s.key or s.priority_of is None:
            continue
        victim_priority = s.priority_of(victim)
        if victim_priority >= priority:
            continue
        reason = (
            f"preempted by {s.key[0]}/{s.key[1]} (priority {priority}): {needs} the device "
            f"of claim {claim[1]}"
        )
        out.extend(Evict(claim[0], pod, victim[1], victim_priority, reason) for pod in pods)
    return tuple(out)


def _pending_evictions(ledger: Ledger, s: Snapshot) -> tuple[Evict, ...]:
    if s.klass is None or s.priority_of is None or ledger.reserved(s.key) is None:
        return ()
    priority = preemption.priority_value(render.replica_bounds(s.klass.spec)[2], s.priority_values)
    return evictions(ledger, s, priority)


def after_act(ledger: Ledger, s: Snapshot, planned: Planning, intents: Intents, done: Done) -> None:
    refused = planned.outcome is not None and not planned.outcome.ok
    if not done.applied or refused:
        ledger.release(s.key)  # nothing of ours will take the place
    elif s.claims_allocated and planned.outcome is None:
        ledger.settle(s.key)  # the allocation now stands for the reservation
    elif planned.outcome is None and lapse.lapsed(s):
        ledger.release(s.key)  # no pod could be created in time: the place goes to others
    elif planned.outcome is None and zero.at_zero(s.deployment) and not s.pods:
        ledger.release(s.key)  # scaled to zero: it holds no device until it wakes
    if intents.waiting:
        ledger.mark_exhausted(s.key)
    else:
        ledger.clear_exhausted(s.key)


def room(ledger: Ledger, s: Snapshot) -> Room | None:
    """The ledger's room for the replicas a serving order wants beyond those available, or None when
    it wants none (the scaling verdict then needs none; ``controller.planner.headroom``).

    Scale-up preemption: when the free devices are short, a single-node order (the scheduler does
    not preempt for DRA devices, so the controller does, as for a new plan) counts the replicas
    that evicting strictly lower-priority orders' replicas would place besides, and which replicas
    those are (``headroom.with_preemption``, ``Room.victims``; evicted by ``scale_up_evictions``).
    A multi-node order preempts nothing here.

    Asked only while the autoscaler wants more than are available, and counted only up to what is
    wanted, so a steady order costs nothing here. The replicas of the plan in force that hold their
    devices are counted from the pods and the ledger's allocated claims of the order; the order's
    reservation counts as one more while no pod of the plan holds its devices (it stands for the
    plan's first replica until its claim is allocated, then the ledger settles it). The free
    devices are those nobody holds, the order included (``Ledger.look``).
    """
    plan, workload = s.plan_in_force, s.deployment
    if plan is None or workload is None:
        return None
    wanted = readings.wanted_replicas(workload, s.hpa)
    available = readings.available_replicas(workload)
    if available < 1 or wanted <= available:
        return None
    templates = {render.claim_template_name(s.order, plan)}
    if plan.node_count > 1:
        templates.add(worker_claim_template_name(s.order, plan))
    in_force = plan_hash(plan)

    priority, priority_of = (_priority(s) if plan.node_count == 1 else None), s.priority_of

    def answer(inventory: Inventory, claims: frozenset[str], reservation: Reservation | None) -> Room:
        placed = readings.placed_replicas(s.pods, templates, claims)
        if placed == 0 and reservation is not None and reservation.plan_hash == in_force:
            placed = 1
        limit = max(0, wanted - max(placed, available))
        more = more_replicas(plan, inventory, limit)
        room = Room(placed, more, limit, replica_shape(plan))
        if more >= limit or priority is None or priority_of is None:
            return room
        victims = preemption.victims(s.key, priority, ledger.held_replicas(priority_of))
        extra, taken = with_preemption(plan, inventory, limit, victims)
        return replace(room, preempting=extra, victims=taken)

    return ledger.look(s.key, answer)


def rebuild(observer: Observer, now: float) -> set[OrderKey]:
    """Returns the orders whose place had lapsed (``controller.lapse``): they book nothing."""
    lapsed: set[OrderKey] = set()
    for raw in observer.store.list(Cache.ORDERS):
        try:
            order = parsed.ORDERS(raw)
        except ValidationError:
            continue
        key = (order.metadata.namespace or "", order.metadata.name)
        plan = observer.plan_in_force(order)
        if plan is None or observer.claims_allocated(order, plan):
            continue
        workload = observer.store.get(Cache.DEPLOYMENTS, key[0], key[1])
        if zero.at_zero(workload):
            continue  # scaled to zero: nothing to hold until it wakes
        found = lapse.refusal_of(order, plan, workload, observer.store.labelled(Cache.PODS, *key), now=now)
        if found is not None and now - found[0] >= observer.settings.claim_grace_seconds:
            lapsed.add(key)
        else:
            observer.ledger.hold(key, plan_hash(plan), _picker(plan), claim_shape(plan))
    return lapsed


def _picker(plan: LaunchPlan) -> Callable[[Inventory], Use]:
    return lambda inventory: devices_for(plan, inventory)
