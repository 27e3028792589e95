"""Scale to zero in the controller: the at-zero and waking verdicts, no probe at zero, the activator's
EndpointSlice while no replica is ready, the Events, and KEDA's ScaledObject for a class with
``minReplicas: 0``. Pure: snapshots in, intents out."""

from __future__ import annotations

from typing import Any

import pytest

from controller import booking, desired, render
from controller.decide import decide
from controller.live import zero
from controller.planning import plan_decision
from controller.render.group import group_count
from controller.render.network import ActivatorTarget, activity_query
from controller.snapshot import ProbeState, Snapshot
from shared import names
from shared import reasons as r
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.snapshots import (
    CLAIMS_FAIL,
    GPU,
    NOW,
    READY_STATUS,
    SETTINGS,
    built,
    condition,
    conditions_of,
    deployment,
    klass,
    plan_on,
    pod,
    resolved_for,
    run_planner,
    serving,
    status,
)

ACTIVATOR = ActivatorTarget(("10.0.3.4", "10.0.3.5"), 8443)
ZERO_CLASS = klass(
    spec={
        "placement": {"deviceClassNames": [GPU], "sharingModes": ["Exclusive"]},
        "scaling": {"minReplicas": 0, "maxReplicas": 2, "scaleToZeroAfterSeconds": 300},
    }
)


@pytest.fixture(autouse=True)
def _fresh_memo() -> None:
    desired.clear()


def _prior(workload_reason: str = r.AVAILABLE, message: str = "") -> Any:
    plan = plan_on(GPU)
    st = status(READY_STATUS, resolved=resolved_for(plan))
    conds = [
        c
        if c.type != r.WORKLOAD_READY
        else condition(r.WORKLOAD_READY, "True", workload_reason, message or f"said {workload_reason}")
        for c in st.conditions or []
    ]
    return st.model_copy(update={"conditions": conds})


def at_zero(**changes: Any) -> Snapshot:
    """An order of the zero class that has served, now with its Deployment at 0 replicas."""
    plan = plan_on(GPU)
    prior = changes.pop("prior", None) or _prior()
    base: dict[str, Any] = {
        "klass": ZERO_CLASS,
        "deployment": deployment(plan, available=0, replicas=0),
        "pods": (),
        "claims_allocated": False,
        "activator": ACTIVATOR,
    }
    base.update(changes)
    return serving(plan, prior=prior, **base)


def _decide(s: Snapshot) -> Any:
    return decide(s, run_planner(s, plan_decision(s)))


def _slices(objs: Any) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == "EndpointSlice"]


def test_an_order_at_zero_is_ready_scaled_to_zero_and_is_not_probed() -> None:
    s = at_zero()
    intents = _decide(s)
    st = built(s, intents)
    conds = conditions_of(st)
    assert conds[r.WORKLOAD_READY] == ("True", r.SCALED_TO_ZERO)
    assert conds[r.READY] == ("True", r.SCALED_TO_ZERO)
    assert conds[r.SCALING_HEALTHY] == ("True", r.SCALING_HEALTHY_OK)
    assert st.phase == "Ready"
    assert intents.probe is None  # a probe through the Service would reach the activator and wake it
    message = next(c.message for c in st.conditions or [] if c.type == r.WORKLOAD_READY)
    assert message.startswith(zero.AT_ZERO) and "300s" in message


def test_an_order_at_zero_points_its_service_at_the_activator() -> None:
    intents = _decide(at_zero())
    (slice_,) = _slices(intents.apply)
    assert slice_["metadata"]["name"] == names.activator_slice("support-llm")
    labels = slice_["metadata"]["labels"]
    assert labels[names.SERVICE_NAME_LABEL] == "support-llm"
    assert labels[names.SLICE_MANAGER_LABEL] == names.ACTIVATOR_SLICE_MANAGER
    assert labels[names.LABEL_ORDER] == "support-llm"
    assert slice_["ports"] == [{"name": "https", "port": 8443, "protocol": "TCP"}]
    assert [e["addresses"] for e in slice_["endpoints"]] == [["10.0.3.4"], ["10.0.3.5"]]


def test_without_a_ready_activator_the_order_at_zero_is_not_ready() -> None:
    s = at_zero(activator=None)
    intents = _decide(s)
    conds = conditions_of(built(s, intents))
    assert conds[r.READY] == ("False", r.ACTIVATOR_UNAVAILABLE)
    assert not _slices(intents.apply)
    assert intents.probe is None


def test_a_warm_order_drops_the_activator_slice_and_is_probed() -> None:
    plan = plan_on(GPU)
    live = render.activator_slice(make_order(), ACTIVATOR)
    s = serving(plan, klass=ZERO_CLASS, activator=ACTIVATOR, owned=(live,), probe=ProbeState())
    intents = _decide(s)
    assert not _slices(intents.apply)
    assert [(d.kind, d.name) for d in intents.delete if d.kind == "EndpointSlice"] == [
        ("EndpointSlice", "support-llm-activator")
    ]
    assert intents.probe is not None


def test_waking_reads_scaled_to_zero_with_an_event_and_no_probe() -> None:
    plan = plan_on(GPU)
    prior = _prior(r.SCALED_TO_ZERO, f"{zero.AT_ZERO}: idle.")
    s = at_zero(
        prior=prior,
        deployment=deployment(plan, available=0, replicas=1),
        pods=(pod("support-llm-6f7d9-new01", plan),),
    )
    intents = _decide(s)
    st = built(s, intents)
    assert conditions_of(st)[r.WORKLOAD_READY] == ("True", r.SCALED_TO_ZERO)
    message = next(c.message for c in st.conditions or [] if c.type == r.WORKLOAD_READY)
    assert message.startswith(zero.WAKING)
    assert [e[1] for e in intents.events] == ["Waking"]
    assert intents.probe is None
    assert _slices(intents.apply)  # held requests wait at the activator until the replica is ready


def test_a_wake_that_cannot_be_scheduled_is_reported_as_it_is() -> None:
    plan = plan_on(GPU)
    s = at_zero(
        prior=_prior(r.SCALED_TO_ZERO, f"{zero.AT_ZERO}: idle."),
        deployment=deployment(plan, available=0, replicas=1),
        pods=(pod("support-llm-6f7d9-new01", plan, unschedulable=CLAIMS_FAIL, since=NOW - 5),),
    )
    conds = conditions_of(built(s, _decide(s)))
    assert conds[r.WORKLOAD_READY] == ("False", r.UNSCHEDULABLE)


def test_a_new_order_is_never_scaled_to_zero_before_it_served() -> None:
    plan = plan_on(GPU)
    never = status(
        {k: v for k, v in READY_STATUS.items() if k not in (r.WORKLOAD_READY, r.READY)},
        resolved=resolved_for(plan),
    )
    s = at_zero(prior=never)
    conds = conditions_of(built(s, _decide(s)))
    assert conds[r.WORKLOAD_READY] == ("False", r.PROGRESSING)


def test_a_class_that_keeps_a_replica_never_reads_scaled_to_zero() -> None:
    one = klass(spec={"placement": {"deviceClassNames": [GPU], "sharingModes": ["Exclusive"]}})
    s = at_zero(klass=one)
    intents = _decide(s)
    assert conditions_of(built(s, intents))[r.WORKLOAD_READY] == ("False", r.PROGRESSING)
    assert not _slices(intents.apply)


def test_back_from_zero_the_order_records_that_it_woke() -> None:
    plan = plan_on(GPU)
    s = serving(
        plan, prior=_prior(r.SCALED_TO_ZERO, f"{zero.WAKING}: 1 replica(s) starting."), klass=ZERO_CLASS
    )
    intents = _decide(s)
    assert "Woke" in [e[1] for e in intents.events]
    assert conditions_of(built(s, intents))[r.WORKLOAD_READY] == ("True", r.AVAILABLE)


def test_an_order_at_zero_gives_its_reservation_back() -> None:
    calls: list[str] = []

    class Ledger:
        def release(self, key: object) -> None:
            calls.append("release")

        def settle(self, key: object) -> None:
            calls.append("settle")

        def mark_exhausted(self, key: object) -> None:
            calls.append("exhausted")

        def clear_exhausted(self, key: object) -> None:
            calls.append("clear")

    class Done:
        applied = True

    s = at_zero()
    intents = _decide(s)
    booking.after_act(Ledger(), s, run_planner(s, plan_decision(s)), intents, Done())  # type: ignore[arg-type]
    assert "release" in calls
    calls.clear()
    warm = serving(plan_on(GPU), klass=ZERO_CLASS, claims_allocated=False)
    booking.after_act(Ledger(), warm, run_planner(warm, plan_decision(warm)), _decide(warm), Done())  # type: ignore[arg-type]
    assert "release" not in calls


# ------------------------------------------------------------------ activator addresses


def _slice(
    addresses: list[str], *, ready: bool | None = True, port: int = 8443, name: str = "a"
) -> dict[str, Any]:
    conditions = {} if ready is None else {"ready": ready}
    return {
        "metadata": {"name": name},
        "addressType": "IPv4",
        "ports": [{"name": "metrics", "port": 9090}, {"name": "https", "port": port}],
        "endpoints": [{"addresses": [a], "conditions": conditions} for a in addresses],
    }


def test_the_activator_target_is_its_ready_https_endpoints() -> None:
    target = zero.activator_target(
        [
            _slice(["10.0.0.2", "10.0.0.1"]),
            _slice(["10.0.0.9"], ready=False, name="b"),
            _slice(["10.0.0.3"], ready=None, name="c"),
        ]
    )
    assert target == ActivatorTarget(("10.0.0.1", "10.0.0.2", "10.0.0.3"), 8443, "IPv4")


@pytest.mark.parametrize(
    "slices",
    [
        pytest.param([], id="no slice"),
        pytest.param([_slice(["10.0.0.1"], ready=False)], id="nothing ready"),
        pytest.param(
            [{**_slice(["10.0.0.1"]), "ports": [{"name": "metrics", "port": 9090}]}], id="no https port"
        ),
        pytest.param([_slice(["10.0.0.1"], port=70000)], id="a port out of range"),
        pytest.param([{**_slice(["10.0.0.1"]), "addressType": "FQDN"}], id="FQDN"),
    ],
)
def test_no_activator_target_without_a_ready_https_endpoint(slices: list[dict[str, Any]]) -> None:
    assert zero.activator_target(slices) is None


def test_the_activator_target_is_bounded() -> None:
    many = _slice([f"10.0.{i // 250}.{i % 250}" for i in range(500)])
    target = zero.activator_target([many])
    assert target is not None and len(target.addresses) == zero.MAX_ACTIVATOR_ADDRESSES


# ------------------------------------------------------------------ KEDA


def _scaled_object(scaling: dict[str, Any]) -> dict[str, Any]:
    spec = make_class(spec={"scaling": scaling}).spec
    return render.autoscaler(make_order(), spec, SETTINGS)


def test_a_class_with_min_zero_lets_keda_take_the_order_to_zero_after_its_idle_time() -> None:
    body = _scaled_object({"minReplicas": 0, "maxReplicas": 3, "scaleToZeroAfterSeconds": 120})["spec"]
    assert (body["minReplicaCount"], body["maxReplicaCount"]) == (0, 3)
    assert body["cooldownPeriod"] == body["initialCooldownPeriod"] == 120
    main, activity = body["triggers"]
    assert "num_requests_waiting" in main["metadata"]["query"]
    assert activity["metadata"]["activationThreshold"] == "0"
    query = activity["metadata"]["query"]
    ns = make_order().metadata.namespace
    assert f'inference_activator_requests_held{{namespace="{ns}",order="support-llm"}}' in query
    assert query.count("or vector(0)") == 4
    assert "vllm:request_success_total" in query


def test_the_default_idle_time_is_600_seconds() -> None:
    body = _scaled_object({"minReplicas": 0, "maxReplicas": None})["spec"]
    assert body["cooldownPeriod"] == 600
    assert body["maxReplicaCount"] == 1  # maxReplicas defaults to minReplicas, and is at least 1


def test_a_class_that_keeps_a_replica_has_no_activity_trigger() -> None:
    body = _scaled_object({"minReplicas": 1, "maxReplicas": 2})["spec"]
    assert body["minReplicaCount"] == 1
    assert len(body["triggers"]) == 1
    assert "cooldownPeriod" not in body


def test_the_activity_query_refuses_names_that_are_not_dns_labels() -> None:
    with pytest.raises(ValueError, match="not a DNS label"):
        activity_query('a"}', "x")
    assert 'namespace="team-a",order="llm"' in activity_query("team-a", "llm")


def test_a_multi_node_plan_of_a_zero_class_runs_one_group() -> None:
    spec = make_class(spec={"scaling": {"minReplicas": 0}}).spec
    assert group_count(spec) == 1


def _applied_scaled_object(s: Snapshot) -> dict[str, Any]:
    (so,) = [o for o in _decide(s).apply if o["kind"] == "ScaledObject"]
    return dict(so)


def test_a_new_order_is_kept_at_one_replica_until_it_has_served() -> None:
    """A runtime publishes nothing while it loads: KEDA would stop a new order before it ever served."""
    plan = plan_on(GPU)
    never = status(
        {k: v for k, v in READY_STATUS.items() if k not in (r.WORKLOAD_READY, r.READY)},
        resolved=resolved_for(plan),
    )
    starting = at_zero(prior=never, deployment=deployment(plan, available=0, replicas=1))
    assert _applied_scaled_object(starting)["spec"]["minReplicaCount"] == 1
    desired.clear()
    assert _applied_scaled_object(at_zero())["spec"]["minReplicaCount"] == 0


def test_the_activator_slice_is_written_as_soon_as_keda_decides_zero() -> None:
    """The last pod still serves while it stops: the slice is there first, so no moment lacks an
    endpoint (the activator forwards to the ready pod meanwhile)."""
    plan = plan_on(GPU)
    s = at_zero(
        deployment=deployment(plan, available=1, replicas=0),
        pods=(pod("support-llm-6f7d9-abcde", plan, running=True),),
    )
    assert _slices(_decide(s).apply)
    warm = at_zero(
        deployment=deployment(plan, available=1, replicas=1),
        pods=(pod("support-llm-6f7d9-abcde", plan, running=True),),
    )
    desired.clear()
    assert not _slices(_decide(warm).apply)
