"""Lapsed reservations: a plan whose pods cannot be created gives its place back. Pure.

The ledger reserves the devices of a plan until the plan's claims are allocated
(``planner.ledger``). Pods refused at creation (a ResourceQuota, a LimitRange, a missing
PriorityClass: the Deployment's ``ReplicaFailure`` condition) never create their claims, so
nothing else would ever release that place.

A reservation lapses when the Deployment of the plan in force has said for ``claimGraceSeconds``
that it cannot create pods, while no pod of the plan exists and no claim of the plan is allocated.
The booking then releases it, so the next order waiting for capacity may take the place, and the
order says why its pods do not exist, in the API server's own words
(``WorkloadReady=False/WorkloadFailed``).

Everything is judged from what is observed now. Once the Deployment creates a pod again (the quota
was raised), the cause is gone: an order whose place lapsed plans again (``replan_due``), and it
reads ``NoCapacity`` while another order holds the place.

Multi-node plans (a LeaderWorkerSet) are not covered: their pods are created by the LeaderWorkerSet
controller, and their reservation is held as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controller import render
from controller.live import workload as readings
from controller.planner import LaunchPlan
from controller.snapshot import Snapshot
from shared import reasons as r
from shared.api.order import InferenceService
from shared.conditions import Verdict, false


def refusal(s: Snapshot) -> tuple[float, str] | None:
    """Since when, and in whose words, the Deployment of the plan in force cannot create its pods,
    while no pod of the plan exists and none of its claims is allocated (``None`` otherwise)."""
    if s.claims_allocated:
        return None
    return refusal_of(s.order, s.plan_in_force, s.deployment, s.pods, now=s.now)


def refusal_of(
    order: InferenceService,
    plan: LaunchPlan | None,
    workload: dict[str, Any] | None,
    pods: Sequence[dict[str, Any]],
    *,
    now: float,
) -> tuple[float, str] | None:
    """``refusal`` from the objects themselves (a start rebuilds the ledger before any snapshot)."""
    if plan is None or workload is None:
        return None
    if plan.node_count > 1 or workload.get("kind") == readings.GROUP_KIND:
        return None
    status = workload.get("status") or {}
    if int(status.get("observedGeneration") or 0) < int(workload["metadata"].get("generation") or 0):
        return None  # the condition may still speak of the previous template
    if int(status.get("availableReplicas") or 0) >= 1:
        return None
    template = render.claim_template_name(order, plan)
    for pod in pods:
        if not pod.get("metadata", {}).get("deletionTimestamp") and readings.uses_claim_template(
            pod, template
        ):
            return None  # a pod of the plan exists: its claim may still be allocated
    for c in status.get("conditions") or []:
        if c.get("type") == "ReplicaFailure" and c.get("status") == "True":
            return readings.parse_time(c.get("lastTransitionTime")) or now, str(c.get("message") or "")
    return None


def lapsed(s: Snapshot) -> bool:
    """The reservation of the plan in force has lapsed: the booking releases it."""
    found = refusal(s)
    return found is not None and s.now - found[0] >= s.settings.claim_grace_seconds


def judge(s: Snapshot, v: Verdict) -> tuple[Verdict, float | None]:
    """WorkloadReady with what the lapse did, and the seconds until the reservation lapses.

    A lapsed order's verdict quotes the refusal itself: the Deployment's ProgressDeadlineExceeded,
    which comes 10 minutes later by default, would otherwise hide the quota's words."""
    found = refusal(s)
    if found is None:
        return v, None
    grace = s.settings.claim_grace_seconds
    left = found[0] + grace - s.now
    if left > 0:
        return v, max(1.0, left)
    words = found[1].rstrip().rstrip(".")
    return false(
        r.WORKLOAD_FAILED,
        f"The Deployment cannot create pods: {words}. No pod of the plan could be created for "
        f"{grace:g}s, so the devices planned for it were given back to other orders; the order plans "
        "again once its pods can be created.",
    ), None


def replan_due(s: Snapshot) -> bool:
    """The order's place lapsed (``s.capacity.lapsed``) and its cause is gone: plan again."""
    return s.capacity.lapsed and not s.claims_allocated and refusal(s) is None
