"""Pure readings of the order's live objects: WorkloadReady, ScalingHealthy, scheduler feedback.

Inputs are raw Kubernetes dicts from the informer caches and ``now`` (epoch seconds); outputs are
verdicts. Nothing here calls the API.

Only the scheduler's DRA plugin's own words, ``cannot allocate all claims``, say that a claim could
not be allocated. A taint, a volume that cannot bind, missing cpu or memory, or node affinity are
other unschedulable causes: they are reported as they are and never move the order to another
device class.

The scheduler's message counts one reason per node (the first filter that refused it), and its
resource filter runs before the DRA plugin. So when the nodes with the planned devices lack cpu or
memory, every other node says ``cannot allocate all claims``: "0/8 nodes are available: 4
Insufficient cpu, 4 cannot allocate all claims". The claim is then not the only cause, and nothing
says it is a cause at all: a node refused for what the pod asks besides its devices (cpu, memory,
pods, ports, its volumes) means the claim is not judged unallocatable. Cordons, taints and node
affinity only take nodes out of play (typically nodes without GPUs), so the claim words on the rest
still speak for the claim.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from controller.live.group_status import GROUP_INDEX_LABEL, group_verdict
from controller.planner import LaunchPlan
from controller.planner.headroom import Room
from controller.render.common import PLAN_ANNOTATION
from shared import reasons as r
from shared.conditions import Verdict, false, true, unknown

Obj = dict[str, Any]


def parse_time(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


CLAIM_UNALLOCATABLE = "cannot allocate all claims"
# The scheduler's words (lower case) for a node refused for what the pod asks of it besides its
# devices: NodeResourcesFit ("Insufficient cpu", "Too many pods"), NodePorts ("free ports"), and
# the volume plugins ("unbound immediate PersistentVolumeClaims", "didn't find available persistent
# volumes to bind", "pvc(s) bound to non-existent pv(s)", "did not have enough free storage", ...).
OTHER_NEEDS = ("insufficient ", "too many pods", "free ports", "volume", "pvc", "storage")
PREEMPTION = ". preemption:"  # the scheduler appends what preemption found; not a filter's reason
GROUP_KIND = "LeaderWorkerSet"  # the workload of a multi-node plan (controller.live.group_status)
DISRUPTION_TARGET = "DisruptionTarget"  # the pod condition the scheduler sets on a pod it preempts
PREEMPTED = "PreemptionByScheduler"  # ... with this reason


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """A pod the scheduler could not place, since when, and what it said."""

    pod: str
    since: float
    message: str

    @property
    def claim_unallocatable(self) -> bool:
        """Whether the scheduler said it could not allocate the pod's ResourceClaims, and refused no
        node for the pod's other needs (cpu, memory, pods, ports, volumes)."""
        return claim_unallocatable(self.message)


def claim_unallocatable(message: str) -> bool:
    """Whether a PodScheduled=False message blames the pod's ResourceClaims alone (module docstring)."""
    reasons = message.split(PREEMPTION, 1)[0]
    if CLAIM_UNALLOCATABLE not in reasons:
        return False
    lowered = reasons.lower()
    return not any(words in lowered for words in OTHER_NEEDS)


def unschedulable_pods(pods: Sequence[Obj]) -> list[Unschedulable]:
    out: list[Unschedulable] = []
    for pod in pods:
        if pod.get("metadata", {}).get("deletionTimestamp"):
            continue
        for c in pod.get("status", {}).get("conditions", []) or []:
            if (
                c.get("type") == "PodScheduled"
                and c.get("status") == "False"
                and c.get("reason") == "Unschedulable"
            ):
                since = parse_time(c.get("lastTransitionTime")) or 0.0
                out.append(Unschedulable(pod["metadata"]["name"], since, c.get("message", "")))
    return sorted(out, key=lambda u: (u.since, u.pod))


def _available(deployment: Obj) -> int:
    """Available replicas: of a Deployment, or the ready groups of a LeaderWorkerSet."""
    if deployment.get("kind") == GROUP_KIND:
        return int(deployment.get("status", {}).get("readyReplicas") or 0)
    return int(deployment.get("status", {}).get("availableReplicas") or 0)


def _leaving(pod: Obj) -> bool:
    """A pod on its way out: being deleted, or marked for disruption (``DisruptionTarget``: the
    scheduler preempting it, an eviction)."""
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return True
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == DISRUPTION_TARGET and c.get("status") == "True" for c in conditions)


def preempted_pods(pods: Sequence[Obj]) -> list[str]:
    """The pods the scheduler is preempting (``DisruptionTarget=True/PreemptionByScheduler``)."""
    out = []
    for pod in pods:
        for c in pod.get("status", {}).get("conditions") or []:
            if (
                c.get("type") == DISRUPTION_TARGET
                and c.get("status") == "True"
                and c.get("reason") == PREEMPTED
            ):
                out.append(str(pod["metadata"]["name"]))
    return sorted(out)


def _count_behind(pods: Sequence[Obj]) -> bool:
    """The Deployment's available count is behind its pods: every pod of the order the caches hold
    is on its way out (preempted, evicted, deleted) and the Deployment controller has not counted
    it yet. No pod seen: the count is taken as it is."""
    return bool(pods) and all(_leaving(p) for p in pods)


def _rolled_out(deployment: Obj) -> bool:
    status = deployment.get("status", {})
    return (
        int(status.get("observedGeneration") or 0) >= int(deployment["metadata"].get("generation") or 0)
        and int(status.get("updatedReplicas") or 0) >= 1
    )


def _failure(deployment: Obj) -> str | None:
    """What the Deployment's own conditions say went wrong (a stalled rollout, pods not created)."""
    for c in deployment.get("status", {}).get("conditions", []) or []:
        if c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded":
            return f"The Deployment did not progress: {c.get('message', '')}"
        if c.get("type") == "ReplicaFailure" and c.get("status") == "True":
            return f"The Deployment cannot create pods: {c.get('message', '')}"
    return None


def workload_verdict(deployment: Obj | None, pods: Sequence[Obj]) -> Verdict:
    """WorkloadReady: Available once a replica of the current rollout is available (for a multi-node
    plan's LeaderWorkerSet: once a whole group is ready, ``controller.live.group_status``).

    An available replica wins over the Deployment's failure conditions: a scale-up that cannot
    create or place its extra pods (quota, a stalled second replica) leaves the order serving, and is
    ScalingHealthy's to report, never a reason to call a serving workload failed.
    """
    if deployment is None:
        return unknown(r.PROGRESSING, "The workload is being applied.")
    if deployment.get("kind") == GROUP_KIND:
        v = group_verdict(deployment, pods)
        stuck = unschedulable_pods(pods)
        if not v.ok and stuck:
            return false(r.UNSCHEDULABLE, f"Pod {stuck[0].pod} cannot be scheduled: {stuck[0].message}")
        return v
    failure = _failure(deployment)
    if _available(deployment) >= 1 and _rolled_out(deployment) and not _count_behind(pods):
        n = _available(deployment)
        return true(r.AVAILABLE, f"{n} replica(s) available." + (f" {failure}" if failure else ""))
    if failure is not None:
        return false(r.WORKLOAD_FAILED, failure)
    preempted = preempted_pods(pods)
    note = (
        f" Pod {preempted[0]} was preempted by the scheduler for a higher-priority pod." if preempted else ""
    )
    stuck = unschedulable_pods(pods)
    if stuck:
        return false(r.UNSCHEDULABLE, f"Pod {stuck[0].pod} cannot be scheduled: {stuck[0].message}{note}")
    return false(r.PROGRESSING, f"Waiting for a replica to become available.{note}")


def uses_claim_template(pod: Obj, template: str) -> bool:
    """Whether the pod's ResourceClaims come from ``template`` (the plan in force's template)."""
    claims = pod.get("spec", {}).get("resourceClaims") or []
    return any(c.get("resourceClaimTemplateName") == template for c in claims)


def claim_stuck_since(
    deployment: Obj | None, pods: Sequence[Obj], *, template: str | None = None
) -> float | None:
    """Since when (the latest) the plan's claims could not be allocated, or ``None``.

    Counts only live pods of the plan in force (those using ``template``, when given), and only
    when no replica is available and every such pod is unschedulable because the scheduler could
    not allocate its claims. A pod of an earlier plan, or another unschedulable cause, never counts.
    """
    if deployment is None or _available(deployment) >= 1:
        return None
    live = [
        p
        for p in pods
        if not p.get("metadata", {}).get("deletionTimestamp")
        and (template is None or uses_claim_template(p, template))
    ]
    stuck = [u for u in unschedulable_pods(live) if u.claim_unallocatable]
    if not live or len(stuck) < len(live):
        return None
    return max(u.since for u in stuck)


def wanted_replicas(deployment: Obj, hpa: Obj | None) -> int:
    """The replicas the autoscaler wants (the HPA's ``status.desiredReplicas``), else the workload's own."""
    return int(
        (hpa or {}).get("status", {}).get("desiredReplicas")
        or deployment.get("spec", {}).get("replicas")
        or 1
    )


def available_replicas(deployment: Obj) -> int:
    """Replicas that serve: the Deployment's available (Ready) pods, or a LeaderWorkerSet's ready groups.
    A pod still loading its model is not one."""
    return _available(deployment)


def placed_replicas(pods: Sequence[Obj], templates: Collection[str], allocated: Collection[str]) -> int:
    """Replicas of the plan in force that hold their devices: live pods using one of ``templates``
    (the plan's claim templates) whose claims are all in ``allocated`` (the ledger's allocated claims
    of the order), Ready or still loading. A LeaderWorkerSet's pods count once per group (its
    group-index label) as soon as one pod of the group holds its devices: the rest of a partly
    placed group is the scheduler's to place, and the grace path's to report."""
    groups: set[str] = set()
    count = 0
    for pod in pods:
        if pod.get("metadata", {}).get("deletionTimestamp"):
            continue
        if not any(uses_claim_template(pod, t) for t in templates):
            continue
        claims = own_claim_names([pod])
        if not claims or not claims <= set(allocated):
            continue
        group = (pod.get("metadata", {}).get("labels") or {}).get(GROUP_INDEX_LABEL)
        if group is None:
            count += 1
        else:
            groups.add(str(group))
    return count + len(groups)


def scaling_verdict(
    deployment: Obj | None,
    hpa: Obj | None,
    pods: Sequence[Obj],
    *,
    now: float,
    grace: float,
    room: Room | None = None,
) -> tuple[Verdict, float | None]:
    """ScalingHealthy, and when to look again if a pending scale-up may turn into ScaleUpBlocked.

    ScaleUpBlocked, at once: the HPA wants more replicas than are available, and the ledger's
    ``room`` (``controller.planner.headroom``: the replicas of the plan in force that hold their
    devices, and how many more the free devices hold) says they do not all fit. Replicas that hold
    their devices but are not Ready yet (loading the model) count as placed, never as available, and
    are never a reason to want more.

    Not while preempting can place them (``room.preempting``: the replicas that evicting
    lower-priority orders' replicas places, ``booking.scale_up_evictions``): the order is scaling,
    and reads ScaleUpBlocked only when even preemption leaves it short. Meanwhile a pod the scheduler
    refuses for its devices alone (``claim_unallocatable``) is no reason for the grace below: those
    devices are being freed for it (an eviction a PodDisruptionBudget keeps refusing leaves the order
    scaling, the eviction retried); a pod refused for cpu, memory or volumes still is.

    ScaleUpBlocked after ``grace`` seconds, the fallback for what the ledger cannot see: the ledger
    says the replicas fit (or was not asked: ``room`` None) but the extra pods have stayed
    unschedulable past ``grace`` (cpu or memory of the nodes, taints, volumes, a device taken
    between two looks, preemption), or the Deployment says it cannot create them.
    """
    if deployment is None:
        return unknown(r.RECONCILING, "The workload is being applied."), None
    desired = wanted_replicas(deployment, hpa)
    available = _available(deployment)
    if desired <= available:
        return true(r.SCALING_HEALTHY_OK, f"{available} of {desired} desired replica(s) available."), None
    preempting = ""
    if room is not None:
        held = max(room.placed, available)  # an available replica holds its devices
        if held + room.more + room.preempting < desired:
            starting = f", {held - available} more starting" if held > available else ""
            besides = (
                f", {room.preempting} more by preempting lower-priority replicas" if room.preempting else ""
            )
            return (
                false(
                    r.SCALE_UP_BLOCKED,
                    f"The autoscaler wants {desired} replica(s) but {available} are available{starting}; "
                    f"the free devices hold {room.more} more of {room.looked_at}{besides}: "
                    f"{desired - held - room.more - room.preempting} short.",
                ),
                None,
            )
        if held + room.more < desired:
            preempting = f"; preempting {len(room.victims)} lower-priority replica(s)"
    failure = _failure(deployment)
    if failure is not None:
        return (
            false(
                r.SCALE_UP_BLOCKED,
                f"The autoscaler wants {desired} replica(s) but {available} are available: {failure}",
            ),
            None,
        )
    stuck = unschedulable_pods(pods)
    if preempting:  # the devices a pod waits for are being freed for it: no grace runs out on that
        stuck = [u for u in stuck if not u.claim_unallocatable]
    if not stuck:
        return true(
            r.SCALING_HEALTHY_OK, f"Scaling from {available} to {desired} replica(s){preempting}."
        ), None
    oldest = stuck[0]
    if now - oldest.since >= grace:
        return (
            false(
                r.SCALE_UP_BLOCKED,
                f"The autoscaler wants {desired} replica(s) but {available} are available: pod {oldest.pod} has "
                f"been unschedulable for {int(now - oldest.since)}s: {oldest.message}",
            ),
            None,
        )
    return (
        true(
            r.SCALING_HEALTHY_OK,
            f"Scaling from {available} to {desired} replica(s){preempting}; waiting for capacity.",
        ),
        oldest.since + grace - now,
    )


def own_claim_names(pods: Sequence[Obj]) -> set[str]:
    """Names of the ResourceClaims generated for the order's pods."""
    out: set[str] = set()
    for pod in pods:
        for s in pod.get("status", {}).get("resourceClaimStatuses", []) or []:
            if s.get("resourceClaimName"):
                out.add(s["resourceClaimName"])
    return out


def plan_annotation(workload: dict[str, Any] | None) -> LaunchPlan | None:
    """The plan recorded on a Deployment or LeaderWorkerSet when it was applied (None: none, or unreadable)."""
    text = ((workload or {}).get("metadata", {}).get("annotations") or {}).get(PLAN_ANNOTATION)
    if not text:
        return None
    try:
        return LaunchPlan.model_validate_json(text)
    except ValidationError:
        return None
