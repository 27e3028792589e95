"""Whether this reconcile plans, and what the Planned condition says, judged from now. Pure.

``plan_decision`` runs before the ledger is asked (only a decision to compute takes a place);
``planned`` turns the ledger's answer, or the plan in force, into the Planned verdict, the plan to
apply and ``status.resolved``.

No reason outlives its cause:

- a plan in force whose workload runs is a good plan, whatever the order said before;
- ``ResourceClaimExhausted`` holds only while every allowed device class was refused by the
  scheduler and the pods of the plan in force still cannot get their claims allocated;
- an order that found nothing tries again from its first device class when capacity grows.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller import lapse, render
from controller.conditions.replan import PlanDecision, decide_plan
from controller.live import workload as readings
from controller.planner import LaunchPlan
from controller.snapshot import Planning, Snapshot
from shared import reasons as r
from shared.api.order import Resolved
from shared.conditions import Verdict, false, find, true, unknown


def workload_runs(s: Snapshot) -> bool:
    """A replica of the current rollout is available: the plan in force serves."""
    return s.plan_in_force is not None and readings.workload_verdict(s.deployment, s.pods).ok


def stuck_since(s: Snapshot) -> float | None:
    """Since when the plan in force's claims could not be allocated by the scheduler."""
    if s.plan_in_force is None:
        return None
    template = render.claim_template_name(s.order, s.plan_in_force)
    return readings.claim_stuck_since(s.deployment, list(s.pods), template=template)


def _tried(s: Snapshot) -> tuple[str, ...]:
    prev = s.order.status.resolved
    return tuple(prev.tried_device_classes or ()) if prev else ()


def usable_in_force(s: Snapshot) -> LaunchPlan | None:
    """The plan in force, unless the scheduler refused its device class and it does not run."""
    plan = s.plan_in_force
    if plan is None:
        return None
    if plan.device_class in _tried(s) and not workload_runs(s):
        return None
    return plan


def _reason(s: Snapshot) -> str | None:
    c = find(s.order.status.conditions, r.PLANNED)
    return c.reason if c is not None else None


def plan_decision(s: Snapshot) -> PlanDecision:
    assert s.klass is not None
    prev = s.order.status.resolved
    in_force = usable_in_force(s)
    since = stuck_since(s)
    stuck_class = None
    if in_force is not None and since is not None and s.now - since >= s.settings.claim_grace_seconds:
        stuck_class = in_force.device_class
    d = decide_plan(
        prev,
        has_plan_in_force=in_force is not None,
        order_generation=s.order.metadata.generation or 0,
        class_generation=s.klass.metadata.generation or 0,
        stuck_device_class=stuck_class,
    )
    if not d.compute and lapse.replan_due(s):
        return PlanDecision(True, False, "lapsed reservation", d.tried)
    if _new_revision(s) and in_force is not None and not d.compute:
        return PlanDecision(True, True, "model revision", ())
    grew = s.capacity.exhausted_since is not None and s.capacity.epoch > s.capacity.exhausted_since
    if grew and _reason(s) in (r.RESOURCE_CLAIM_EXHAUSTED, r.LAUNCH_PLAN_IN_FORCE) and not workload_runs(s):
        return PlanDecision(True, True, "capacity change", ())
    if _exhausted_for(s) >= EXHAUSTED_RETRY_SECONDS and not workload_runs(s):
        return PlanDecision(True, True, "exhausted retry", ())
    if grew and _reason(s) == r.LAUNCH_PLAN_IN_FORCE and not d.compute:
        # A serving order whose edit did not fit: more capacity may let it. The edit was counted
        # when it was first recomputed, so trying it again is not another replan.
        return PlanDecision(True, False, "capacity change", d.tried)
    if grew and d.compute and _reason(s) == r.RESOURCE_CLAIM_EXHAUSTED:
        return PlanDecision(True, True, "capacity change", ())
    return d


EXHAUSTED_RETRY_SECONDS = 300.0
"""How long an order waits as ResourceClaimExhausted before it tries its first device class again
though no capacity was freed. The scheduler's refusal of a claim may be a moment's contention
(another pod took the free device the plan counted on) that outlasts the claim grace under load:
kube-scheduler itself retries an unschedulable pod at least every 5 minutes
(podMaxInUnschedulablePodsDuration). Seen at 2,000 orders: 8 orders fell back to a class that
could not hold them while their first class had free devices."""


def _exhausted_for(s: Snapshot) -> float:
    """Seconds the order has been Planned=False/ResourceClaimExhausted (0 when it is not)."""
    c = find(s.order.status.conditions, r.PLANNED)
    if c is None or c.reason != r.RESOURCE_CLAIM_EXHAUSTED or c.status != "False":
        return 0.0
    since = readings.parse_time(c.last_transition_time)
    return 0.0 if since is None else s.now - since


def _new_revision(s: Snapshot) -> bool:
    """Following branches is on and the branch moved since the order's record (never by default)."""
    record = s.order.status.model.revision if s.order.status.model else None
    facts = s.model.facts if s.model else None
    return bool(s.settings.follow_model_revisions and record and facts and facts.revision != record)


@dataclass(frozen=True, slots=True)
class PlannedVerdict:
    verdict: Verdict
    plan: LaunchPlan | None  # the plan to render (None: nothing to apply)
    render: bool  # False when a plan kept in force must be left exactly as it is
    resolved: Resolved | None
    waiting: bool  # the order waits for capacity: requeue it when capacity grows


def _basis(s: Snapshot, p: Planning) -> dict[str, object]:
    assert s.klass is not None
    prev = s.order.status.resolved
    return {
        "order_generation": s.order.metadata.generation or 0,
        "class_generation": s.klass.metadata.generation or 0,
        "tried_device_classes": list(p.tried) or None,
        "replan_count": (prev.replan_count if prev else 0) + (1 if p.count else 0),
    }


def resolved_of(plan: LaunchPlan, basis: dict[str, object]) -> Resolved:
    return Resolved.model_validate(
        {
            "device_class": plan.device_class,
            "accelerator_product_name": plan.product_name,
            "accelerator_memory_gi_b": plan.accelerator_memory_gib,
            "accelerator_count": plan.accelerator_count,
            "placement_mode": plan.placement_mode,
            "node_count": plan.node_count,
            "accelerators_per_node": plan.devices_per_pod,
            "sharing_mode": plan.sharing_mode,
            "share_percent": plan.share_percent,
            "cpu": plan.cpu,
            "memory": plan.memory,
            "model_volume": plan.model_volume,
            "recipe": plan.recipe,
            **basis,
        }
    )


def planned(s: Snapshot, p: Planning) -> PlannedVerdict:
    """The Planned verdict from the ledger's answer (``p.outcome``) or the plan in force."""
    basis = _basis(s, p)
    prev = s.order.status.resolved or Resolved()
    kept = prev.model_copy(update=basis)
    in_force = usable_in_force(s)
    out = p.outcome
    if out is None:  # nothing changed: the plan in force stands
        if in_force is None:
            return PlannedVerdict(unknown(r.RECONCILING, "No plan yet."), None, False, kept, True)
        if _reason(s) == r.LAUNCH_PLAN_IN_FORCE:
            # The recomputation for this generation failed and nothing changed since: still in force.
            c = find(s.order.status.conditions, r.PLANNED)
            return PlannedVerdict(
                true(r.LAUNCH_PLAN_IN_FORCE, c.message if c else ""), in_force, False, kept, True
            )
        tried_all = set(s.klass.spec.placement.device_class_names if s.klass else ()) <= set(p.tried)
        if tried_all and not workload_runs(s) and stuck_since(s) is not None:
            return PlannedVerdict(
                false(r.RESOURCE_CLAIM_EXHAUSTED, _exhausted_message(s)), in_force, False, kept, True
            )
        return PlannedVerdict(
            true(r.PLANNED_OK, f"Planned: {in_force.summary()}."), in_force, True, kept, False
        )
    if out.ok and out.plan is not None:
        return PlannedVerdict(
            true(r.PLANNED_OK, f"Planned: {out.plan.summary()}."),
            out.plan,
            True,
            resolved_of(out.plan, basis),
            False,
        )
    if (
        in_force is not None
        and workload_runs(s)
        and p.trigger in ("order edit", "class change", "capacity change")
    ):
        return PlannedVerdict(
            true(
                r.LAUNCH_PLAN_IN_FORCE,
                f"Recomputing the launch plan after the {p.trigger} did not succeed ({out.reason}: "
                f"{out.message}); the order keeps serving on the plan in force: {in_force.summary()}.",
            ),
            in_force,
            False,
            kept,
            True,
        )
    if in_force is not None and workload_runs(s) and p.trigger == "no plan yet":
        # Only reachable when status was lost; never take a serving order down for it.
        return PlannedVerdict(
            true(r.LAUNCH_PLAN_IN_FORCE, f"{out.reason}: {out.message}"), in_force, False, kept, True
        )
    waiting = out.reason in (r.NO_CAPACITY, r.RESOURCE_CLAIM_EXHAUSTED)
    return PlannedVerdict(false(out.reason, out.message), None, False, kept, waiting)


def _exhausted_message(s: Snapshot) -> str:
    names = ", ".join(s.klass.spec.placement.device_class_names) if s.klass else ""
    return f"the scheduler could not allocate the claim on any allowed device class ({names})."
