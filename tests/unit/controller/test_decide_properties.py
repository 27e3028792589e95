"""A property of the pure decision code (load issue, "no reason outlives its cause"):

whatever the order's status said before (any reason on any condition, any record of tried device
classes, replans and generations), when the Deployment has an available replica of the plan in
force, its pods run and the probe passes, the status built from the decision is Ready=True and
the phase is Ready (or Degraded, when a scale-up is blocked), and the status names the endpoint.

The whole pure path runs: ``plan_decision``, a planner answer where the reconciler would ask the
ledger (any answer: a plan, or any refusal), ``decide`` and ``build_status``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.planning import plan_decision
from controller.snapshot import Capacity, ModelObservation, Planning, ProbeState
from shared import reasons as r
from shared.api.order import InferenceServiceStatus, Resolved
from shared.conditions import false
from tests.unit.controller.snapshots import (
    CLAIMS_FAIL,
    GPU,
    MIG,
    NO_CPU,
    NOW,
    URL,
    conditions_of,
    decide_and_build,
    deployment,
    failed,
    hpa,
    klass,
    ok,
    order_with,
    plan_on,
    pod,
    resolved_model,
    serving,
    status,
)

ALL_REASONS = sorted(
    {v for k, v in vars(r).items() if k.isupper() and isinstance(v, str) and k not in ("CHAIN",)}
    - set(r.ALL_CONDITIONS)
)
PLAN_REASONS = [
    r.NO_CAPACITY,
    r.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
    r.QUANTIZATION_MISMATCH,
    r.NO_COMPATIBLE_RUNTIME_AVAILABLE,
    r.RESOURCE_CLAIM_EXHAUSTED,
    r.PLACEMENT_UNDECIDABLE,
]
MODEL_FAILURES = [
    r.MODEL_NOT_FOUND,
    r.MODEL_NOT_READY,
    r.MODEL_ACCESS_DENIED,
    r.AUTH_SECRET_NOT_FOUND,
    r.MODEL_SOURCE_UNAVAILABLE,
    r.ENDPOINT_TYPE_POLICY_CONFLICT,
    r.FORMAT_NOT_ALLOWED,
    r.PARAMETER_COUNT_NOT_ALLOWED,
    r.CATALOG_DISABLED,
]

# Planned before hypothesis starts: celpy raises the recursion limit when shared.cel first builds an
# environment, and hypothesis warns (an error here) when it sees the limit change during a test.
PLANS = {GPU: plan_on(GPU), MIG: plan_on(MIG)}

prior_conditions = st.dictionaries(
    st.sampled_from(r.ALL_CONDITIONS),
    st.tuples(st.sampled_from(["True", "False", "Unknown"]), st.sampled_from(ALL_REASONS)),
)
tried = st.lists(st.sampled_from([GPU, MIG]), unique=True, max_size=2)


@st.composite
def prior_resolved(draw: st.DrawFn) -> Resolved | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None  # status lost, or never written
    return Resolved.model_validate(
        {
            "device_class": draw(st.sampled_from([GPU, MIG, None])),
            "order_generation": draw(st.sampled_from([1, 2, None])),
            "class_generation": draw(st.sampled_from([1, 2])),
            "tried_device_classes": draw(tried) or None,
            "replan_count": draw(st.integers(0, 5)),
        }
    )


@st.composite
def prior_status(draw: st.DrawFn) -> InferenceServiceStatus:
    return status(draw(prior_conditions), resolved=draw(prior_resolved()))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prior=prior_status(),
    device_class=st.sampled_from([GPU, MIG]),
    generation=st.sampled_from([1, 2]),
    class_generation=st.sampled_from([1, 2]),
    exhausted_since=st.sampled_from([None, 3, 5]),
    model_failure=st.sampled_from([None, None, *MODEL_FAILURES]),
    class_deleted=st.booleans(),
    answer=st.sampled_from(["same", "other", *PLAN_REASONS]),
    probe_failures=st.integers(0, 5),
    scale_up=st.sampled_from([None, CLAIMS_FAIL, NO_CPU]),
    stale_deployment_condition=st.sampled_from([None, "ProgressDeadlineExceeded", "ReplicaFailure"]),
    old_pod=st.booleans(),
    endpoint_lost=st.booleans(),
)
def test_an_order_whose_pods_run_and_whose_probe_passes_is_ready(
    prior: InferenceServiceStatus,
    device_class: str,
    generation: int,
    class_generation: int,
    exhausted_since: int | None,
    model_failure: str | None,
    class_deleted: bool,
    answer: str,
    probe_failures: int,
    scale_up: str | None,
    stale_deployment_condition: str | None,
    old_pod: bool,
    endpoint_lost: bool,
) -> None:
    plan = PLANS[device_class]
    other = PLANS[MIG if device_class == GPU else GPU]
    pods: list[dict[str, Any]] = [pod("support-llm-6f7d9-abcde", plan, running=True)]
    dep_conditions: list[dict[str, Any]] = []
    replicas = 1
    hpa_obj = None
    if scale_up is not None:  # the autoscaler wants one more replica, which cannot be placed
        replicas = 2
        hpa_obj = hpa(2)
        pods.append(pod("support-llm-6f7d9-fghij", plan, unschedulable=scale_up, since=NOW - 900))
    if old_pod:  # a pod of the previous plan, stuck on its claim, still terminating or not
        pods.append(pod("support-llm-11111-zzzzz", other, unschedulable=CLAIMS_FAIL, since=NOW - 3600))
    if stale_deployment_condition == "ProgressDeadlineExceeded":
        dep_conditions.append(
            {
                "type": "Progressing",
                "status": "False",
                "reason": "ProgressDeadlineExceeded",
                "message": 'ReplicaSet "support-llm-6f7d9" has timed out progressing.',
            }
        )
    elif stale_deployment_condition == "ReplicaFailure":
        dep_conditions.append(
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "FailedCreate",
                "message": 'pods "support-llm-6f7d9-x" is forbidden: exceeded quota: gpu-pods',
            }
        )
    model = (
        resolved_model()
        if model_failure is None
        else ModelObservation(false(model_failure, f"the model: {model_failure}"))
    )
    cls = klass(metadata={"generation": class_generation})
    if endpoint_lost and not class_deleted:
        # A status restored without its fields. (With the class gone too, nothing says where the
        # endpoint is, and Ready cannot be probed: that pair is left out.)
        prior = prior.model_copy(update={"endpoint": None})
    s = serving(
        plan,
        prior=prior,
        order=order_with(prior, metadata={"generation": generation}),
        klass=None if class_deleted else cls,
        model=None if class_deleted else model,
        deployment=deployment(plan, available=1, replicas=replicas, conditions=dep_conditions),
        hpa=hpa_obj,
        pods=tuple(pods),
        probe=ProbeState(ok=True, detail="200 OK", failures=probe_failures, at=NOW - 1),
        capacity=Capacity(epoch=5, exhausted_since=exhausted_since),
    )

    planning = Planning()
    if s.klass is not None and s.model is not None and s.model.verdict.ok:
        d = plan_decision(s)
        if d.compute:
            outcome = {"same": ok(plan), "other": ok(other)}.get(answer) or failed(answer, "refused")
            planning = Planning(outcome=outcome, trigger=d.trigger, count=d.count, tried=d.tried)
        else:
            planning = Planning(trigger=d.trigger, tried=d.tried)

    intents, built = decide_and_build(s, planning)
    c = conditions_of(built)
    assert c[r.READY][0] == "True", (c, intents.verdicts)
    assert built.phase in ("Ready", "Degraded"), c
    assert c[r.WORKLOAD_READY] == ("True", r.AVAILABLE), c
    assert built.endpoint is not None and built.endpoint.url == URL
