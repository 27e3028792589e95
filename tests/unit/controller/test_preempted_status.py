"""An order whose replica was preempted reads what is true, through the existing pure pipeline
(``plan_decision``, ``decide``, ``build_status``); issue 22 item 3b.

The scheduler preempts a pod by marking it ``DisruptionTarget=True/PreemptionByScheduler`` and
deleting it (tests/integration/test_dra_preemption.py watched it: the condition, the deletion and
the generated claim's deletion within 60 ms). Then the Deployment counts 0 available and the
ReplicaSet makes a new pod, which the scheduler may not place.

- the only replica preempted (its pod gone, or still terminating with the condition; the
  Deployment at 0 available): never Ready: ``WorkloadReady=False/Progressing``, or
  ``Unschedulable`` with the scheduler's words once the new pod is refused, and Ready says the same;
  the probe book's last success does not count (the probe is not even consulted);
- one replica of two preempted: the order serves on the other (Ready, ``Serving``), and its
  ScalingHealthy says ``ScaleUpBlocked`` once the new pod has been refused past the grace: phase
  ``Degraded`` (the user guide's "after preemption exhausted the capacity").
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.planning import plan_decision
from shared import reasons as r
from tests.unit.controller.snapshots import (
    GPU,
    NOW,
    conditions_of,
    decide_and_build,
    deployment,
    hpa,
    plan_on,
    pod,
    run_planner,
    serving,
    stamp,
)

Obj = dict[str, Any]
# The real scheduler's words for a pod whose claim needs the device a pod of higher (or equal)
# priority holds, on kube-scheduler v1.37.2 (test_dra_preemption): preemption does not help.
REFUSED = (
    "0/9 nodes are available: 1 cannot allocate all claims, 8 node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/9 nodes are available: 9 Preemption is not helpful for scheduling."
)
VICTIM = "support-llm-6f7d9-abcde"  # serving()'s running pod


def preempted(p: Obj, *, at: float = NOW - 5) -> Obj:
    """The pod as the scheduler leaves it: DisruptionTarget, then deleted (terminating)."""
    out = {**p, "metadata": {**p["metadata"], "deletionTimestamp": stamp(at)}}
    status = dict(p["status"])
    status["conditions"] = [
        *status.get("conditions", []),
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod",
            "lastTransitionTime": stamp(at),
        },
    ]
    out["status"] = status
    return out


def judged(pods: tuple[Obj, ...], **changes: Any) -> tuple[Any, Any]:
    plan = plan_on(GPU)
    s = serving(plan, deployment=deployment(plan, available=0), pods=pods, **changes)
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    return intents, st


@pytest.mark.parametrize("still_terminating", [False, True], ids=["pod-gone", "pod-terminating"])
def test_the_only_replica_preempted_is_not_ready(still_terminating: bool) -> None:
    plan = plan_on(GPU)
    victim = preempted(serving(plan).pods[0])
    intents, st = judged((victim,) if still_terminating else ())
    c = conditions_of(st)
    assert c[r.WORKLOAD_READY] == ("False", r.PROGRESSING)
    assert c[r.READY] == ("False", r.PROGRESSING), "the probe's last success must not make it Ready"
    assert st.phase != "Ready"
    assert intents.probe is None, "no probe of an endpoint that has no replica"
    assert c[r.PLANNED] == ("True", r.PLANNED_OK), "the plan stays: its place is only taken for now"


def test_the_only_replica_preempted_and_its_new_pod_refused_is_unschedulable() -> None:
    plan = plan_on(GPU)
    victim = preempted(serving(plan).pods[0])
    new = pod("support-llm-6f7d9-fghij", plan, unschedulable=REFUSED, since=NOW - 3)
    intents, st = judged((victim, new))
    c = conditions_of(st)
    assert c[r.WORKLOAD_READY] == ("False", r.UNSCHEDULABLE)
    assert c[r.READY] == ("False", r.UNSCHEDULABLE)
    message = intents.verdicts[r.WORKLOAD_READY].message
    assert "support-llm-6f7d9-fghij" in message and "cannot allocate all claims" in message
    assert not message.startswith(f"Pod {VICTIM}"), "a terminating pod is not the one waiting"
    assert st.phase != "Ready"


def test_one_replica_of_two_preempted_serves_on_the_other_and_is_degraded_past_the_grace() -> None:
    plan = plan_on(GPU)
    base = serving(plan)
    survivor = pod("support-llm-6f7d9-zzzzz", plan, running=True)
    victim = preempted(base.pods[0], at=NOW - 600)
    new = pod("support-llm-6f7d9-fghij", plan, unschedulable=REFUSED, since=NOW - 600)
    s = serving(
        plan,
        hpa=hpa(2),
        deployment=deployment(plan, available=1, replicas=2),
        pods=(survivor, victim, new),
    )
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    c = conditions_of(st)
    assert c[r.WORKLOAD_READY] == ("True", r.AVAILABLE)
    assert c[r.READY] == ("True", r.SERVING)
    assert c[r.SCALING_HEALTHY] == ("False", r.SCALE_UP_BLOCKED)
    assert "cannot allocate all claims" in intents.verdicts[r.SCALING_HEALTHY].message
    assert st.phase == "Degraded"


# ------------------------------------------------------------------ with patches/0001 applied


def test_the_message_says_the_replica_was_preempted() -> None:
    plan = plan_on(GPU)
    victim = preempted(serving(plan).pods[0])
    intents, _ = judged((victim,))
    assert f"Pod {VICTIM} was preempted by the scheduler" in intents.verdicts[r.WORKLOAD_READY].message
    new = pod("support-llm-6f7d9-fghij", plan, unschedulable=REFUSED, since=NOW - 3)
    intents, _ = judged((victim, new))
    message = intents.verdicts[r.WORKLOAD_READY].message
    assert message.startswith("Pod support-llm-6f7d9-fghij cannot be scheduled")
    assert f"Pod {VICTIM} was preempted" in message


def test_a_deployment_that_still_counts_the_preempted_replica_is_not_believed() -> None:
    """The pod event comes before the Deployment controller's count (70 ms on an idle plane,
    test_dra_preemption; longer on a busy one): while every pod the caches hold is leaving, the
    order is not Ready even though the Deployment still says 1 available."""
    plan = plan_on(GPU)
    victim = preempted(serving(plan).pods[0])
    s = serving(plan, deployment=deployment(plan, available=1), pods=(victim,))
    _intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    c = conditions_of(st)
    assert c[r.WORKLOAD_READY] == ("False", r.PROGRESSING)
    assert c[r.READY] == ("False", r.PROGRESSING)
    # a rolling update: the old pod leaves while the new one serves: Available
    s = serving(plan, deployment=deployment(plan, available=1), pods=(victim, pod("new", plan, running=True)))
    _, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.READY] == ("True", r.SERVING)
